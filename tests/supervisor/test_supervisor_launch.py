"""The trusted runner in PID 1's forked interpreter: what ``execve`` would reset is reset.

PID 1 runs the trusted runner wrapper without a second interpreter start when its argv
is exactly the runner's, started by PID 1's own binary and flags (``launch``). These
tests run PID 1's logic in ``/usr/bin/python3 -I -B`` (its exact interpreter and
flags in the image) on the host, with a stand-in attestation, and look at the workload
from inside: environment, descriptors, signals, dumpable flag, ``site``, ``sys.argv``,
and the interpreter's end (threads, ``atexit``). The Docker conformance suite checks
the same on both runtimes.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import valid_config

from sandbox_supervisor import launch, protocol

SRC = Path(__file__).parents[2] / "src"
PYTHON = "/usr/bin/python3"
NONCE = "0123456789abcdef0123456789abcdef"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "MARKER": "workload-only"}
"""With ``LANG`` set, as in the container (``spec.BASE_ENV``): without it a fresh
interpreter coerces the C locale and adds ``LC_CTYPE`` (PEP 538); PID 1 has the same
locale as the workload because both start from the container's ``LANG``."""

pytestmark = pytest.mark.skipif(not Path(PYTHON).exists(), reason="needs Debian's python3")

PID1 = f"""
import os, signal, sys
sys.path.insert(0, {str(SRC)!r})
from sandbox_supervisor.__main__ import supervise
from sandbox_supervisor.attest import Check
os.environ["PID1_ONLY"] = "secret-looking"
passing = lambda config: [Check("host", True, "")]
# As PID 1's main() does: SIGINT at its default whatever this process inherited (a test
# run started in the background inherits it ignored, and an exec'd runner keeps that).
signal.signal(signal.SIGINT, signal.SIG_DFL)
code = supervise(
    sys.argv[1], 1, attester=passing, read_oom=lambda: None, drop=lambda uid, gid: None
)
os._exit(code)
"""

PROBE = """
import ctypes, json, os, signal, sys, unittest

class Probe(unittest.TestCase):
    def test_probe(self):
        libc = ctypes.CDLL(None, use_errno=True)
        facts = {
            "env": dict(os.environ),
            "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
            "sigint": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
            "sigpipe": signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN,
            "dumpable": libc.prctl(3, 0, 0, 0, 0),
            "argv0": sys.argv[0],
            "site": "site" in sys.modules,
            "cwd": os.getcwd(),
            "leader": os.getpgid(0) == os.getpid() == os.getsid(0),
            "workspace_first": sys.path[0] == os.getcwd(),
        }
        print("FACTS " + json.dumps(facts))
"""


def _pid1(workspace: Path, args: list[str], argv: list[str] | None = None) -> dict[str, Any]:
    config = valid_config(
        nonce=NONCE, argv=argv or [*launch.RUNNER_ARGV, *args], cwd=str(workspace), workload_env=ENV
    )
    done = subprocess.run(
        [PYTHON, "-I", "-B", "-c", PID1, json.dumps(config)],
        input=protocol.GO,  # the host's go on PID 1's stdin
        capture_output=True,
        timeout=60,
        check=False,
    )
    decoder = protocol.FrameDecoder()
    frames = list(decoder.feed(done.stdout))
    assert decoder.pending == 0, done.stderr
    (exit_report,) = [json.loads(p) for kind, p in frames if kind == protocol.KIND_EXIT]
    output = b"".join(
        p for kind, p in frames if kind in (protocol.KIND_STDOUT, protocol.KIND_STDERR)
    ).decode()
    # A line is looked up in its own stream: the two arrive interleaved in read order,
    # and unittest's progress dot on stderr can land inside a stdout line (issue 21).
    stdout = b"".join(p for kind, p in frames if kind == protocol.KIND_STDOUT).decode()
    return {"report": exit_report, "output": output, "stdout": stdout, "pid1_exit": done.returncode}


