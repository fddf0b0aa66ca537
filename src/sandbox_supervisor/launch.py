"""How the forked child becomes the workload: ``execve``, or the trusted runner in place.

Any argv is run with ``execve`` in the forked child. One argv is special: the trusted
runner wrapper that this package itself ships, started by the same interpreter binary,
with the same flags and start-up environment PID 1 itself was started with
(``/usr/bin/python3 -I -B -m sandbox_supervisor.run_tests RUNNER [SELECTOR]``; PID 1 is
``python3 -I -B -m sandbox_supervisor``). For it, the child does not start a second
interpreter, which cost ~35-45 ms of every run under gVisor (issue 3; docs/DECISIONS.md,
"The trusted runner runs in the forked interpreter"): it sets the workload environment,
runs the module as ``-m`` would, and ends as an interpreter does (non-daemon threads
joined, ``atexit``, every open buffered file flushed), then ``os._exit``.

What ``execve`` would have reset is reset by hand before any repository code runs:
descriptors (by the caller, as for ``execve``), the environment, signal dispositions
(a fresh interpreter's: ``SIGINT`` raises ``KeyboardInterrupt``, ``SIGPIPE`` and
``SIGXFSZ`` ignored), and the dumpable flag. What it cannot reset is PID 1's memory:
the child holds a copy of the config (its nonce is public anyway, see ``protocol``),
the attestation, and PID 1's process secrets (glibc's stack-protector and pointer-guard
values from ``AT_RANDOM``, the string-hash key) and memory layout. Those harden PID 1
against a memory-safety bug in what it parses from the workload (pipe bytes, the
runner report through ``_json``); a forked runner knows them. Accepted as a residual
risk (docs/THREAT_MODEL.md, T-36): PID 1 only copies pipe bytes and parses at most
64 KiB of JSON with CPython's own C parser, and under runsc the layout is readable in
``/proc/1/maps`` whatever the launch.
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
RUNNER_IMPORTS = (
    "ast",
    "collections.abc",
    "hashlib",
    "json",
    "stat",
    "typing",
    "linecache",
    "unittest",
    "sandbox_supervisor.asserts",
    "sandbox_supervisor.outcomes",
    "sandbox_supervisor.protocol",
    "sandbox_supervisor.runner_report",
    "sandbox_supervisor.spectrum",
    "sandbox_supervisor.tripwire",
)
"""What ``sandbox_supervisor.run_tests`` imports before the repository is on ``sys.path``
(``pytest`` too, for that runner). ``tests/supervisor/test_supervisor_warm.py`` keeps the
two in step."""
WARM_MIN_MEMORY_BYTES = 256 * 1024 * 1024
"""Below this memory limit PID 1 does not import them: PID 1 and the forked child would
each hold a copy of what the child's reference counting touches (measured: a pytest
suite that passed at 24 and 32 MiB ran out of memory with them imported ahead)."""
START_ENV_PREFIXES = ("LANG", "LC_", "TZ")
"""Variables an interpreter reads once at start-up (locale, UTF-8 mode, time zone): the
workload must have PID 1's values for them, or it is exec'd."""

_exit = os._exit
"""Bound before any repository code runs: a test that replaces ``os._exit`` cannot make
the child return into PID 1's code."""


def in_process(argv: list[str], workload_env: dict[str, str]) -> bool:
    """Whether ``argv`` is the trusted runner, started exactly as this interpreter was.

    Same binary (after symlinks), the runner's exact prefix, PID 1 itself started with
    the runner's own flags (``-I -B``, ``site`` imported), and the same start-up
    environment (``START_ENV_PREFIXES``): then exec'ing would only start this very
    interpreter again, in the same state.
    """
    if tuple(argv[: len(RUNNER_ARGV)]) != RUNNER_ARGV or not sys.executable:
        return False
    if os.path.realpath(argv[0]) != os.path.realpath(sys.executable):
        return False
    flags = sys.flags
    if not (flags.isolated and flags.dont_write_bytecode and not flags.no_site):
        return False
    names = {name for name in (*os.environ, *workload_env) if name.startswith(START_ENV_PREFIXES)}
    return all(os.environ.get(name) == workload_env.get(name) for name in names)


def should_warm(config: Config) -> bool:
    """Whether PID 1 imports the runner's first imports while it waits for the go: only
    for the in-process runner, and only with room for two copies of them."""
    return (
        in_process(config.argv, config.workload_env)
        and config.expect.memory_bytes >= WARM_MIN_MEMORY_BYTES
    )


def warm_runner(argv: list[str]) -> None:
    """Import what the trusted runner imports first, in PID 1, while the host decides its go.

    Only when ``should_warm``, only after the attestation is written. A fresh runner
    imports the same modules, from the same read-only image files, before any
    repository code; the forked child then finds them as it would after its own first
    lines, and each run skips ~40 ms of imports under runc and ~100 ms under runsc
    (~120-330 ms more for ``pytest``). A pre-started sandbox pays this while it waits;
    a cold run pays it before the fork instead of after. ``-I`` keeps the repository
    off ``sys.path``. A module that fails to import is left to the
    runner, which reports the failure as it always did.
    """
    names: tuple[str, ...] = RUNNER_IMPORTS
    if argv[len(RUNNER_ARGV) : len(RUNNER_ARGV) + 1] == ["pytest"]:
        names += ("pytest",)
    for name in names:
        try:
            __import__(name)
        except BaseException:  # noqa: S112 - the runner imports it again and says why it fails
            continue


def run_in_process(config: Config) -> NoReturn:
    """In the forked child, descriptors already in place: run the runner, then exit."""
    os.environ.clear()
    os.environ.update(config.workload_env)
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    for signum in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(signum, _signal.SIG_IGN)
    from sandbox_supervisor.syscalls import libc

    libc().prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # what execve of a plain binary restores
    try:
        code = _run_module(config.argv[len(RUNNER_ARGV) :])
        _shutdown()
    except BaseException:  # never return into PID 1's code, whatever the tests did
        code = EXIT_UNCAUGHT
    _exit(code)


def _run_module(args: list[str]) -> int:
    """``python -m RUNNER_MODULE *args``; the exit code Python would give."""
    try:
        import runpy

        sys.argv = [RUNNER_MODULE, *args]  # runpy puts the module's path in argv[0]
        runpy.run_module(RUNNER_MODULE, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        return _exit_code(done.code)
    except KeyboardInterrupt:
        _die_by_sigint()
    except BaseException:
        sys.excepthook(*sys.exc_info())
        return EXIT_UNCAUGHT
    return 0


def _die_by_sigint() -> None:
    """As an interpreter ends on an uncaught ``KeyboardInterrupt``: killed by SIGINT."""
    _shutdown()
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    os.kill(os.getpid(), _signal.SIGINT)


def _exit_code(code: object) -> int:
    """``SystemExit.code`` as the interpreter maps it to an exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return EXIT_UNCAUGHT


def _shutdown() -> None:
    """Interpreter finalization's visible part: threads, ``atexit``, every buffered file."""
    threading = sys.modules.get("threading")
    try:
        if threading is not None:
            threading._shutdown()  # joins non-daemon threads, as finalization does
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        sys.excepthook(*sys.exc_info())
    _flush_open_files()


def _flush_open_files() -> None:
    """Flush what finalization would flush when it frees them: every open buffered file."""
    import gc
    import io

    streams = [sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__]
    streams += [obj for obj in gc.get_objects() if isinstance(obj, io.IOBase)]
    for stream in streams:
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except (OSError, ValueError, AttributeError):
            continue
