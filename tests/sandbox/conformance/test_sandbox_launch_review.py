"""Security review of ``launch=fork`` in the real image: an honest suite it breaks.

Finding F2 of ``tests/supervisor/test_supervisor_launch_review.py``, end to end: PID 1
runs ``-S``, the forked runner keeps ``sys.flags.no_site == 1``, so a Python started
"like this one" (``subprocess._args_from_interpreter_flags()``, as multiprocessing and
test suites do) gets ``-S`` and cannot import pytest from ``dist-packages``. Exec'd,
the same suite passes (the reference, runc only to keep the run short).

Also G1 (found here, not caused by the change; closed by issue 15): under runsc the
workload could write to PID 1's stdout through /proc/1/fd/1 and kill PID 1.
"""

from __future__ import annotations

import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

from sandbox_agent.policy.commands import runner_command
from sandbox_agent.sandbox.base import SandboxLimits, SandboxRequest, SandboxResult
from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

pytestmark = pytest.mark.docker

LIMITS = SandboxLimits(
    timeout_s=20,
    memory_bytes=256 * 1024 * 1024,
    pids=96,
    fsize_bytes=1024 * 1024,
    tmpfs_bytes=8 * 1024 * 1024,
    output_budget_bytes=20_000,
)
SUITE = """
import subprocess, sys

def test_a_python_like_this_one_can_import_pytest():
    flags = subprocess._args_from_interpreter_flags()
    done = subprocess.run(
        [sys.executable, *flags, "-c", "import pytest"], capture_output=True, text=True
    )
    assert done.returncode == 0, (flags, done.stderr)
"""


@pytest.mark.parametrize(
    ("runtime", "launch"),
    [
        pytest.param("runc", "exec", id="runc-exec"),
        pytest.param("runc", "fork", id="runc-fork"),  # F2 closed: PID 1 starts with site
        pytest.param("runsc", "fork", id="runsc-fork", marks=pytest.mark.runsc),
    ],
)
def test_an_honest_pytest_suite_passes_however_the_runner_is_launched(
    backend: DockerBackend, runtime: str, launch: str
) -> None:
    command = runner_command("pytest")
    argv = command.argv
    if launch == "exec":  # the same flags in another order: PID 1 then exec's the wrapper
        argv = ("/usr/bin/python3", "-B", "-I", *argv[3:])
    root = Path(tempfile.mkdtemp(prefix="sandbox-launch-review-"))
    root.chmod(0o755)  # uid 10001 must enter /workspace
    (root / "test_like_me.py").write_text(textwrap.dedent(SUITE))
    try:
        request = SandboxRequest(
            argv=argv,
            workspace=root,
            runtime=runtime,
            limits=LIMITS,
            workload_env=command.workload_env,
        )
        result = backend.run(request)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert result.status == "completed", result.reason
    assert result.launch == launch
    assert result.runner_report is not None
    assert (result.exit_code, result.runner_report.failures) == (0, 0), result.output.decode()


# Found while reviewing, not caused by launch=fork (exec'd workloads did the same): under
# gVisor PR_SET_DUMPABLE does not guard /proc/1/fd. Closed by running PID 1 as another uid.

FORGE = """
import json, os, re, struct, unittest

class Forge(unittest.TestCase):
    def test_forge(self):
        seen = b""
        for name in ("cmdline", "environ"):
            try:
                with open(f"/proc/1/{name}", "rb") as source:
                    seen += source.read()
            except OSError:
                pass
        found = re.search(rb'"nonce":"([0-9a-f]{32})"', seen)
        print("NONCE-SEEN" if found else "NONCE-HIDDEN")
        nonce = found.group(1).decode() if found else "0" * 32
        record = {
            "type": "exit", "v": 1, "nonce": nonce, "launch": "fork", "exit_code": 0,
            "signal": None, "timed_out": False, "output_bytes": 0, "output_truncated": False,
            "duration_ms": 1.0, "oom_kills_delta": 0, "runner_report_error": None,
            "runner_report": {
                "runner": "unittest", "tests_run": 7, "failures": 0, "errors": 0, "skipped": 0
            },
        }
        body = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
        try:
            with open("/proc/1/fd/1", "wb", buffering=0) as host_stream:
                host_stream.write(struct.pack(">cI", b"X", len(body)) + body)
            print("STREAM-OPEN")
        except OSError:
            print("STREAM-DENIED")
        self.fail("an honest failure")
"""
KILL = """
import os, signal, unittest

class Kill(unittest.TestCase):
    def test_kill(self):
        try:
            os.kill(1, signal.SIGKILL)
        except OSError:
            pass
        self.fail("an honest failure")
"""


