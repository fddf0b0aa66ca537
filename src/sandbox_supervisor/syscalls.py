"""The few C library calls PID 1 makes: ``prctl``, ``syscall``, through one handle.

Split from ``attest`` (issue 31): attestation asks the kernel through these
(``no_new_privs``, ``seccomp_canary``), and ``identity`` and ``launch`` use ``libc`` to
drop privileges and set dumpability.
"""

from __future__ import annotations

# PID 1 starts once per sandbox run, so its imports are on every run's critical path
# (issue 3): ctypes only.
import ctypes

PR_GET_NO_NEW_PRIVS = 39

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    """The C library, loaded once per process (``prctl``, ``syscall``)."""
    global _libc  # noqa: PLW0603 - one handle per process, made on first use
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _libc_call(name: str, *args: int) -> tuple[int, int]:
    ctypes.set_errno(0)
    result = int(getattr(libc(), name)(*[ctypes.c_long(arg) for arg in args]))
    return result, ctypes.get_errno()


def no_new_privs() -> int:
    """``prctl(PR_GET_NO_NEW_PRIVS)``: 1 when set (gVisor has no status line for it)."""
    return _libc_call("prctl", PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)[0]


def seccomp_canary(syscall_nr: int) -> tuple[int, int]:
    """Call the canary syscall with valid arguments: ``(return value, errno)``.

    ``sched_get_priority_max(0)`` (146 on x86_64) succeeds unless a seccomp rule makes
    it fail; the writable buffer keeps a pointer-taking canary valid too.
    """
    buffer = ctypes.create_string_buffer(64)
    ctypes.set_errno(0)
    result = int(libc().syscall(ctypes.c_long(syscall_nr), ctypes.c_long(0), buffer))
    return result, ctypes.get_errno()
