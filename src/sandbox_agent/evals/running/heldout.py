"""Held-out tests: judged out of process on the agent's final tree, in a fresh
verified sandbox (issue 15).

The agent never sees them: they live under ``evals/held_out`` (or a generated folder
for external suites). The held-out module runs in the trusted judge
(``sandbox_supervisor.judge``, uid 10002), which never imports the final tree's code:
it reaches it only through ``sandbox_supervisor.remote.candidate``, calls carried out
by a separate candidate process (uid 10001, the code under test's), with plain data in
a closed format both ways. The module's text reaches the judge through PID 1's memory,
not the workspace, so the expected values never enter the candidate's reach; the
verdict is the judge's own report, on a pipe the candidate cannot open. So the code
under test can make its calls answer wrongly, hang, flood or die, all of which fail the
check; it cannot forge the verdict (SR-7 F1).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from sandbox_agent.sandbox.base import (
    JUDGE_ARGV,
    CancelToken,
    EnvironmentMount,
    JudgeRequest,
    Runtime,
    SandboxBackend,
    SandboxLimits,
    SandboxRequest,
    SandboxResult,
)

JUDGE_RUNNER = "judge"
"""The runner a held-out verdict's report must name: the judge's, not a runner's."""
HELD_OUT_LABEL = "sandbox-agent.eval"
_READABLE_FILE = 0o644
_READABLE_DIR = 0o755


class HeldOutResult(BaseModel):
    """What the held-out run established. ``passed`` only from the runner's own report."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    ran: bool
    passed: bool
    status: str
    """The sandbox status (``completed``, ``timeout``, ``refused``, ...) or ``not run``."""
    reason: str = ""
    tests_run: int = 0
    failures: int = 0
    errors: int = 0
    exit_code: int | None = None
    attested: bool = False
    duration_ms: float = 0.0
    judge: Literal["out_of_process", "in_process"] = "out_of_process"
    """How the verdict was reached: ``out_of_process``, the check ran in the judge, the
    code under test in another process of another uid, every value crossing as plain
    data; ``in_process``, a project's own test suite counted by the trusted runner in
    the process that runs the code under test (``run_held_out_suite``)."""


def not_run(reason: str) -> HeldOutResult:
    """A held-out result for a run that left no final tree (it counts as a failure)."""
    return HeldOutResult(ran=False, passed=False, status="not run", reason=reason)


def verdict(result: SandboxResult, duration_ms: float) -> HeldOutResult:
    """Judge one sandbox result: pass only with a completed, attested run whose report is
    the judge's and says at least one test ran and none failed or errored, exit code 0."""
    report = result.runner_report
    tests_run = report.tests_run if report else 0
    failures = report.failures if report else 0
    errors = report.errors if report else 0
    passed = (
        result.status == "completed"
        and result.attested
        and result.exit_code == 0
        and report is not None
        and report.runner == JUDGE_RUNNER
        and tests_run > 0
        and failures == 0
        and errors == 0
    )
    return HeldOutResult(
        ran=True,
        passed=passed,
        status=result.status,
        reason=result.reason,
        tests_run=tests_run,
        failures=failures,
        errors=errors,
        exit_code=result.exit_code,
        attested=result.attested,
        duration_ms=duration_ms,
    )


def copy_regular_tree(source: Path, target: Path) -> None:
    """Copy regular files and folders only (links and special files are left out),
    readable by the sandbox user; ``target`` must not exist."""
    target.mkdir(mode=_READABLE_DIR)
    os.chmod(target, _READABLE_DIR)
    for entry in os.scandir(source):
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            copy_regular_tree(Path(entry.path), target / entry.name)
        elif stat.S_ISREG(mode):
            shutil.copyfile(entry.path, target / entry.name, follow_symlinks=False)
            os.chmod(target / entry.name, _READABLE_FILE)


def overlay_protected(pristine: Path, tree: Path) -> None:
    """Put ``pristine``'s protected files (tests, test data and configuration) over
    ``tree``, and remove protected files ``pristine`` does not have: the suite that
    judges is the project's own, whatever the final tree holds."""
    from sandbox_agent.policy.protected import protected_reason

    for folder, _dirs, files in os.walk(tree, topdown=False):
        for name in files:
            rel = (Path(folder) / name).relative_to(tree).as_posix()
            if protected_reason(rel) is not None and not (pristine / rel).is_file():
                os.unlink(Path(folder) / name)
    for folder, _dirs, files in os.walk(pristine):
        for name in files:
            source = Path(folder) / name
            rel = source.relative_to(pristine).as_posix()
            if protected_reason(rel) is None or source.is_symlink():
                continue
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(target.parent, _READABLE_DIR)
            shutil.copyfile(source, target)
            os.chmod(target, _READABLE_FILE)


