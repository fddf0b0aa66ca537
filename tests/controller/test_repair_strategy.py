"""The ``repair`` strategy with a scripted model (exact candidates) against the shipped
FakeBackend: what it shows, what it tries, what it keeps, what it records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.controller import RunConfig, RunResult, run_task
from sandbox_agent.controller.models import Budgets, RepairOptions
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.sandbox.base import SandboxResult
from sandbox_agent.sandbox.fake import FakeBackend, completed
from sandbox_agent.trace import read_chain

SOLUTION = 'def add(a, b):\n    """Add two numbers."""\n    return a - b\n'
TESTS = (
    "import unittest\n\nfrom solution import add\n\n\n"
    "def check(candidate):\n    assert candidate(2, 3) == 5\n\n\n"
    "class ExampleTests(unittest.TestCase):\n    def test_examples(self):\n        check(add)\n"
)
OUTPUT = b"""\
F
======================================================================
FAIL: test_examples (test_examples.ExampleTests.test_examples)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/workspace/test_examples.py", line 12, in test_examples
    check(add)
  File "/workspace/test_examples.py", line 7, in check
    assert candidate(2, 3) == 5
AssertionError: assert candidate(2, 3) == 5: left is -1, right is 5

----------------------------------------------------------------------
Ran 1 test in 0.001s

