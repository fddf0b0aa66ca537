"""SR-8 (issue 20), the controller side: hostile repositories and scripted plans, end to end.

Each test was written against the code before its fix and seen to fail there
(docs/review/SR-8-controller.md says how). The repositories are what a hostile author
could prepare; the plans use nothing but the six tools. Where the sandbox matters the
runs are real Docker runs, on runc and runsc.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from scripted_runs import BUGGY_ADD, FINISH, RUN_TESTS, config, create, make_repo, replace

from sandbox_agent.controller import RunResult, run_task
from sandbox_agent.evidence import verify_run
from sandbox_agent.sandbox.fake import FakeBackend, completed

RUNTIMES = [
    pytest.param("runc", marks=pytest.mark.docker),
    pytest.param("runsc", marks=pytest.mark.runsc),
]

PYPROJECT_PYTEST = "[tool.pytest.ini_options]\n"
PYTEST_ADD_TEST = "from pkg.core import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
UNITTEST_ADD_TEST = (
    "import unittest\n\nfrom pkg.core import add\n\n\n"
    "class TestAdd(unittest.TestCase):\n    def test_add(self):\n"
    "        self.assertEqual(add(2, 3), 5)\n"
)
UNITTEST_OTHER = (
    "import unittest\n\n\nclass TestOther(unittest.TestCase):\n"
    "    def test_one(self):\n        self.assertTrue(True)\n"
)
PYTEST_OTHER = "def test_one():\n    assert True\n"


def denials(result: RunResult) -> list[str | None]:
    return [call.denial for call in result.tool_calls if call.denial]


# --- C8-1: the final verdict covers the tests the repository had ---------------------------


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_c8_1_a_virtualenv_marker_and_a_text_doctest_do_not_replace_the_suite(
    tmp_path: Path, runtime: str
) -> None:
    """pytest skips a folder holding ``bin/activate`` and collects ``test*.txt`` as
    doctests: an empty marker hid ``pkg/tests`` and a doctest supplied the pass."""
    repo = make_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": PYPROJECT_PYTEST,
            "pkg/__init__.py": "",
            "pkg/core.py": BUGGY_ADD,
            "pkg/tests/__init__.py": "",
            "pkg/tests/test_core.py": PYTEST_ADD_TEST,
        },
    )
    steps = [
        create("test_ok.txt", ">>> 1 + 1\n2\n"),
        create("pkg/bin/activate", "# not a virtual environment\n"),
        RUN_TESTS,
        FINISH,
    ]
    result = run_task(config(tmp_path, repo, steps, runtime=runtime))
    assert result.status == "FAILED", result.reason
    assert "path.protected" in denials(result)
    assert result.final_tests is not None
    assert not result.final_tests.passed


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_c8_1_files_a_testpaths_glob_matches_are_test_code(tmp_path: Path, runtime: str) -> None:
    """``testpaths = ["spec_*"]`` was compared as a literal folder name, so the expected
    values in ``spec_core/`` were editable."""
    repo = make_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["spec_*"]\n',
            "pkg/__init__.py": "",
            "pkg/core.py": BUGGY_ADD,
            "spec_core/expected.json": '{"sum": 5}\n',
            "spec_core/test_core.py": (
                "import json, pathlib\nfrom pkg.core import add\n\n\ndef test_add():\n"
                "    expected = json.loads((pathlib.Path(__file__).parent / 'expected.json')"
                ".read_text())\n    assert add(2, 3) == expected['sum']\n"
            ),
        },
    )
    steps = [replace("spec_core/expected.json", '{"sum": 5}', '{"sum": -1}'), RUN_TESTS, FINISH]
    result = run_task(config(tmp_path, repo, steps, runtime=runtime))
    assert result.status == "FAILED", result.reason
    assert "path.protected" in denials(result)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_c8_1_unittest_tests_hidden_by_load_tests_fail_the_verdict(
    tmp_path: Path, runtime: str
) -> None:
    """``load_tests`` in the package of the code under test replaced its test folder's
    suite; one other passing test made the run SUCCEEDED."""
    repo = make_repo(
        tmp_path / "repo",
        {
            "pkg/__init__.py": "# package\n",
            "pkg/core.py": BUGGY_ADD,
            "pkg/tests/__init__.py": "",
            "pkg/tests/test_core.py": UNITTEST_ADD_TEST,
            "tests/__init__.py": "",
            "tests/test_other.py": UNITTEST_OTHER,
        },
    )
    hide = (
        "import unittest\n\n\ndef load_tests(loader, tests, pattern):\n"
        "    return unittest.TestSuite()\n"
    )
    steps = [replace("pkg/__init__.py", "# package\n", hide), RUN_TESTS, FINISH]
    result = run_task(config(tmp_path, repo, steps, runtime=runtime))
    assert result.status == "FAILED", result.reason
    assert result.final_tests is not None
    assert not result.final_tests.passed
    assert "pkg.tests.test_core.TestAdd.test_add" in result.reason
    assert "1 test" in result.reason


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_c8_1_pytest_tests_hidden_by_a_module_level_skip_fail_the_verdict(
    tmp_path: Path, runtime: str
) -> None:
    """A module-level skip in the package of the code under test skipped the collection
    of its test folder; one other passing test made the run SUCCEEDED."""
    repo = make_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": PYPROJECT_PYTEST,
            "pkg/__init__.py": "# package\n",
            "pkg/core.py": BUGGY_ADD,
            "pkg/tests/__init__.py": "",
            "pkg/tests/test_core.py": PYTEST_ADD_TEST,
            "tests/__init__.py": "",
            "tests/test_other.py": PYTEST_OTHER,
        },
    )
    skip = "import unittest\n\nraise unittest.SkipTest('hidden')\n"
    steps = [replace("pkg/__init__.py", "# package\n", skip), RUN_TESTS, FINISH]
    result = run_task(config(tmp_path, repo, steps, runtime=runtime))
    assert result.status == "FAILED", result.reason
    assert "pkg/tests/test_core.py::test_add" in result.reason


@pytest.mark.docker
def test_c8_1_an_honest_run_passes_with_its_baseline(tmp_path: Path) -> None:
    """The baseline check does not get in the way of a real fix (and a reused verdict
    passes it too)."""
    repo = make_repo(
        tmp_path / "repo",
        {
            "pyproject.toml": PYPROJECT_PYTEST,
            "pkg/__init__.py": "",
            "pkg/core.py": BUGGY_ADD,
            "pkg/tests/__init__.py": "",
            "pkg/tests/test_core.py": PYTEST_ADD_TEST,
        },
    )
    steps = [RUN_TESTS, replace("pkg/core.py", "a - b", "a + b"), RUN_TESTS, FINISH]
    result = run_task(config(tmp_path, repo, steps))
    assert result.status == "SUCCEEDED", result.reason
    assert result.final_tests is not None
    assert result.final_tests.reused
    assert verify_run(Path(result.trace_path).parent).ok


# --- C8-2: a reused verdict covers exactly what the sandbox mounts -------------------------

BROKEN_BY_A_FLAG = (
    "import os\n\nif os.path.exists(os.path.join(os.path.dirname(__file__), '.git', 'broken')):\n"
    "    raise ImportError('the final tree does not import')\n\n\n" + BUGGY_ADD
)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_c8_2_writing_under_a_nested_git_folder_after_the_last_run_is_refused(
    tmp_path: Path, runtime: str
) -> None:
    """The tree hash left out ``.git`` at any depth and only the top-level one was
    protected: ``pkg/.git/broken`` written after the last passing run kept the reused
    verdict, while the final tree's code no longer imported."""
    repo = make_repo(
        tmp_path / "repo",
        {
            "pkg/__init__.py": "",
            "pkg/core.py": BROKEN_BY_A_FLAG,
            "tests/__init__.py": "",
            "tests/test_core.py": UNITTEST_ADD_TEST,
        },
    )
    steps = [
        replace("pkg/core.py", "a - b", "a + b"),
        RUN_TESTS,
        create("pkg/.git/broken", "1\n"),
        FINISH,
    ]
    result = run_task(config(tmp_path, repo, steps, runtime=runtime))
    assert "pkg/.git/broken" not in result.files_changed
    assert "path.protected" in denials(result)
    assert result.status == "SUCCEEDED", result.reason  # the tree that was judged is the final one


