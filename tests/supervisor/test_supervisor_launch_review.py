"""Security review of ``launch=fork``: the trusted runner in PID 1's forked interpreter.

Each probe is a repository test (the code an attacker controls) run by PID 1's real
logic under ``/usr/bin/python3 -I -B`` (PID 1's flags) on the host, as in
``test_supervisor_launch``.
Probes that state what a freshly exec'd ``python3 -I -B -m`` gives are run both ways:
exec'd (the reference, must pass) and forked. A forked run that differs is a strict
xfail naming the hole, so closing it turns the test red until the mark is removed.

The containment tests (no route to the host stream even when the runner falls back
into PID 1's own code, deadline, output budget) must pass in fork mode as they do
exec'd.
"""

from __future__ import annotations

import ast
import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import valid_config

from sandbox_agent.sandbox.docker.spec import SUPERVISOR_COMMAND
from sandbox_supervisor import launch, protocol

SRC = Path(__file__).parents[2] / "src"
PYTHON = "/usr/bin/python3"
NONCE = "fedcba9876543210fedcba9876543210"
PID1_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
"""PID 1's own environment (the container's: ``spec.BASE_ENV``)."""
PID1_INTERPRETER = SUPERVISOR_COMMAND[: SUPERVISOR_COMMAND.index("-m")]
"""PID 1's interpreter and flags, as the container starts it (F2 was a flag of PID 1's)."""

pytestmark = pytest.mark.skipif(not Path(PYTHON).exists(), reason="needs Debian's python3")

PID1 = f"""
import ctypes, os, signal, sys
sys.path.insert(0, {str(SRC)!r})
from sandbox_supervisor.__main__ import supervise
from sandbox_supervisor.attest import Check
libc = ctypes.CDLL(None)
libc.getauxval.restype = ctypes.c_ulong
secrets = {{
    "at_random": ctypes.string_at(libc.getauxval(25), 16).hex(),
    "hash_secret": bytes((ctypes.c_char * 24).in_dll(ctypes.pythonapi, "_Py_HashSecret")).hex(),
}}
with open(sys.argv[2], "w") as out:
    out.write(repr(secrets))
passing = lambda config: [Check("host", True, "")]
# As PID 1's main() does: SIGINT at its default whatever this process inherited (a test
# run started in the background inherits it ignored, and an exec'd runner keeps that).
signal.signal(signal.SIGINT, signal.SIG_DFL)
code = supervise(
    sys.argv[1], 1, attester=passing, read_oom=lambda: None, drop=lambda uid, gid: None
)
os._exit(code)
"""
"""PID 1's logic with a stand-in attestation; first it records its own secrets."""

FRESH = (
    f"import runpy, sys; sys.path.insert(0, {str(SRC)!r}); sys.argv[1:] = ['unittest']; "
    f"runpy.run_module({launch.RUNNER_MODULE!r}, run_name='__main__', alter_sys=True)"
)
"""The exec'd reference: a fresh ``-I -B`` interpreter running the wrapper as ``-m`` would
(``-c`` only because this checkout is not on the host's stdlib path)."""


def _launches(hole: str) -> list[Any]:
    """Exec'd (the reference, must pass) and forked (a strict xfail naming the hole)."""
    return [
        pytest.param("exec", id="exec"),
        pytest.param("fork", id="fork", marks=pytest.mark.xfail(strict=True, reason=hole)),
    ]


def _pid1(
    tmp_path: Path,
    launch_mode: str,
    *,
    env: dict[str, str] | None = None,
    deadline_s: float = 20.0,
    output_budget: int = 1 << 20,
    expect_launch: str | None = None,
) -> dict[str, Any]:
    workspace = tmp_path / "ws"
    argv = [*launch.RUNNER_ARGV, "unittest"]
    if launch_mode == "exec":
        argv = [PYTHON, "-I", "-B", "-c", FRESH]
    config = valid_config(
        nonce=NONCE,
        argv=argv,
        cwd=str(workspace),
        workload_env=env or PID1_ENV,
        deadline_s=deadline_s,
        kill_grace_s=0.5,
        output_budget=output_budget,
    )
    config["expect"]["env"] = PID1_ENV
    secrets = tmp_path / "pid1_secrets"
    done = subprocess.run(
        [*PID1_INTERPRETER, "-c", PID1, json.dumps(config), str(secrets)],
        input=protocol.GO,  # the host's go on PID 1's stdin
        capture_output=True,
        timeout=60,
        check=False,
        env=PID1_ENV,
    )
    decoder = protocol.FrameDecoder()
    frames = list(decoder.feed(done.stdout))
    assert decoder.pending == 0, done.stderr
    exits = [json.loads(p) for kind, p in frames if kind == protocol.KIND_EXIT]
    assert len(exits) == 1, done.stderr  # PID 1's own, and only it
    assert exits[0]["launch"] == (expect_launch or launch_mode)
    # Frames of the two streams arrive interleaved in read order, so a line is looked
    # up in its own stream: unittest's progress dot on stderr can land in the middle
    # of a stdout line in the merged output (issue 21: ".SECRETS {...}").
    output = b"".join(
        p for kind, p in frames if kind in (protocol.KIND_STDOUT, protocol.KIND_STDERR)
    )
    stdout = b"".join(p for kind, p in frames if kind == protocol.KIND_STDOUT)
    return {
        "report": exits[0],
        "output": output.decode(errors="replace"),
        "stdout": stdout.decode(errors="replace"),
        "pid1_secrets": secrets.read_text(),
        "pid1_stderr": done.stderr.decode(errors="replace"),
    }


