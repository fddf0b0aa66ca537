"""How the forked child becomes the workload: ``execve``, or the trusted runner in place.

Any argv is run with ``execve`` in the forked child. One argv is special: the trusted
runner wrapper that this package itself ships, started by the same interpreter binary
with the same isolation flags PID 1 already runs with
(``/usr/bin/python3 -I -B -m sandbox_supervisor.run_tests RUNNER [SELECTOR]``). For it,
the child does not start a second interpreter: it finishes the start-up that PID 1 skipped
(``site``, for the runners' ``dist-packages``), sets the workload environment, and runs
the module as ``-m`` would, then ends the way an interpreter does (non-daemon threads,
``atexit``, flushed streams) with ``os._exit``. Under gVisor a second interpreter start
cost ~35-45 ms of every run (issue 3; docs/DECISIONS.md, "The trusted runner runs in the
forked interpreter").

What ``execve`` would have reset is reset by hand, in this order, before any repository
code runs: descriptors (done by the caller, as for ``execve``), the environment, signal
dispositions (a fresh interpreter's: ``SIGINT`` raises ``KeyboardInterrupt``, ``SIGPIPE``
and ``SIGXFSZ`` ignored), and the dumpable flag. What it cannot reset is PID 1's memory,
which the child holds a copy of: the config (its nonce is public anyway, see
``protocol``) and the attestation; nothing secret lives there by design, and the framing
never relies on it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from typing import NoReturn

    from sandbox_supervisor.config import Config
else:
    import _signal  # no stub of its own; the same names as signal's

RUNNER_MODULE = "sandbox_supervisor.run_tests"
RUNNER_ARGV = ("/usr/bin/python3", "-I", "-B", "-m", RUNNER_MODULE)
"""The trusted runner's argv before ``RUNNER [SELECTOR]``; the host's allowlist uses it."""
PR_SET_DUMPABLE = 4
EXIT_UNCAUGHT = 1
"""What an interpreter exits with after an uncaught exception."""


def in_process(argv: list[str]) -> bool:
    """Whether ``argv`` is the trusted runner, started exactly as this interpreter was.

    Same binary (after symlinks), the runner's exact prefix, and PID 1 itself isolated
    (``-I``) and not writing bytecode (``-B``): then exec'ing would only start this very
    interpreter again with the flags it already has (plus ``site``, which
    ``run_in_process`` imports).
    """
    if tuple(argv[: len(RUNNER_ARGV)]) != RUNNER_ARGV or not sys.executable:
        return False
    same_binary = os.path.realpath(argv[0]) == os.path.realpath(sys.executable)
    return same_binary and bool(sys.flags.isolated) and bool(sys.flags.dont_write_bytecode)


def run_in_process(config: Config) -> NoReturn:
    """In the forked child, descriptors already in place: run the runner, then exit."""
    os.environ.clear()
    os.environ.update(config.workload_env)
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    for signum in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(signum, _signal.SIG_IGN)
    from sandbox_supervisor.attest import libc

    libc().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # what execve of a plain binary restores
    code = _run_module(config.argv[len(RUNNER_ARGV) :])
    _shutdown()
    os._exit(code)


def _run_module(args: list[str]) -> int:
    """``python -m RUNNER_MODULE *args`` after ``site``; the exit code Python would give."""
    try:
        import runpy
        import site

        site.main()  # PID 1 starts with -S; a fresh -I interpreter would have run it
        sys.argv = [RUNNER_MODULE, *args]  # runpy puts the module's path in argv[0]
        runpy.run_module(RUNNER_MODULE, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        return _exit_code(done.code)
    except BaseException:
        import traceback

        traceback.print_exc()
        return EXIT_UNCAUGHT
    return 0


def _exit_code(code: object) -> int:
    """``SystemExit.code`` as the interpreter maps it to an exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return EXIT_UNCAUGHT


def _shutdown() -> None:
    """The first steps of interpreter finalization: threads, ``atexit``, flushed streams."""
    threading = sys.modules.get("threading")
    try:
        if threading is not None:
            threading._shutdown()  # joins non-daemon threads, as finalization does
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        import traceback

        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            continue
