"""run_tests through the fake backend: the verdict comes from evidence, never from printing."""

from __future__ import annotations

import pytest
from toolbox_helpers import call

from sandbox_agent import denials
from sandbox_agent.policy import Policy
from sandbox_agent.sandbox.base import CancelToken, SandboxLimits
from sandbox_agent.sandbox.fake import FakeBackend, completed, refused
from sandbox_agent.tools import TestRun, ToolBox
from sandbox_agent.workspace import Workspace

WRAPPER = ("/usr/bin/python3", "-I", "-B", "-m", "sandbox_supervisor.run_tests")


def test_a_clean_attested_run_passes_and_carries_the_evidence(
    toolbox: ToolBox, backend: FakeBackend
) -> None:
    backend.add(completed(tests_run=3, output=b"...\nOK\n"))
    outcome = call(toolbox, "run_tests")
    assert outcome.ok
    for field in (
        "status",
        "exit_code",
        "tests_run",
        "failures",
        "attested",
        "runtime",
        "passed",
        "summary",
    ):
        assert field in outcome.result
    assert outcome.result["passed"] is True
    assert outcome.result["status"] == "completed"
    assert outcome.result["tests_run"] == 3
    assert outcome.result["attested"] is True
    assert outcome.result["runtime"] == "runc"
    request = backend.requests[0]
    assert request.argv == (*WRAPPER, "unittest")
    assert request.workspace == toolbox.workspace.root
    assert request.workload_env == {}


@pytest.mark.parametrize(
    ("result", "why"),
    [
        (completed(exit_code=0, tests_run=0, output=b"Ran 5 tests\nOK\n"), "no test ran"),
        (completed(exit_code=0, report=False, output=b"Ran 5 tests\nOK\n"), "wrote no report"),
        (completed(exit_code=0, tests_run=4, failures=1, output=b"OK\n"), "inconsistent"),
        (completed(exit_code=1, tests_run=4, output=b"OK\n"), "inconsistent"),
        (completed(exit_code=1, tests_run=4, errors=2), "2 errors"),
        (completed(exit_code=0, tests_run=2, skipped=2), "no test ran"),
        (completed(exit_code=0, tests_run=2, runner="pytest"), "runner 'pytest'"),
        (completed(tests_run=3).model_copy(update={"attested": False}), "not attested"),
        (completed(tests_run=3).model_copy(update={"status": "timeout"}), "'timeout'"),
        (refused("spec mismatch: seccomp"), "'refused'"),
    ],
)
def test_printing_cannot_claim_a_pass(
    toolbox: ToolBox, backend: FakeBackend, result: object, why: str
) -> None:
    backend.add(result)  # type: ignore[arg-type]
    outcome = call(toolbox, "run_tests")
    assert outcome.ok
    assert outcome.result["passed"] is False
    assert why in outcome.result["reason"]