def _workspace(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
    return tmp_path


def _facts(output: str) -> dict[str, Any]:
    (line,) = [line for line in output.splitlines() if line.startswith("FACTS ")]
    facts: dict[str, Any] = json.loads(line.removeprefix("FACTS "))
    return facts


def test_the_runner_runs_forked_with_what_execve_would_have_reset(tmp_path: Path) -> None:
    run = _pid1(_workspace(tmp_path, test_probe=PROBE), ["unittest"])
    report = run["report"]
    assert report["launch"] == "fork"
    assert report["exit_code"] == run["pid1_exit"] == 0, run["output"]
    assert report["runner_report"]["tests_run"] == 1
    facts = _facts(run["stdout"])
    assert facts["env"] == ENV  # PID 1's own variables are gone
    # stdin, stdout, stderr, the report pipe run_tests moved off fd 3, listdir's own fd
    assert len(facts["fds"]) == 5
    assert facts["fds"][:3] == [0, 1, 2]
    assert facts["sigint"]
    assert facts["sigpipe"]
    assert facts["dumpable"] == 1
    assert facts["argv0"].endswith("sandbox_supervisor/run_tests.py")
    assert facts["site"]
    assert facts["cwd"] == str(tmp_path)
    assert facts["leader"]
    assert facts["workspace_first"]


def test_the_same_probe_exec_d_sees_the_same(tmp_path: Path) -> None:
    """The reference: the same facts when a fresh ``-I -B`` interpreter runs the wrapper."""
    workspace = _workspace(tmp_path, test_probe=PROBE)
    fresh = (  # -m as on the image, with this checkout on sys.path (-I ignores PYTHONPATH)
        f"import runpy, sys; sys.path.insert(0, {str(SRC)!r}); sys.argv[1:] = ['unittest']; "
        f"runpy.run_module({launch.RUNNER_MODULE!r}, run_name='__main__', alter_sys=True)"
    )
    argv = [PYTHON, "-I", "-B", "-c", fresh]
    run = _pid1(workspace, [], argv=argv)
    assert run["report"]["launch"] == "exec"
    forked = _facts(_pid1(workspace, ["unittest"])["stdout"])
    exec_d = _facts(run["stdout"])
    assert forked == exec_d


def test_threads_and_atexit_finish_as_in_a_fresh_interpreter(tmp_path: Path) -> None:
    code = """
        import atexit, threading, time, unittest

        class Late(unittest.TestCase):
            def test_late(self):
                atexit.register(lambda: print("atexit ran", flush=True))
                def work():
                    time.sleep(0.3)
                    print("thread finished", flush=True)
                threading.Thread(target=work).start()
    """
    run = _pid1(_workspace(tmp_path, test_late=code), ["unittest"])
    assert run["report"]["launch"] == "fork"
    assert run["report"]["exit_code"] == 0
    assert "thread finished" in run["output"]
    assert "atexit ran" in run["output"]
    assert run["output"].index("thread finished") < run["output"].index("atexit ran")


def test_a_failing_suite_and_a_usage_error_keep_their_exit_codes(tmp_path: Path) -> None:
    failing = "import unittest\nclass T(unittest.TestCase):\n    def test_x(self): self.fail()\n"
    workspace = _workspace(tmp_path, test_fail=failing)
    assert _pid1(workspace, ["unittest"])["report"]["exit_code"] == 1
    usage = _pid1(workspace, ["nose"])
    assert usage["report"]["exit_code"] == 2
    assert "usage: run_tests" in usage["output"]


def test_a_frame_printed_by_the_forked_runner_is_only_data(tmp_path: Path) -> None:
    forged = protocol.encode_frame(protocol.KIND_EXIT, b'{"type": "exit"}')
    code = f"""
        import os, unittest

        class Forge(unittest.TestCase):
            def test_forge(self):
                for fd in range(3, 256):
                    try:
                        os.write(fd, {forged!r})
                    except OSError:
                        pass
                os.write(1, {forged!r})
    """
    run = _pid1(_workspace(tmp_path, test_forge=code), ["unittest"])
    assert run["report"]["launch"] == "fork"
    assert run["report"]["exit_code"] == 0  # one exit record: PID 1's; the forgery is data
    assert run["report"]["runner_report_error"] is not None  # the report pipe got garbage


@pytest.mark.parametrize(
    "argv",
    [
        ["python3", "-I", "-B", "-m", launch.RUNNER_MODULE, "unittest"],
        [PYTHON, "-I", "-B", "-m", launch.RUNNER_MODULE + "x", "unittest"],
        [PYTHON, "-I", "-B", "-X", "dev", "-m", launch.RUNNER_MODULE, "unittest"],
        [PYTHON, "-B", "-I", "-m", launch.RUNNER_MODULE, "unittest"],
        [PYTHON, "-I", "-B", "-c", "pass"],
    ],
)
def test_only_the_exact_runner_argv_runs_forked(argv: list[str]) -> None:
    check = (
        f"import sys; sys.path.insert(0, {str(SRC)!r}); from sandbox_supervisor import launch; "
        f"env = {ENV!r}; runner = {list(launch.RUNNER_ARGV)!r}; "
        f"print(launch.in_process({argv!r}, env), launch.in_process(runner, env))"
    )
    done = subprocess.run(
        [PYTHON, "-I", "-B", "-c", check], capture_output=True, text=True, check=True, env=ENV
    )
    assert done.stdout.split() == ["False", "True"]
    for flags in (["-B"], ["-I"], ["-I", "-S", "-B"]):  # PID 1 not started as the runner is
        other = subprocess.run(
            [PYTHON, *flags, "-c", check], capture_output=True, text=True, check=True, env=ENV
        )
        assert other.stdout.split() == ["False", "False"], flags


@pytest.mark.parametrize(
    "change", [{"LANG": "C"}, {"LC_ALL": "C"}, {"TZ": "Asia/Tokyo"}, {"LC_CTYPE": "POSIX"}]
)
def test_a_different_start_up_environment_is_exec_d(change: dict[str, str]) -> None:
    """Locale, UTF-8 mode and time zone are read once at start-up: a workload whose
    environment sets them differently from PID 1's gets a fresh interpreter."""
    check = (
        f"import sys; sys.path.insert(0, {str(SRC)!r}); from sandbox_supervisor import launch; "
        f"argv = {list(launch.RUNNER_ARGV)!r}; env = {ENV!r}; "
        f"print(launch.in_process(argv, env), launch.in_process(argv, {{**env, **{change!r}}}))"
    )
    done = subprocess.run(
        [PYTHON, "-I", "-B", "-c", check], capture_output=True, text=True, check=True, env=ENV
    )
    assert done.stdout.split() == ["True", "False"]


def test_the_host_allowlist_starts_the_runner_pid1_recognises() -> None:
    from sandbox_agent.policy.commands import COMMAND_ALLOWLIST

    for argv in COMMAND_ALLOWLIST.values():
        assert argv[: len(launch.RUNNER_ARGV)] == launch.RUNNER_ARGV
    assert os.path.basename(launch.RUNNER_ARGV[0]) == "python3"