FAILED (failures=1)
"""
FAILING = completed(exit_code=1, tests_run=1, failures=1, output=OUTPUT)
PASSING = completed(exit_code=0, tests_run=1)
FIXED = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a * b\n```"


def _repo(tmp_path: Path, solution: str = SOLUTION) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "solution.py").write_text(solution)
    (repo / "test_examples.py").write_text(TESTS)
    return repo


def run(
    tmp_path: Path,
    replies: list[str],
    results: list[SandboxResult],
    *,
    repair: RepairOptions | None = None,
    budgets: Budgets | None = None,
    **config: Any,
) -> tuple[RunResult, FakeBackend]:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"raw": reply} for reply in replies]}))
    backend = FakeBackend(results)
    result = run_task(
        RunConfig(
            task="Fix the bug in add.",
            repo=config.pop("repo", None) or _repo(tmp_path),
            provider="scripted",
            provider_options=PlanOptions(plan_path=str(plan)),
            strategy="repair",
            repair=repair or RepairOptions(),
            budgets=budgets or Budgets(),
            trace_dir=tmp_path / "runs",
            prestart=0,
            **config,
        ),
        sandbox=backend,
    )
    return result, backend


def test_the_first_candidate_that_passes_is_kept(tmp_path: Path) -> None:
    replies = ["The bug is in add.", "```python\ndef add(a, b)\n```", WRONG, FIXED]
    result, backend = run(tmp_path, replies, [FAILING, FAILING, PASSING])
    assert result.status == "SUCCEEDED", result.reason
    assert result.strategy == "repair"
    assert [c.outcome for c in result.candidates] == ["refused", "refused", "failed", "passed"]
    assert [c.refusal for c in result.candidates] == ["no_code", "syntax", None, None]
    assert [(c.temperature, c.seed) for c in result.candidates] == [
        (0.0, 1234),
        (0.8, 1236),
        (0.8, 1237),
        (0.8, 1238),
    ]
    assert "+    return a + b" in result.diff
    assert result.files_changed == ["solution.py"]
    assert [c.tool for c in result.tool_calls] == [
        "run_tests",
        "read_file",
        "read_file",
        "apply_patch",
        "run_tests",
        "apply_patch",
        "run_tests",
    ]
    assert result.budget_used.invalid_outputs == 2
    assert result.budget_used.iterations == 4
    assert len(backend.requests) == 3  # the final verdict reused the passing run
    events = [e["event"] for e in read_chain(Path(result.trace_path))]
    assert events.count("candidate") == 4


def test_what_the_model_is_shown(tmp_path: Path) -> None:
    from sandbox_agent.controller.repair_loop import repair_prompt
    from sandbox_agent.repair.failures import frames
    from sandbox_agent.repair.localise import localise

    files = {"solution.py": SOLUTION, "test_examples.py": TESTS}
    output = OUTPUT.decode()
    context = localise(frames(output), files.get, lambda path: path.startswith("test"))
    shown = repair_prompt("Fix the bug in add.", output, context)
    assert shown.startswith("Task: Fix the bug in add.")
    assert "left is -1, right is 5" in shown
    assert "# solution.py, lines 1-3\ndef add(a, b):" in shown
    assert "# test_examples.py, lines 6-7 (read-only)" in shown
    assert "You may edit: solution.py." in shown
    assert shown.rstrip().endswith("function `add` in one ```python code block.")


def test_repair_rounds_show_the_best_failure_and_nothing_passing_keeps_the_best_tree(
    tmp_path: Path,
) -> None:
    better = completed(exit_code=1, tests_run=4, failures=1, output=OUTPUT)
    worse = completed(exit_code=1, tests_run=4, failures=3, output=OUTPUT)
    baseline = completed(exit_code=1, tests_run=4, failures=2, output=OUTPUT)
    replies = [WRONG, "```python\ndef add(a, b):\n    return b\n```"]
    result, backend = run(
        tmp_path,
        replies,
        [baseline, better, worse, better],
        repair=RepairOptions(candidates=2, rounds=0),
    )
    assert result.status == "FAILED"
    assert [c.outcome for c in result.candidates] == ["failed", "failed"]
    assert "+    return a * b" in result.diff  # the better one, not the last one
    assert "kept candidate 1" in (result.model_summary or "")
    assert len(backend.requests) == 4  # the best tree was tested again, as the final run


def test_a_round_replays_the_best_candidate_with_its_failure(tmp_path: Path) -> None:
    result, _ = run(
        tmp_path,
        [WRONG, FIXED],
        [FAILING, FAILING, PASSING],
        repair=RepairOptions(candidates=1, rounds=1, round_candidates=1),
    )
    assert result.status == "SUCCEEDED"
    assert [(c.round, c.outcome) for c in result.candidates] == [(0, "failed"), (1, "passed")]
    turns = [e for e in read_chain(Path(result.trace_path)) if e["event"] == "model_turn"]
    # a round's candidates are sampled: shown its own failing reply, greedy wrote it again
    assert [(t["sampling"]["temperature"], t["sampling"]["seed"]) for t in turns] == [
        (0.0, 1234),
        (0.8, 1236),
    ]


def test_the_same_code_twice_is_not_tested_twice(tmp_path: Path) -> None:
    result, backend = run(
        tmp_path, [WRONG, WRONG, FIXED], [FAILING, FAILING, PASSING],
        repair=RepairOptions(candidates=3),
    )  # fmt: skip
    assert [c.reason for c in result.candidates][1] == "the same code as candidate 1"
    assert [c.repeat_of for c in result.candidates] == [None, 1, None]
    assert len(backend.requests) == 3
    assert result.status == "SUCCEEDED"


def test_invalid_candidates_count_against_their_budget(tmp_path: Path) -> None:
    result, _ = run(
        tmp_path,
        ["no code"] * 5,
        [FAILING, FAILING],
        budgets=Budgets(max_invalid_outputs=1),
    )
    assert result.status == "BUDGET_EXHAUSTED"
    assert result.budget_used.invalid_outputs == 2
    assert result.diff == ""


def test_passing_tests_get_an_answer_and_no_change(tmp_path: Path) -> None:
    result, _backend = run(
        tmp_path,
        ["The repository adds numbers; nothing to fix."],
        [PASSING],
        repo=_repo(tmp_path, "def add(a, b):\n    return a + b\n"),
    )
    assert result.status == "SUCCEEDED"
    assert result.diff == ""
    assert result.candidates == []
    assert result.model_summary == "The repository adds numbers; nothing to fix."
    assert next(c.tool for c in result.tool_calls) == "run_tests"
    assert result.tool_calls[-1].tool == "finish"


def test_a_read_only_task_is_answered_without_running_or_editing(tmp_path: Path) -> None:
    result, _backend = run(
        tmp_path,
        ["It adds."],
        [PASSING],
        allowed_tools=("list_files", "read_file", "search", "finish"),
    )
    assert {c.tool for c in result.tool_calls} <= {"read_file", "finish"}
    assert result.diff == ""
    assert result.model_summary == "It adds."


@pytest.mark.parametrize("provider", ["local", "scripted"])
def test_the_default_strategy_depends_on_the_provider(provider: str) -> None:
    import argparse

    from sandbox_agent.commands.strategy import strategy_for

    expected = "repair" if provider == "local" else "tools"
    assert strategy_for(argparse.Namespace(strategy=None, provider=provider)) == expected
    assert strategy_for(argparse.Namespace(strategy="tools", provider=provider)) == "tools"


def ended(status: str, reason: str, *, started: bool = True) -> SandboxResult:
    """A sandbox run that ended ``status`` with no runner report (attested if started)."""
    return SandboxResult(
        status=status,  # type: ignore[arg-type]
        reason=reason,
        started=started,
        runtime="runc",
        attested=started,
        output=b"",
        cleanup="removed",
    )


def test_tests_that_time_out_are_repaired_from_what_the_test_modules_import(
    tmp_path: Path,
) -> None:
    timed_out = ended("timeout", "the test command ran past 10 s")
    result, _ = run(tmp_path, [FIXED], [timed_out, PASSING])
    assert result.status == "SUCCEEDED", result.reason
    assert [c.outcome for c in result.candidates] == ["passed"]


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("oom_killed", "the workload ran out of memory and was killed"),
        ("output_limit", "the workload's output passed its budget"),
        ("killed", "the workload was killed by signal 11"),
    ],
)
def test_tests_the_bug_makes_run_out_of_a_limit_are_repaired(
    tmp_path: Path, status: str, reason: str
) -> None:
    # HumanEvalFix row 123 (2026-12-04): a loop that never ends but appends filled the
    # memory, and the run stopped before the first model call: "the visible tests did not
    # run to an end". A limit the code under test runs into is its failure, as a timeout is.
    result, _ = run(tmp_path, [FIXED], [ended(status, reason), PASSING])
    assert result.status == "SUCCEEDED", result.reason
    assert [c.outcome for c in result.candidates] == ["passed"]


@pytest.mark.parametrize("status", ["refused", "cancelled"])
def test_visible_tests_the_sandbox_could_not_run_stop_before_the_first_model_call(
    tmp_path: Path, status: str
) -> None:
    unrun = ended(status, "the sandbox could not be verified", started=False)
    result, _ = run(tmp_path, [FIXED], [unrun, unrun])  # the visible run, the final run
    assert result.status != "SUCCEEDED"
    assert result.candidates == []  # no model call: nothing a candidate could be checked by


def test_the_result_names_its_run_folder(tmp_path: Path) -> None:
    result, _ = run(tmp_path, [FIXED], [FAILING, PASSING])
    assert Path(result.run_dir) == Path(result.trace_path).parent
    assert (Path(result.run_dir) / "result.json").is_file()


NO_TEST = completed(exit_code=5, tests_run=0)


def test_visible_tests_that_ran_none_stop_before_the_first_model_call(tmp_path: Path) -> None:
    # A folder of pytest-style functions under unittest runs nothing: before, the strategy
    # localised from the test's imports and spent the whole wall clock on candidates that
    # could never be checked (found as a new user: 300 s, 8 replies, TIMEOUT).
    result, _backend = run(tmp_path, [FIXED, FIXED, FIXED], [NO_TEST, NO_TEST])
    assert result.status == "FAILED"
    assert result.budget_used.iterations == 0
    assert result.candidates == []
    assert result.diff == ""
    assert "no test ran" in result.reason
    assert "--runner pytest" in result.reason


def test_a_repository_allowed_no_tests_gets_an_answer_and_no_change(tmp_path: Path) -> None:
    result, _backend = run(
        tmp_path, ["It adds two numbers."], [NO_TEST, NO_TEST], allow_no_tests=True
    )
    assert result.diff == ""
    assert result.candidates == []
    assert result.model_summary == "It adds two numbers."


PAGINATOR = """\
class Paginator:
    def __init__(self, items, per_page=10):
        self.items = list(items)
        self.per_page = per_page

    @property
    def page_count(self):
        return len(self.items) // self.per_page

    def page(self, number):
        start = (number - 1) * self.per_page
        return self.items[start : start + self.per_page]