def _workspace(tmp_path: Path, **files: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, text in files.items():
        (workspace / f"{name}.py").write_text(textwrap.dedent(text))


def _passed(run: dict[str, Any]) -> bool:
    runner = run["report"]["runner_report"] or {}
    return bool(
        run["report"]["exit_code"] == 0 and runner.get("tests_run") and not runner["failures"]
    )


# ---------------------------------------------------------------- findings (strict xfail)


@pytest.mark.parametrize(
    "launch_mode",
    _launches(
        "F1: the forked runner holds PID 1's canary, pointer guard, hash secret and ASLR layout"
    ),
)
def test_the_runner_does_not_hold_pid1s_exploit_mitigation_secrets(
    tmp_path: Path, launch_mode: str
) -> None:
    """Finding F1 (low): the forked child has PID 1's AT_RANDOM bytes (glibc's stack
    canary and pointer-mangling key), its ``_Py_HashSecret`` and its whole address
    layout (ASLR), and, being made dumpable, exposes them to every workload process
    through ``/proc/<pid>/mem``. An exec'd workload learns none of them. PID 1 parses
    bytes the workload controls (pipe data, the runner report through ``_json``), so
    these are the mitigations standing between a memory-safety bug there and PID 1."""
    probe = """
        import ctypes, unittest

        class Secrets(unittest.TestCase):
            def test_secrets(self):
                libc = ctypes.CDLL(None)
                libc.getauxval.restype = ctypes.c_ulong
                mine = {
                    "at_random": ctypes.string_at(libc.getauxval(25), 16).hex(),
                    "hash_secret": bytes(
                        (ctypes.c_char * 24).in_dll(ctypes.pythonapi, "_Py_HashSecret")
                    ).hex(),
                }
                print("SECRETS " + repr(mine))
    """
    _workspace(tmp_path, test_secrets=probe)
    run = _pid1(tmp_path, launch_mode)
    assert _passed(run), run["output"]
    (line,) = [x for x in run["stdout"].splitlines() if x.startswith("SECRETS ")]
    mine = ast.literal_eval(line.removeprefix("SECRETS "))
    pid1 = ast.literal_eval(run["pid1_secrets"])
    assert mine["at_random"] != pid1["at_random"]
    assert mine["hash_secret"] != pid1["hash_secret"]


@pytest.mark.parametrize(
    "launch_mode",
    ["exec", "fork"],  # F2 closed: PID 1 now starts with site, as the runner does
)
def test_a_python_started_with_the_runners_own_flags_gets_site(
    tmp_path: Path, launch_mode: str
) -> None:
    """Finding F2 (low, fidelity): PID 1 runs ``-S``; ``site.main()`` adds the paths but
    ``sys.flags.no_site`` stays 1, so ``subprocess._args_from_interpreter_flags()``
    (how the stdlib and test suites start "a Python like this one") passes ``-S`` on,
    and that child cannot import anything from ``dist-packages`` (pytest in the image).
    An honest repository test that does this fails forked and passes exec'd."""
    probe = """
        import subprocess, sys, unittest

        class Flags(unittest.TestCase):
            def test_flags(self):
                self.assertEqual(sys.flags.no_site, 0)
                self.assertNotIn("-S", subprocess._args_from_interpreter_flags())
    """
    _workspace(tmp_path, test_flags=probe)
    run = _pid1(tmp_path, launch_mode)
    assert _passed(run), run["output"]


@pytest.mark.parametrize(
    "launch_mode",
    ["exec", "fork"],  # F3 closed: launch flushes every open buffered file
)
def test_open_files_are_flushed_when_the_runner_ends(tmp_path: Path, launch_mode: str) -> None:
    """Finding F3 (low, fidelity): ``launch._shutdown`` flushes only the current
    ``sys.stdout``/``sys.stderr`` before ``os._exit``. A real interpreter's finalization
    also flushes every other buffered file still alive (module globals, a replaced
    ``sys.__stdout__``): their last output is lost forked."""
    probe = """
        import unittest

        class Late(unittest.TestCase):
            def test_late(self):
                global LOG
                LOG = open(1, "w", closefd=False)
                LOG.write("BUFFERED-UNTIL-EXIT\\n")
    """
    _workspace(tmp_path, test_late=probe)
    run = _pid1(tmp_path, launch_mode)
    assert _passed(run), run["output"]
    assert "BUFFERED-UNTIL-EXIT" in run["output"]


@pytest.mark.parametrize(
    "launch_mode",
    ["exec", "fork"],  # F4 closed: a different start-up environment is exec'd
)
def test_the_workload_environment_decides_locale_and_time_zone(
    tmp_path: Path, launch_mode: str
) -> None:
    """Finding F4 (low, latent): ``in_process`` looks only at argv. What a fresh
    interpreter derives from its environment at start-up stays PID 1's: UTF-8 mode and
    the ``LC_CTYPE`` locale (PEP 538/540), and ``time.timezone``/``tzname`` (``time``
    is imported by PID 1). ``SandboxRequest.workload_env`` may set ``LC_ALL``/``TZ``;
    forked they are in ``os.environ`` but not in effect. (The allowlist sets neither
    today, so no current run is affected.)"""
    probe = """
        import locale, sys, time, unittest

        class Env(unittest.TestCase):
            def test_env(self):
                self.assertEqual(time.timezone, -5 * 3600)
                self.assertEqual(time.tzname[0], "XYZ")
                self.assertEqual(sys.flags.utf8_mode, 1)  # LC_ALL=C: PEP 540
                self.assertEqual(locale.setlocale(locale.LC_CTYPE), "C")
    """
    _workspace(tmp_path, test_env=probe)
    env = {**PID1_ENV, "LC_ALL": "C", "TZ": "XYZ-5"}
    run = _pid1(tmp_path, launch_mode, env=env, expect_launch="exec")
    if launch_mode == "fork":
        # Closed: the runner's argv with this environment is exec'd, not forked. (The
        # host's /usr/bin/python3 cannot import this checkout's runner; in the image it
        # can, and the exec'd reference above shows what such a fresh start gives.)
        assert "No module named 'sandbox_supervisor'" in run["output"]
        return
    assert _passed(run), run["output"]


# ---------------------------------------------------------------- containment (must pass)


def test_a_runner_that_falls_back_into_pid1s_code_can_only_write_data(tmp_path: Path) -> None:
    """``run_in_process`` ends with ``os._exit``, which test code can replace; so can it
    ``os.execvpe``. Before the fix the forked child then returned into its copy of
    ``Relay.run`` and ``supervise`` (Informational I1) and could be steered to write an
    exit record of its own (into the workload's stdout pipe: data, never a record).
    ``launch`` now binds ``os._exit`` before any repository code runs and never returns,
    so the child cannot even get there; the real exit record keeps the real report."""
    probe = """
        import os, unittest
        from sandbox_supervisor import relay

        class Escape(unittest.TestCase):
            def test_escape(self):
                os._exit = lambda code: None
                os.execvpe = lambda *args: None
                os.close = lambda fd: None
                os.set_blocking = lambda fd, blocking: None
                relay.Relay._loop = lambda self, run: setattr(run, "status", 0)
                relay.Relay._close = lambda self, fd: None
                self.fail("this suite fails")
    """
    _workspace(tmp_path, test_escape=probe)
    run = _pid1(tmp_path, "fork")
    assert not _passed(run)
    assert run["report"]["runner_report"]["failures"] == 1
    # The child never got back into its copy of PID 1's code: no record of its own.
    assert f'"nonce":"{NONCE}"' not in run["output"]
    assert '"type":"exit"' not in run["output"]


def test_the_forked_runner_keeps_to_the_deadline_and_the_output_budget(tmp_path: Path) -> None:
    probe = """
        import signal, sys, time, unittest

        class Hog(unittest.TestCase):
            def test_a_flood(self):
                sys.stdout.write("x" * 100_000)
                sys.stdout.flush()

            def test_b_hang(self):
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                time.sleep(60)
    """
    _workspace(tmp_path, test_hog=probe)
    flood = _pid1(tmp_path, "fork", output_budget=10_000)
    assert flood["report"]["output_truncated"]
    assert flood["report"]["output_bytes"] == 10_000
    # The deadline leaves the runner time to import, discover and flood before the hang
    # ignores SIGTERM (1 s left little room on a loaded machine); the hang is a minute.
    hang = _pid1(tmp_path, "fork", deadline_s=4.0)
    assert hang["report"]["timed_out"]
    assert hang["report"]["signal"] == 9
    assert hang["report"]["duration_ms"] < 30_000
