"""PID 1's start-up stays cheap: it imports no module it can do without (issue 3).

Every module PID 1 imports is paid for on every sandbox run, before attestation can
start; under gVisor each import's file look-ups cost several times more. These tests
run PID 1's exact interpreter flags on the host, in a fresh process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parents[2] / "src"
HEAVY = (
    "dataclasses",
    "inspect",
    "pathlib",
    "typing",
    "traceback",
    "socket",
    "selectors",
    "signal",
    "collections.abc",
    "json",
    "re",
    "enum",
)
"""Each cost 10-27 ms of PID 1's start-up inside the container before issue 3 (json
through re, enum and functools: see ``fastjson``)."""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    prelude = f"import sys; sys.path.insert(0, {str(SRC)!r}); "
    return subprocess.run(
        [sys.executable, "-I", "-B", "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_pid1_imports_none_of_the_heavy_modules() -> None:
    done = _python(
        "import sandbox_supervisor.__main__; loaded = sorted(sys.modules); "
        "import json; print(json.dumps(loaded))"
    )
    assert done.returncode == 0, done.stderr
    modules = set(json.loads(done.stdout))
    assert "sandbox_supervisor.relay" in modules
    assert modules.isdisjoint(HEAVY), sorted(modules & set(HEAVY))
    assert not {"sandbox_supervisor.run_tests", "sandbox_supervisor.tripwire"} & modules


@pytest.mark.parametrize(
    "module",
    [
        "sandbox_supervisor.protocol",
        "sandbox_supervisor.attest",
        "sandbox_supervisor.inside",
        "sandbox_supervisor.syscalls",
    ],
)
def test_type_only_imports_stay_type_only(module: str) -> None:
    done = _python(f"import {module}; print('typing' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_crash_of_pid1_still_reports_its_traceback() -> None:
    code = (
        "import sandbox_supervisor.__main__ as pid1\n"
        "def boom(*args, **kwargs): raise RuntimeError('boom')\n"
        "pid1.supervise = boom\n"
        "pid1.read_config = lambda fd, timeout_s: '{}'\n"
        "sys.exit(pid1.main([]))\n"
    )
    done = _python(code)
    assert done.returncode == 126, done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    assert "RuntimeError: boom" in done.stderr


def test_pid1_flushes_its_stderr_before_skipping_finalization() -> None:
    done = _python(
        "sys.argv[1:] = ['{}']; import runpy; "
        "runpy.run_module('sandbox_supervisor', run_name='__main__')"
    )
    assert done.returncode == 125
    assert done.stderr.startswith("usage: python3 -I -B -m sandbox_supervisor (config on stdin)")