def run_held_out_suite(
    final_tree: Path,
    pristine: Path,
    backend: SandboxBackend,
    *,
    runtime: Runtime = "runc",
    limits: SandboxLimits | None = None,
    cancel: CancelToken | None = None,
    environment: EnvironmentMount | None = None,
) -> HeldOutResult:
    """Run the project's whole own suite on a copy of ``final_tree`` with ``pristine``'s
    tests, through the trusted runner ``pristine`` is detected to use; judged like a
    ``run_tests`` verdict, in process (``HeldOutResult.judge``), and, as the controller's
    final verdict is, against the tests ``pristine`` collects (``tools.baseline``): a pass
    must have run every one of them and skipped none that ``pristine`` runs."""
    from sandbox_agent.policy import detect_runner, runner_command
    from sandbox_agent.tools.baseline import Baseline
    from sandbox_agent.tools.testrun import judge as judge_run

    runner = detect_runner(pristine)
    command = runner_command(runner)
    limits = limits or SandboxLimits()
    original = Baseline(
        pristine,
        runner,
        backend,
        runtime=runtime,
        limits=limits,
        cancel=cancel,
        environment=environment,
    )
    request = SandboxRequest(
        argv=command.argv,
        workspace=pristine,  # the final tree's copy, in ``_run_suite``
        runtime=runtime,
        limits=limits,
        workload_env=command.workload_env,
        labels={HELD_OUT_LABEL: "held-out-suite"},
        environment=environment,
    )
    try:
        result, duration_ms = _run_suite(final_tree, pristine, backend, request, cancel)
        verdict = judge_run(result, runner)
        covered = original.check(result) if verdict.passed else None
    finally:
        original.stop()
    passed, reason = verdict.passed, verdict.reason
    if covered is not None and covered.reason is not None:
        passed, reason = False, covered.reason
    return HeldOutResult(
        ran=True,
        passed=passed,
        status=result.status,
        reason=reason,
        tests_run=verdict.tests_run,
        failures=verdict.failures,
        errors=verdict.errors,
        exit_code=result.exit_code,
        attested=result.attested,
        duration_ms=duration_ms,
        judge="in_process",
    )


def _run_suite(
    final_tree: Path,
    pristine: Path,
    backend: SandboxBackend,
    request: SandboxRequest,
    cancel: CancelToken | None,
) -> tuple[SandboxResult, float]:
    """``request`` run on a copy of ``final_tree`` with ``pristine``'s tests laid over
    it, and how long it took (ms)."""
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-heldout-") as scratch:
        os.chmod(scratch, _READABLE_DIR)
        root = Path(scratch) / "workspace"
        copy_regular_tree(final_tree, root)
        overlay_protected(pristine, root)
        started = time.monotonic()
        result = backend.run(request.model_copy(update={"workspace": root}), cancel)
        return result, (time.monotonic() - started) * 1000


def run_held_out(
    final_tree: Path,
    held_out_dir: Path,
    backend: SandboxBackend,
    *,
    module: str = "test_heldout",
    runtime: Runtime = "runc",
    limits: SandboxLimits | None = None,
    cancel: CancelToken | None = None,
    environment: EnvironmentMount | None = None,
) -> HeldOutResult:
    """Judge the held-out module against a copy of ``final_tree``.

    Args:
        final_tree: the agent's final workspace (copied, never changed).
        held_out_dir: folder holding ``<module>.py``, written against
            ``sandbox_supervisor.remote.candidate``.
        backend: the sandbox backend that runs the judge and the candidate.
        module: the held-out unittest module's name.
        runtime: ``runc`` or ``runsc``.
        limits: the sandbox limits (the task's test timeout among them).
        cancel: stops the run early.
        environment: the repository's dependency environment: the candidate imports
            from it, the judge never does.

    Raises:
        FileNotFoundError: the held-out module is missing (a broken task, not a failed run).
    """
    path = held_out_dir / f"{module}.py"
    if not path.is_file():
        raise FileNotFoundError(f"held-out module {held_out_dir / module}.py is missing")
    judge = JudgeRequest(module_name=module, source=path.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-heldout-") as scratch:
        os.chmod(scratch, _READABLE_DIR)
        root = Path(scratch) / "workspace"
        copy_regular_tree(final_tree, root)
        request = SandboxRequest(
            argv=JUDGE_ARGV,
            workspace=root,
            runtime=runtime,
            limits=limits or SandboxLimits(),
            labels={HELD_OUT_LABEL: "held-out"},
            judge=judge,
            environment=environment,
        )
        started = time.monotonic()
        result = backend.run(request, cancel)
        return verdict(result, (time.monotonic() - started) * 1000)