def test_c8_2_a_write_the_hash_cannot_see_drops_the_reuse(tmp_path: Path) -> None:
    """Whatever writes the workspace (here: directly, past every tool), a verdict is
    reused only when the hash covers every byte the sandbox mounts."""
    from sandbox_agent.policy import Policy
    from sandbox_agent.tools.toolbox import ToolBox
    from sandbox_agent.workspace import Workspace

    repo = make_repo(tmp_path / "repo", {"pkg/__init__.py": "", "tests/test_a.py": UNITTEST_OTHER})
    backend = FakeBackend([completed(tests_run=1), completed(tests_run=1)])
    with Workspace.create(repo) as workspace:
        toolbox = ToolBox(workspace, Policy.for_repo(workspace.root), backend)
        toolbox.run_tests()
        for name in (".git", ".hg", ".svn"):
            (workspace.root / "pkg" / name).mkdir()
            (workspace.root / "pkg" / name / "x").write_text("changed")
            final = toolbox.run_final_tests()
            assert not final.reused, name
            toolbox.run_tests()  # the next suite run is reused again ...
            backend.add(completed(tests_run=1), completed(tests_run=1))


# --- C8-3: numbers out of range are invalid output or refused reports, never a crash -------


@pytest.mark.parametrize("digits", [4300, 4301, 20_000])
def test_c8_3_a_huge_integer_in_a_reply_is_an_invalid_output(tmp_path: Path, digits: int) -> None:
    """A ``start_line`` past Python's 4300-digit string limit crashed the controller and
    left the run unsealed."""
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n", "tests/test_a.py": UNITTEST_OTHER})
    huge = "9" * digits
    steps = [
        {"raw": f'{{"tool": "read_file", "args": {{"path": "README.md", "start_line": {huge}}}}}'},
        {"raw": f'{{"tool": "read_file", "args": {{"path": "README.md", "end_line": -{huge}}}}}'},
        FINISH,
    ]
    result = run_task(
        config(tmp_path, repo, steps, max_invalid_outputs=5),
        sandbox=FakeBackend([completed(tests_run=1)] * 3),
    )
    assert result.budget_used.invalid_outputs == 2
    assert result.status == "SUCCEEDED", result.reason
    assert verify_run(Path(result.trace_path).parent).ok


