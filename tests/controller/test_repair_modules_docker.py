"""A visible suite that never reports (a test module ends the runner's process): the
repair strategy checks candidates module by module, and the run's status still comes from
the whole suite (docs/DECISIONS.md, "A suite that never reports")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.controller import RunConfig, RunResult, run_task
from sandbox_agent.controller.models import RepairOptions
from sandbox_agent.providers.options import PlanOptions
from tests.repo_files import write_files

pytestmark = pytest.mark.docker

CORE = (
    "def count_words(text):\n"
    '    """How often each word occurs; words are separated by any whitespace."""\n'
    "    counts = {}\n"
    '    for word in text.split(" "):\n'
    "        counts[word] = counts.get(word, 0) + 1\n"
    "    return counts\n"
)
TESTS = (
    "import unittest\n\nfrom wordcount.core import count_words\n\n\n"
    "class CountTest(unittest.TestCase):\n"
    "    def test_spaces(self):\n"
    '        self.assertEqual(count_words("a b a"), {"a": 2, "b": 1})\n\n'
    "    def test_tabs(self):\n"
    '        self.assertEqual(count_words("a\\tb"), {"a": 1, "b": 1})\n'
)
SILENT = (
    "import os\nimport unittest\n\n\n"
    "class ExitTest(unittest.TestCase):\n"
    "    def test_exit(self):\n"
    "        os._exit(0)  # the runner never reports\n"
)
FIXED = (
    "```python\ndef count_words(text):\n    counts = {}\n    for word in text.split():\n"
    "        counts[word] = counts.get(word, 0) + 1\n    return counts\n```"
)
SKIPPING = (
    "```python\ndef count_words(text):\n    import unittest\n"
    '    if "\\t" in text:\n        raise unittest.SkipTest("no tabs")\n'
    "    counts = {}\n    for word in text.split():\n"
    "        counts[word] = counts.get(word, 0) + 1\n    return counts\n```"
)


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_files(
        root,
        {
            "wordcount/__init__.py": "",
            "wordcount/core.py": CORE,
            "tests/__init__.py": "",
            "tests/test_core.py": TESTS,
            "tests/test_zz_exit.py": SILENT,
        },
    )
    return root


def repair(tmp_path: Path, root: Path, candidates: list[str], **options: int) -> RunResult:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"raw": text} for text in candidates]}))
    return run_task(
        RunConfig(
            task="count_words() counts tabs as part of words: fix it.",
            repo=root,
            provider="scripted",
            provider_options=PlanOptions(plan_path=str(plan)),
            strategy="repair",
            repair=RepairOptions(candidates=len(candidates), rounds=0, **options),
            trace_dir=tmp_path / "runs",
        )
    )


def selectors(result: RunResult) -> list[str | None]:
    return [c.result.get("selector") for c in result.tool_calls if c.tool == "run_tests"]


def test_a_silent_suite_checks_candidates_module_by_module(tmp_path: Path) -> None:
    from sandbox_agent.evidence import verify_run

    root = repo(tmp_path)
    result = repair(tmp_path, root, [FIXED])
    assert [c.outcome for c in result.candidates] == ["passed"]
    candidate = result.candidates[0]
    assert (candidate.tests_run, candidate.failures) == (2, 0)
    assert "tests.test_zz_exit" in candidate.reason  # named as not checked
    assert "text.split()" in result.diff  # the candidate is the tree the run returns
    # the whole suite, each module once on the original, then the reporting one per candidate
    assert selectors(result) == [None, "tests.test_core", "tests.test_zz_exit", "tests.test_core"]
    # the status is still the final whole-suite run's, which never reports
    assert result.status == "FAILED"
    assert result.final_tests is not None
    assert not result.final_tests.passed
    assert "no report" in result.reason
    assert (root / "wordcount/core.py").read_text() == CORE
    assert verify_run(Path(result.trace_path).parent).ok


def test_a_new_skip_is_not_a_pass_module_by_module(tmp_path: Path) -> None:
    result = repair(tmp_path, repo(tmp_path), [SKIPPING])
    assert [c.outcome for c in result.candidates] == ["failed"]
    assert "a skip is not a pass" in result.candidates[0].reason
    assert result.diff == ""


def test_more_modules_than_the_limit_keep_the_whole_suite_check(tmp_path: Path) -> None:
    result = repair(tmp_path, repo(tmp_path), [FIXED], module_checks=1)
    assert [c.outcome for c in result.candidates] == ["failed"]
    assert selectors(result) == [None, None]
    assert result.diff == ""


HELPER_BUG = (
    "def scale(x):\n    return x * 3\n\n\n"
    "def double_all(xs):\n    return [scale(x) for x in xs]\n\n\n"
    "def total(xs):\n    return sum(double_all(xs))\n\n\n"
    "def unrelated(x):\n    return x\n"
)
HELPER_TESTS = (
    "import unittest\n\nfrom lib import total, unrelated\n\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_total(self):\n        self.assertEqual(total([1, 2]), 6)\n\n"
    "    def test_unrelated(self):\n        self.assertEqual(unrelated(1), 1)\n"
)
HELPER_FIXED = "```python\ndef scale(x):\n    return x * 2\n```"


def test_the_spectrum_shows_a_helper_no_traceback_names(tmp_path: Path) -> None:
    """The failing assert is in the test; the bug is in a function the test never names.
    The spectrum (which functions the failing test ran that the passing one did not)
    puts it among the functions shown, so a candidate may rewrite it."""
    root = tmp_path / "repo"
    write_files(root, {"lib.py": HELPER_BUG, "test_lib.py": HELPER_TESTS})
    result = repair(tmp_path, root, [HELPER_FIXED])
    assert [c.outcome for c in result.candidates] == ["passed"], result.candidates
    assert result.candidates[0].functions == ["scale"]
    assert result.status == "SUCCEEDED", result.reason
    trace = Path(result.trace_path).read_text().splitlines()
    purposes = [json.loads(e).get("purpose") for e in trace if '"sandbox_run"' in e]
    assert purposes.count("spectrum") == 1  # recorded as the sandbox run it is


@pytest.mark.parametrize("runner", ["unittest", "pytest"])
def test_a_module_that_does_not_compile_is_named_in_the_reason(tmp_path: Path, runner: str) -> None:
    """An outside review read "no traceback frame reaches an editable file" for a
    SyntaxError whose traceback named the file: no function of a module that does not
    compile can be spliced, and the reason now says which module and why."""
    root = tmp_path / "repo"
    files = {"lib.py": "def scale(x):\n    return x *\n", "test_lib.py": HELPER_TESTS}
    if runner == "pytest":
        files["conftest.py"] = ""
    write_files(root, files)
    result = repair(tmp_path, root, [HELPER_FIXED])
    assert result.status == "FAILED"
    assert result.budget_used.iterations == 0  # no model call
    assert "lib.py (SyntaxError at line 2) does not compile" in result.reason, result.reason
    assert "--strategy tools" in result.reason
