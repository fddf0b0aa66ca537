"""Prompts are data in one module, and generic: no task, fixture or benchmark is named."""

from __future__ import annotations

import json

from sandbox_agent import prompts
from sandbox_agent.settings import PROJECT_ROOT


def _texts() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(prompts).items()
        if name.isupper() and isinstance(value, str)
    }


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
    forbidden = _names_that_must_not_appear()
    for name, text in texts.items():
        lowered = text.lower()
        assert not [word for word in forbidden if word in lowered], name


def test_templates_fill_with_their_fields_only() -> None:
    filled = prompts.REPAIR_TASK.format(
        task="t", failure="f", tests="", targets="x", editable="e.py", what="function `g`"
    )
    assert "{" not in filled.replace("{}", "")
    assert prompts.what_to_write(["a", "b", "a"]) == "functions `a` and `b`"