"""
PAGINATOR_TESTS = """\
import unittest

from paginator import Paginator


class PaginatorTests(unittest.TestCase):
    def setUp(self):
        self.paginator = Paginator(range(10), per_page=3)

    def test_page_count(self):
        self.assertEqual(self.paginator.page_count, 4)
"""
PAGINATOR_OUTPUT = b"""\
F
======================================================================
FAIL: test_page_count (tests.test_paginator.PaginatorTests.test_page_count)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/workspace/tests/test_paginator.py", line 11, in test_page_count
    self.assertEqual(self.paginator.page_count, 4)
AssertionError: 3 != 4

----------------------------------------------------------------------
Ran 1 test in 0.001s

FAILED (failures=1)
"""
PAGINATOR_FAILING = completed(exit_code=1, tests_run=1, failures=1, output=PAGINATOR_OUTPUT)
PAGE_COUNT_FIXED = (
    "```python\n@property\ndef page_count(self):\n"
    "    return -(-len(self.items) // self.per_page)\n```"
)


def _package_repo(tmp_path: Path, tests: str = PAGINATOR_TESTS) -> Path:
    repo = tmp_path / "repo"
    (repo / "paginator").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "paginator" / "__init__.py").write_text(
        'from .core import Paginator\n\n__all__ = ["Paginator"]\n'
    )
    (repo / "paginator" / "core.py").write_text(PAGINATOR)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_paginator.py").write_text(tests)
    return repo


def test_a_class_imported_through_a_package_is_repaired_method_by_method(tmp_path: Path) -> None:
    result, _ = run(
        tmp_path,
        [PAGE_COUNT_FIXED],
        [PAGINATOR_FAILING, PASSING],
        repo=_package_repo(tmp_path),
    )
    assert result.status == "SUCCEEDED", result.reason
    assert [c.outcome for c in result.candidates] == ["passed"]
    assert result.candidates[0].functions == ["page_count"]
    assert result.files_changed == ["paginator/core.py"]
    assert "+        return -(-len(self.items) // self.per_page)" in result.diff


def test_a_reply_that_writes_back_every_method_it_was_shown_is_a_candidate(
    tmp_path: Path,
) -> None:
    # The shape of a real reply (realrepos): each method shown, under its header and
    # indented as in its class, one of them changed. It was refused ("unexpected indent",
    # then "the same as the code": only the last block was looked at).
    reply = (
        "```python\n# paginator/core.py, lines 6-8, in class Paginator\n    @property\n"
        "    def page_count(self):\n        return -(-len(self.items) // self.per_page)\n```\n"
        "```python\n# paginator/core.py, lines 2-4, in class Paginator\n"
        "    def __init__(self, items, per_page=10):\n        self.items = list(items)\n"
        "        self.per_page = per_page\n```\n"
    )
    result, _ = run(tmp_path, [reply], [PAGINATOR_FAILING, PASSING], repo=_package_repo(tmp_path))
    assert result.status == "SUCCEEDED", result.reason
    assert [(c.outcome, c.functions) for c in result.candidates] == [("passed", ["page_count"])]
    assert result.diff.count("\n+ ") == 1  # one line changed


def test_what_the_model_is_shown_of_a_class(tmp_path: Path) -> None:
    from sandbox_agent.controller.repair_loop import repair_prompt
    from sandbox_agent.repair.failures import frames
    from sandbox_agent.repair.localise import localise

    repo = _package_repo(tmp_path)
    output = PAGINATOR_OUTPUT.decode()

    def read(path: str) -> str | None:
        return (repo / path).read_text() if (repo / path).is_file() else None

    context = localise(frames(output), read, lambda path: path.startswith("tests"))
    shown = repair_prompt("Fix the paginator.", output, context)
    assert "# paginator/core.py, lines 6-8, in class Paginator\n    @property\n" in shown
    assert "You may edit: paginator/core.py." in shown
    assert shown.rstrip().endswith(
        "methods `Paginator.page_count` and `Paginator.__init__` (only those you change, each "
        "whole: leave out the ones you keep as they are) in one ```python code block."
    )


def test_a_run_with_nothing_to_repair_says_why_in_its_reason(tmp_path: Path) -> None:
    tests = PAGINATOR_TESTS.replace("from paginator import Paginator", "Paginator = dict")
    result, _ = run(
        tmp_path,
        [PAGE_COUNT_FIXED],
        [PAGINATOR_FAILING, PAGINATOR_FAILING],
        repo=_package_repo(tmp_path, tests),
    )
    assert result.status == "FAILED"
    assert result.budget_used.iterations == 0
    assert result.reason.startswith("the final tests fail")
    assert "the repair strategy found no function to repair from the failing tests" in result.reason
    assert "tests/test_paginator.py" in result.reason
    assert "--strategy tools" in result.reason


UNCHANGED = f"```python\n{SOLUTION}```"


def test_a_repeated_candidate_is_drawn_again_within_redraws(tmp_path: Path) -> None:
    result, backend = run(
        tmp_path,
        [WRONG, WRONG, UNCHANGED, FIXED],
        [FAILING, FAILING, PASSING],
        repair=RepairOptions(candidates=2, rounds=0, redraws=2),
    )
    assert result.status == "SUCCEEDED", result.reason
    assert [c.outcome for c in result.candidates] == ["failed", "failed", "refused", "passed"]
    assert [c.repeat_of for c in result.candidates] == [None, 1, None, None]
    assert [c.refusal for c in result.candidates] == [None, None, "no_change", None]
    # each draw its own seed, warmer by the repeats so far
    assert [(c.temperature, c.seed) for c in result.candidates] == [
        (0.0, 1234), (0.8, 1236), (1.0, 1237), (1.2, 1238),
    ]  # fmt: skip
    assert len(backend.requests) == 3  # repeats are not tested again


def test_the_greedy_slot_is_redrawn_sampled(tmp_path: Path) -> None:
    result, _ = run(
        tmp_path,
        [UNCHANGED, FIXED],
        [FAILING, PASSING],
        repair=RepairOptions(candidates=1, rounds=0, redraws=1),
    )
    assert result.status == "SUCCEEDED", result.reason
    assert [(c.temperature, c.seed) for c in result.candidates] == [(0.0, 1234), (1.0, 1236)]


def test_redraws_are_bounded_and_none_by_default(tmp_path: Path) -> None:
    result, _ = run(
        tmp_path,
        [UNCHANGED, UNCHANGED, UNCHANGED, FIXED],
        [FAILING],
        repair=RepairOptions(candidates=1, rounds=0, redraws=2),
    )
    assert result.status == "FAILED"
    assert [c.refusal for c in result.candidates] == ["no_change"] * 3
    assert RepairOptions().redraws == 0