FORGE_HUGE_REPORT = """
import os, stat, unittest

class TestForge(unittest.TestCase):
    def test_forge(self):
        report = ('{{"runner": "unittest", "tests_run": {n}, "failures": 0, "errors": 0, '
                  '"skipped": {n}, "mode": "run", "ids": [], "broken": [], '
                  '"skipped_ids": []}}').encode()
        for fd in range(3, 64):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    os.write(fd, report)
            except OSError:
                pass
        os._exit(0)
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_c8_3_a_runner_report_with_huge_counts_from_test_code_is_refused(
    tmp_path: Path, runtime: str
) -> None:
    """Test code wrote a report of 4300-digit counts on the report pipe: it passed PID 1's
    parser and the host's, then the sum failed to format (fixed on main before SR-8:
    ``runner_report.MAX_COUNT``; this is its regression test)."""
    repo = make_repo(
        tmp_path / "repo",
        {"tests/__init__.py": "", "tests/test_forge.py": FORGE_HUGE_REPORT.format(n="9" * 4300)},
    )
    result = run_task(config(tmp_path, repo, [RUN_TESTS, FINISH], runtime=runtime))
    assert result.status == "FAILED", result.reason
    assert result.final_tests is not None
    assert result.final_tests.tests_run < 10**9
    assert verify_run(Path(result.trace_path).parent).ok


# --- C8-4: every phase after the loop honours the wall clock and cancellation -------------

SWAPPED_FILES = 25
SWAPPED_LINES = 1900


def pairs_swapped(lines: list[str]) -> list[str]:
    out: list[str] = []
    for i in range(0, len(lines) - 1, 2):
        out += [lines[i + 1], lines[i]]
    return out


def slow_diff_repo(root: Path) -> tuple[Path, list[dict[str, Any]]]:
    """Many files whose every line the model reorders: difflib's worst case."""
    files = {"tests/__init__.py": "", "tests/test_a.py": UNITTEST_OTHER}
    edits = []
    for number in range(SWAPPED_FILES):
        lines = [f"{number:02d}{line:05d}\n" for line in range(SWAPPED_LINES)]
        files[f"data/d{number}.txt"] = "".join(lines)
        edits.append(
            {
                "path": f"data/d{number}.txt",
                "old": "".join(lines),
                "new": "".join(pairs_swapped(lines)),
            }
        )
    steps = [
        {"tool": "apply_patch", "args": {"edits": edits[i : i + 20]}}
        for i in range(0, len(edits), 20)
    ]
    return make_repo(root, files), [*steps, FINISH]


def test_c8_4_a_large_reordered_file_is_summarised_not_diffed(tmp_path: Path) -> None:
    """difflib on a large file with many distinct reordered lines is quadratic."""
    from sandbox_agent.workspace.diff import unified_diff

    lines = [f"{line:07d}\n" for line in range(12_000)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "big.txt").write_text("".join(lines))
    (tmp_path / "b" / "big.txt").write_text("".join(pairs_swapped(lines)))
    diff = unified_diff(tmp_path / "a", tmp_path / "b")
    assert "big.txt" in diff
    assert "not diffed" in diff
    assert len(diff) < 10_000


