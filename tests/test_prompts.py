"""Prompts are data in one module, and generic: no task, fixture or benchmark is named."""

from __future__ import annotations

import json
from collections.abc import Mapping

from sandbox_agent import prompts
from sandbox_agent.controller.parse import parse_turn
from sandbox_agent.settings import PROJECT_ROOT
from sandbox_agent.tools.contracts import TOOL_NAMES


def _texts() -> dict[str, str]:
    """Every text of the module: its upper-case strings, and the strings of its
    upper-case mappings (``TOOLS_PURPOSES``, ``TOOLS_EXAMPLES``) by ``NAME[key]``."""
    found: dict[str, str] = {}
    for name, value in vars(prompts).items():
        if not name.isupper():
            continue
        if isinstance(value, str):
            found[name] = value
        elif isinstance(value, Mapping):
            found |= {f"{name}[{key}]": text for key, text in value.items()}
    return found


def _names_that_must_not_appear() -> set[str]:
    names = {"humanevalfix", "humaneval", "realrepos", "swe-bench", "benchmark"}
    for folder in (PROJECT_ROOT / "fixtures", PROJECT_ROOT / "evals" / "fixtures"):
        names |= {path.name.lower() for path in folder.iterdir() if path.is_dir()}
    tasks = json.loads((PROJECT_ROOT / "evals" / "tasks.json").read_text())
    names |= {task["id"].lower() for task in tasks["tasks"]}
    suite = json.loads((PROJECT_ROOT / "evals" / "realrepos" / "tasks.json").read_text())
    names |= {project["name"].lower() for project in suite["projects"]}
    return {name for name in names if len(name) > 3}


def test_every_prompt_is_in_the_prompts_module_and_names_no_task() -> None:
    texts = _texts()
    assert {"REPAIR_SYSTEM", "REPAIR_TASK", "ANSWER_SYSTEM"} <= set(texts)
    tools_strategy = {
        "TOOLS_SYSTEM",
        "TOOLS_TASK",
        "TOOLS_READ_ONLY",
        "TOOLS_READ",
        "TOOLS_TESTS_FAILED",
        "TOOLS_REFUSED",
        "TOOLS_REPEATED",
        "TOOLS_FINISH_HELD",
        "TOOLS_NOT_JSON",
        "TOOLS_CUT_OFF",
        "TOOLS_ELIDED",
    }
    assert tools_strategy <= set(texts)
    assert {f"TOOLS_PURPOSES[{name}]" for name in TOOL_NAMES} <= set(texts)
    assert {f"TOOLS_EXAMPLES[{name}]" for name in TOOL_NAMES} <= set(texts)
    forbidden = _names_that_must_not_appear()
    for name, text in texts.items():
        lowered = text.lower()
        assert not [word for word in forbidden if word in lowered], name


def test_templates_fill_with_their_fields_only() -> None:
    filled = prompts.REPAIR_TASK.format(
        task="t", failure="f", tests="", targets="x", editable="e.py", what="function `g`", only=""
    )
    assert "{" not in filled.replace("{}", "")
    assert prompts.what_to_write(["a", "b", "a"]) == "functions `a` and `b`"


def test_several_functions_shown_are_asked_for_only_as_changed() -> None:
    # a model shown three functions wrote all three back, two unchanged, or all unchanged
    assert prompts.only_changed(["a", "a"]) == ""
    assert prompts.only_changed(["a", "B.c"]) == prompts.REPAIR_ONLY_CHANGED
    assert "only those you change" in prompts.REPAIR_ONLY_CHANGED


def test_each_tool_example_is_a_valid_call_of_its_tool() -> None:
    for name in TOOL_NAMES:
        call = parse_turn(prompts.TOOLS_EXAMPLES[name], frozenset(TOOL_NAMES))
        assert call.tool == name


def test_the_tools_templates_fill_with_their_fields_only() -> None:
    filled = [
        prompts.TOOLS_TASK.format(task="t", files="a.py", cut="", read_only=""),
        prompts.TOOLS_NOT_JSON.format(example="{}"),
        prompts.TOOLS_REPEATED.format(turn=1, gist="g"),
        prompts.TOOLS_FINISH_HELD.format(counts="1 ran, 1 failed", output=""),
        prompts.TOOLS_READ.format(path="a.py", start=1, end=2, total=2, more="", lines="x"),
    ]
    assert filled[1].startswith("Your reply is not one JSON object. Reply with exactly one")
    assert '{"tool": NAME, "args": {...}}' in filled[1]
    for text in filled:
        assert "{" not in text.replace("{}", "").replace('{"tool"', "").replace("{...}", "")
