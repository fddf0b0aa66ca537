"""Held-out tests: run on the agent's final tree, in a fresh verified sandbox.

The agent never sees them: they live under ``evals/held_out`` (or a generated folder
for external suites), are copied into a package with a random name that did not exist
in the workspace, and are run by the trusted runner wrapper with a dotted selector, so
nothing else in the tree (a malicious test module, say) is collected.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sandbox_agent.sandbox.base import (
    CancelToken,
    Runtime,
    SandboxBackend,
    SandboxLimits,
    SandboxRequest,
    SandboxResult,
)

RUNNER_WRAPPER: tuple[str, ...] = (
    "/usr/bin/python3",
    "-I",
    "-B",
    "-m",
    "sandbox_supervisor.run_tests",
)
"""The trusted runner wrapper inside the image (docs/SANDBOX_PROTOCOL.md, "Exit report")."""
HELD_OUT_LABEL = "sandbox-agent.eval"
_READABLE_FILE = 0o644
_READABLE_DIR = 0o755


class HeldOutResult(BaseModel):
    """What the held-out run established. ``passed`` only from the runner's own report."""

    model_config = ConfigDict(extra="forbid")

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


def not_run(reason: str) -> HeldOutResult:
    """A held-out result for a run that left no final tree (it counts as a failure)."""
    return HeldOutResult(ran=False, passed=False, status="not run", reason=reason)


def verdict(result: SandboxResult, duration_ms: float) -> HeldOutResult:
    """Judge one sandbox result: pass only with a completed, attested run whose runner
    report says at least one test ran and none failed or errored, and exit code 0."""
    report = result.runner_report
    tests_run = report.tests_run if report else 0
    failures = report.failures if report else 0
    errors = report.errors if report else 0
    passed = (
        result.status == "completed"
        and result.attested
        and result.exit_code == 0
        and report is not None
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


def run_held_out(
    final_tree: Path,
    held_out_dir: Path,
    backend: SandboxBackend,
    *,
    module: str = "test_heldout",
    runtime: Runtime = "runc",
    limits: SandboxLimits | None = None,
    cancel: CancelToken | None = None,
) -> HeldOutResult:
    """Run the held-out module against a copy of ``final_tree``.

    Args:
        final_tree: the agent's final workspace (copied, never changed).
        held_out_dir: folder holding ``<module>.py`` (and any data it needs).
        backend: the sandbox backend that runs the runner wrapper.
        module: the held-out unittest module's name.
        runtime: ``runc`` or ``runsc``.
        limits: the sandbox limits (the task's test timeout among them).
        cancel: stops the run early.

    Raises:
        FileNotFoundError: the held-out module is missing (a broken task, not a failed run).
    """
    if not (held_out_dir / f"{module}.py").is_file():
        raise FileNotFoundError(f"held-out module {held_out_dir / module}.py is missing")
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-heldout-") as scratch:
        os.chmod(scratch, _READABLE_DIR)
        root = Path(scratch) / "workspace"
        copy_regular_tree(final_tree, root)
        package = f"heldout_{secrets.token_hex(6)}"
        copy_regular_tree(held_out_dir, root / package)
        init = root / package / "__init__.py"
        init.write_text("", encoding="utf-8")
        os.chmod(init, _READABLE_FILE)
        request = SandboxRequest(
            argv=(*RUNNER_WRAPPER, "unittest", f"{package}.{module}"),
            workspace=root,
            runtime=runtime,
            limits=limits or SandboxLimits(),
            labels={HELD_OUT_LABEL: "held-out"},
        )
        started = time.monotonic()
        result = backend.run(request, cancel)
        return verdict(result, (time.monotonic() - started) * 1000)