def test_selector_and_pytest_environment(workspace: Workspace, backend: FakeBackend) -> None:
    toolbox = ToolBox(
        workspace,
        Policy(runner="pytest"),
        backend,
        runtime="runsc",
        limits=SandboxLimits(timeout_s=5),
    )
    backend.add(completed(runner="pytest", runtime="runsc"))
    outcome = call(toolbox, "run_tests", selector="tests/test_core.py::TestPages::test_rounds_up")
    assert outcome.result["passed"] is True
    request = backend.requests[0]
    assert request.argv == (*WRAPPER, "pytest", "tests/test_core.py::TestPages::test_rounds_up")
    assert request.workload_env == {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    assert request.runtime == "runsc"
    assert request.limits.timeout_s == 5


def test_a_bad_selector_never_reaches_the_sandbox(toolbox: ToolBox, backend: FakeBackend) -> None:
    outcome = call(toolbox, "run_tests", selector="--help")
    assert outcome.denial == denials.COMMAND_BAD_SELECTOR
    assert backend.requests == []


def test_the_summary_is_bounded_and_free_of_control_characters(
    toolbox: ToolBox, backend: FakeBackend
) -> None:
    noisy = b"\x1b[31mred\x1b[0m\n" + b"x" * 10_000 + b"\n" + b"line\n" * 100
    backend.add(completed(tests_run=1, exit_code=1, failures=1, output=noisy))
    outcome = call(toolbox, "run_tests")
    summary = outcome.result["summary"]
    assert len(summary.encode()) <= 2048
    assert "\x1b" not in summary
    assert summary.startswith("FAILED: 1 failed")


def test_final_run_is_the_whole_suite(toolbox: ToolBox, backend: FakeBackend) -> None:
    backend.add(completed(tests_run=7))
    final = toolbox.run_final_tests()
    assert isinstance(final, TestRun)
    assert final.passed
    assert final.tests_run == 7
    assert final.sandbox.status == "completed"
    assert backend.requests[0].argv == (*WRAPPER, "unittest")


def test_a_cancelled_run_creates_nothing_and_fails(
    workspace: Workspace, backend: FakeBackend
) -> None:
    token = CancelToken()
    token.cancel()
    toolbox = ToolBox(workspace, Policy(), backend, cancel=token)
    backend.add(completed(tests_run=3))
    final = toolbox.run_final_tests()
    assert not final.passed
    assert final.status == "cancelled"
    assert final.sandbox.started is False


EDIT = {"path": "paginator/core.py", "old": "n // size", "new": "-(-n // size)"}


def test_the_final_run_reuses_a_verified_suite_run_of_the_same_bytes(
    toolbox: ToolBox, backend: FakeBackend
) -> None:
    backend.add(completed(tests_run=3))
    assert call(toolbox, "run_tests").ok
    final = toolbox.run_final_tests()
    assert final.reused is True
    assert final.passed is True
    assert len(backend.requests) == 1, "no second, identical sandbox run"


@pytest.mark.parametrize(
    "between",
    ["edit", "selector", "unverified"],
)
def test_the_final_run_is_fresh_after_an_edit_a_selector_or_an_unverified_run(
    toolbox: ToolBox, backend: FakeBackend, between: str
) -> None:
    if between == "unverified":
        backend.add(completed(tests_run=3).model_copy(update={"attested": False}))
        call(toolbox, "run_tests")
    elif between == "selector":  # only part of the suite ran
        backend.add(completed(tests_run=1))
        call(toolbox, "run_tests", selector="tests.test_core")
    else:
        backend.add(completed(tests_run=3))
        call(toolbox, "run_tests")
        assert call(toolbox, "apply_patch", edits=[EDIT]).ok
    backend.add(completed(tests_run=3, failures=1, exit_code=1))
    final = toolbox.run_final_tests()
    assert final.reused is False
    assert final.passed is False, "the verdict is the fresh run's"
    assert backend.requests[-1].argv == (*WRAPPER, "unittest")


def test_an_edit_undone_to_the_same_bytes_may_reuse(toolbox: ToolBox, backend: FakeBackend) -> None:
    # Reuse is keyed on the bytes, not on "was anything edited": same tree, same evidence.
    backend.add(completed(tests_run=3))
    call(toolbox, "run_tests")
    assert call(toolbox, "apply_patch", edits=[EDIT]).ok
    undo = {"path": EDIT["path"], "old": EDIT["new"], "new": EDIT["old"]}
    assert call(toolbox, "apply_patch", edits=[undo]).ok
    assert toolbox.run_final_tests().reused is True


def test_unittest_that_ran_nothing_says_how_pytest_tests_would_run(
    toolbox: ToolBox, backend: FakeBackend
) -> None:
    # A new user's folder of plain `def test_...` functions has no pytest configuration,
    # so unittest runs it and finds nothing: the reason names the way out.
    backend.add(completed(exit_code=5, tests_run=0))
    reason = call(toolbox, "run_tests").result["reason"]
    assert reason.startswith("no test ran")
    assert "--runner pytest" in reason


def test_unittest_whose_every_test_skipped_says_so_not_how_pytest_tests_would_run(
    toolbox: ToolBox, backend: FakeBackend
) -> None:
    # SR-13 (minor): skips from setUpClass used up every test; the advice to pass
    # --runner pytest did not apply, since unittest had found the tests.
    backend.add(completed(exit_code=0, tests_run=3, skipped=3))
    reason = call(toolbox, "run_tests").result["reason"]
    assert reason.startswith("no test ran")
    assert "--runner pytest" not in reason
    assert "all 3 tests were skipped" in reason


def test_the_verdicts_list_of_tests_is_cut_and_says_how_many_more() -> None:
    """The baseline's three reasons (tests that did not run, skips in modules the original
    could not import, new skips) name the first few tests without their mark."""
    from sandbox_agent.tools.baseline import MISSING_SHOWN, _listed

    many = [f"skipped:t.test_{n}" for n in range(MISSING_SHOWN + 3)]
    first = ", ".join(f"t.test_{n}" for n in range(MISSING_SHOWN))
    assert _listed(many) == f"{first} and 3 more"
    assert _listed(many[:MISSING_SHOWN]) == first
    assert _listed(["broken:pkg.tests"]) == "broken:pkg.tests"
