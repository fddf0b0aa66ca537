"""Killing and reaping what the workload leaves behind.

``kill(-1, SIGKILL)`` sends SIGKILL to every process the caller may signal. As PID 1
of a container that is exactly the workload and everything it started (also what
escaped its process group with ``setsid``). Anywhere else, above all in the host
tests that run this code as root, it would kill the machine: it runs only when
``getpid() == 1``.
"""

from __future__ import annotations

import os

# ``_signal``: the integer constants without ``signal``'s enum set-up, which PID 1
# would pay on every sandbox run (issue 3). Type-only imports stay out of run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable

    Kill = Callable[[int, int], None]
    GetPid = Callable[[], int]
else:
    import _signal  # no stub of its own; the same names as signal's


def is_pid1(getpid: GetPid = os.getpid) -> bool:
    """True only for the init process of a PID namespace."""
    return getpid() == 1


def signal_workload(pgid: int, signum: int, *, kill: Kill = os.kill) -> None:
    """Send ``signum`` to the workload's process group and to its leader.

    The leader must not have been reaped yet: while it is a zombie its pid, and so
    the group id, cannot be reused by an unrelated process.
    """
    for target in (-pgid, pgid):
        try:
            kill(target, signum)
        except (ProcessLookupError, PermissionError):
            continue


def kill_everything(pgid: int, *, getpid: GetPid = os.getpid, kill: Kill = os.kill) -> None:
    """SIGKILL the workload's group; as PID 1, every other process too (``kill(-1)``)."""
    signal_workload(pgid, _signal.SIGKILL, kill=kill)
    if is_pid1(getpid):
        try:
            kill(-1, _signal.SIGKILL)
        except ProcessLookupError:
            return


def reap_orphans(*, getpid: GetPid = os.getpid, keep: int | None = None) -> None:
    """As PID 1, reap every exited child except ``keep`` (the workload, reaped separately).

    Elsewhere this does nothing: another process's children are not ours to reap.
    """
    if not is_pid1(getpid):
        return
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == keep:
            return
        os.waitpid(info.si_pid, 0)