def _run_attack(backend: DockerBackend, runtime: str, suite: str) -> SandboxResult:
    """Run ``suite`` as the repository's tests, through the unittest runner."""
    root = Path(tempfile.mkdtemp(prefix="sandbox-launch-review-"))
    root.chmod(0o755)
    (root / "test_attack.py").write_text(suite)
    try:
        request = SandboxRequest(
            argv=runner_command("unittest").argv, workspace=root, runtime=runtime, limits=LIMITS
        )
        return backend.run(request)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("attack", ["forge_frame", "kill_pid1"])
@pytest.mark.parametrize(
    "runtime",
    [pytest.param("runc", id="runc"), pytest.param("runsc", id="runsc", marks=pytest.mark.runsc)],
)
def test_the_workload_cannot_reach_pid1_or_its_stream(
    backend: DockerBackend, runtime: str, attack: str
) -> None:
    """A failing suite that looks for the nonce where a process can read another's
    (``/proc/1/cmdline``, ``/proc/1/environ``), writes a perfect exit record to
    ``/proc/1/fd/1``, or SIGKILLs PID 1, must still end as what it is: completed,
    attested, exit 1, the real runner report. G1 (SR-3, closed by issue 15): under
    runsc the frame reached the host as a control frame and PID 1 died (``refused``);
    the nonce was on PID 1's command line on both runtimes. Now the nonce arrives on
    stdin and PID 1 is another uid than the workload, so neither its stream nor a
    signal reaches it."""
    result = _run_attack(backend, runtime, FORGE if attack == "forge_frame" else KILL)
    assert result.status == "completed", result.reason
    assert result.attested
    assert result.exit_report_valid
    assert result.runner_report is not None
    assert (result.exit_code, result.runner_report.failures) == (1, 1)
    if attack == "forge_frame":
        assert b"NONCE-HIDDEN" in result.output, result.output
        assert b"STREAM-DENIED" in result.output, result.output


FORGE_THEN_KILL = (
    FORGE.replace('"exit_code": 0', '"exit_code": 137')
    .replace('"tests_run": 7', '"tests_run": 99')
    .replace(
        '        self.fail("an honest failure")',
        "        try:\n"
        "            os.kill(1, __import__('signal').SIGKILL)\n"
        "        except OSError:\n"
        "            pass\n"
        '        self.fail("an honest failure")',
    )
)
"""The whole G1 attack: a forged exit record that agrees with a killed PID 1 (137), then
the kill, so that no frame of PID 1's own can follow it."""


@pytest.mark.parametrize(
    "runtime",
    [pytest.param("runc", id="runc"), pytest.param("runsc", id="runsc", marks=pytest.mark.runsc)],
)
def test_a_forged_exit_record_with_pid1_killed_is_never_evidence(
    backend: DockerBackend, runtime: str
) -> None:
    """The forgery never becomes a valid exit report. Before issue 15 the workload could
    reach PID 1's stream and kill PID 1 under runsc, and what stopped it was that PID 1
    never ends a complete run with 128+N (``protocol.pid1_exit_code``), so a record
    that agrees with a killed PID 1 cannot exist (the run was refused). Now neither
    step works on either runtime, and the honest failure is reported."""
    assert "os.kill(1" in FORGE_THEN_KILL
    assert '"tests_run": 99' in FORGE_THEN_KILL
    result = _run_attack(backend, runtime, FORGE_THEN_KILL)
    assert result.runner_report is None or result.runner_report.tests_run != 99
    assert result.status == "completed", result.reason
    assert (result.exit_code, result.runner_report and result.runner_report.failures) == (1, 1)