def cli_run(tmp_path: Path, repo: Path, steps: list[dict[str, Any]]) -> subprocess.Popen[bytes]:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": steps}))
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "sandbox_agent", "run", "--repo", str(repo), "--task", "t",
            "--plan", str(plan), "--trace-dir", str(tmp_path / "runs"), "--run-id", "slow",
            "--json"]  # fmt: skip
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_event(trace: Path, event: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if trace.exists() and f'"event":"{event}"' in trace.read_text().replace(" ", ""):
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError(f"no {event} event within 120 s")


@pytest.mark.docker
def test_c8_4_sigterm_after_the_loop_ends_the_run_cancelled(tmp_path: Path) -> None:
    """The final diff ignored SIGTERM for minutes and the run then said SUCCEEDED."""
    repo, steps = slow_diff_repo(tmp_path / "repo")
    process = cli_run(tmp_path, repo, steps)
    wait_for_event(tmp_path / "runs" / "slow" / "trace.jsonl", "final_tests", process)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)  # 1 s expected: the diff checks between files
    assert process.returncode == 128 + signal.SIGTERM, err  # 143, as a shell says (issue 30)
    assert json.loads(out)["status"] == "CANCELLED"
    assert b"cancelling (SIGTERM)" in err


@pytest.mark.docker
def test_c8_4_a_workspace_left_by_a_killed_run_is_reaped_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After SIGKILL in the diff phase the workspace stayed: only ``sandbox-agent reap``
    removed it, not the next run, as the threat model says (T-22)."""
    import tempfile

    repo, steps = slow_diff_repo(tmp_path / "repo")
    process = cli_run(tmp_path, repo, steps)
    wait_for_event(tmp_path / "runs" / "slow" / "trace.jsonl", "final_tests", process)
    process.kill()
    process.communicate(timeout=60)
    left = list((tmp_path / "tmp").glob("sandbox-agent-ws-*"))
    assert left, "the killed run left no workspace to reap"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    small = make_repo(tmp_path / "small", {"tests/test_a.py": UNITTEST_OTHER})
    run_task(config(tmp_path, small, [FINISH]), sandbox=FakeBackend([completed()]))
    deadline = time.monotonic() + 60
    while any(path.exists() for path in left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(path.exists() for path in left)


# --- C8-3: the property: huge and odd numbers through every parser of the controller ------

ODD_NUMBERS = (
    "0",
    "-1",
    "1e309",
    "-1e309",
    "1.5",
    "true",
    "null",
    "9" * 4300,
    "9" * 4301,
    "-" + "9" * 20_000,
    "1" + "0" * 30,
    "NaN",
    "Infinity",
)


def _odd_json() -> Any:
    from hypothesis import strategies as st

    number = st.one_of(st.sampled_from(ODD_NUMBERS), st.integers().map(str), st.floats().map(repr))
    key = st.sampled_from(["path", "start_line", "end_line", "selector", "edits", "summary"])
    return st.tuples(st.sampled_from(["read_file", "run_tests", "finish", "search"]), key, number)


@pytest.mark.parametrize("shape", ["args", "top"])
def test_c8_3_property_parse_turn_never_raises_but_a_denial(shape: str) -> None:
    from hypothesis import given, settings

    from sandbox_agent.controller.parse import parse_turn
    from sandbox_agent.errors import ToolDenied
    from sandbox_agent.tools.contracts import TOOL_NAMES

    @settings(max_examples=300, deadline=None)
    @given(_odd_json())
    def check(case: tuple[str, str, str]) -> None:
        tool, key, number = case
        text = (
            f'{{"tool": "{tool}", "args": {{"{key}": {number}}}}}'
            if shape == "args"
            else f'{{"tool": {number}, "args": {{}}}}'
        )
        try:
            call = parse_turn(text, frozenset(TOOL_NAMES))
        except ToolDenied:
            return
        for value in call.args.model_dump().values():
            assert not isinstance(value, int) or abs(value) <= 10**9

    check()


def test_c8_3_property_plans_and_provider_answers_never_raise_but_their_own_errors(
    tmp_path: Path,
) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from sandbox_agent.errors import UsageError
    from sandbox_agent.providers.openai_compat import reply_text
    from sandbox_agent.providers.plan import load_plan
    from sandbox_agent.providers.tooldefs import past_call

    @settings(max_examples=200, deadline=None)
    @given(st.sampled_from(ODD_NUMBERS))
    def check(number: str) -> None:
        plan = tmp_path / "plan.json"
        plan.write_text(f'{{"steps": [{{"tool": "read_file", "args": {{"x": {number}}}}}]}}')
        with contextlib.suppress(UsageError):
            load_plan(plan)
        past_call(f'{{"tool": "read_file", "args": {{"start_line": {number}}}}}', ["read_file"])
        from openai.types.chat import ChatCompletion

        completion = ChatCompletion.model_validate(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "id": "1",
                                    "type": "function",
                                    "function": {
                                        "name": "read_file",
                                        "arguments": f'{{"start_line": {number}}}',
                                    },
                                }
                            ],
                        },
                    }
                ],
            }
        )
        text, _ = reply_text(completion)
        assert isinstance(text, str)

    check()
