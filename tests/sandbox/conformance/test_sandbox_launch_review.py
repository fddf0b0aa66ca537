"""Security review of ``launch=fork`` in the real image: an honest suite it breaks.

Finding F2 of ``tests/supervisor/test_supervisor_launch_review.py``, end to end: PID 1
runs ``-S``, the forked runner keeps ``sys.flags.no_site == 1``, so a Python started
"like this one" (``subprocess._args_from_interpreter_flags()``, as multiprocessing and
test suites do) gets ``-S`` and cannot import pytest from ``dist-packages``. Exec'd,
the same suite passes (the reference, runc only to keep the run short).
"""

from __future__ import annotations

import shutil
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_agent.policy.commands import runner_command
from sandbox_agent.sandbox.base import SandboxLimits, SandboxRequest
from sandbox_agent.sandbox.docker_backend import DockerBackend

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
FORK_HOLE = pytest.mark.xfail(
    strict=True, reason="F2: the forked runner passes -S to Pythons started like itself"
)


@pytest.fixture(scope="module")
def backend() -> Iterator[DockerBackend]:
    from sandbox_agent.hostsetup.image import ensure

    instance = DockerBackend(image_id=ensure().image_id)
    yield instance
    instance.close()


@pytest.mark.parametrize(
    ("runtime", "launch"),
    [
        pytest.param("runc", "exec", id="runc-exec"),
        pytest.param("runc", "fork", id="runc-fork", marks=FORK_HOLE),
        pytest.param("runsc", "fork", id="runsc-fork", marks=[FORK_HOLE, pytest.mark.runsc]),
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
