"""Where the attestation checks look: real roots and system calls, or fakes in tests.

Split from ``attest`` (issue 31). ``Inside`` holds the filesystem roots and the few
system calls the checks use, so every check runs on the host against a fake ``/proc``
and ``/sys`` tree in the unit tests; the environment PID 1 was started with is read
raw here too.
"""

from __future__ import annotations

# PID 1 starts once per sandbox run, so its imports are on every run's critical path
# (issue 3): no dataclasses/typing/pathlib/socket here. ``_socket`` is the C module
# that ``socket`` re-exports (built in, no enum set-up); type-only imports are below.
import _socket
import os
import resource

from sandbox_supervisor.mounts import Mount, read_mounts
from sandbox_supervisor.syscalls import no_new_privs, seccomp_canary

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def _interface_names() -> list[str]:
    return [name for _, name in _socket.if_nameindex()]


def _uname() -> tuple[str, str]:
    uname = os.uname()
    return uname.release, uname.version


class Inside:
    """Where the checks look: real roots and system calls by default, fakes in tests.

    Roots are string paths (``os.fspath`` of whatever is given). ``environ`` is
    ``/proc/self/environ`` as read before ``PR_SET_DUMPABLE`` 0 (which makes it root's).
    ``/proc/self/status`` and ``/proc/self/mountinfo`` are read once per ``Inside``
    and shared by the checks that need them (each read costs ~0.3 ms under gVisor).
    """

    __slots__ = (
        "_mounts",
        "_status",
        "environ",
        "fs_root",
        "getrlimit",
        "interface_names",
        "no_new_privs",
        "proc_root",
        "seccomp_canary",
        "sys_root",
        "uname",
    )

    def __init__(
        self,
        *,
        proc_root: str | os.PathLike[str] = "/proc",
        sys_root: str | os.PathLike[str] = "/sys",
        fs_root: str | os.PathLike[str] = "/",
        no_new_privs: Callable[[], int] = no_new_privs,
        seccomp_canary: Callable[[int], tuple[int, int]] = seccomp_canary,
        interface_names: Callable[[], list[str]] = _interface_names,
        getrlimit: Callable[[int], tuple[int, int]] = resource.getrlimit,
        uname: Callable[[], tuple[str, str]] = _uname,
        environ: bytes | None = None,
    ) -> None:
        self.proc_root = os.fspath(proc_root)
        self.sys_root = os.fspath(sys_root)
        self.fs_root = os.fspath(fs_root)
        self.no_new_privs = no_new_privs
        self.seccomp_canary = seccomp_canary
        self.interface_names = interface_names
        self.getrlimit = getrlimit
        self.uname = uname
        self.environ = environ
        self._status: dict[str, str] = {}
        self._mounts: list[Mount] | None = None

    def status(self) -> dict[str, str]:
        """``/proc/self/status`` as ``{key: value}``, read once."""
        if not self._status:
            with open(os.path.join(self.proc_root, "self", "status"), encoding="utf-8") as file:
                text = file.read()
            for line in text.splitlines():
                key, _, value = line.partition(":")
                self._status[key.strip()] = value.strip()
        return self._status

    def mounts(self) -> list[Mount]:
        """``/proc/self/mountinfo``, parsed once.

        Raises:
            OSError: it cannot be read.
            ValueError: it is malformed (again on every call, so each check fails).
        """
        if self._mounts is None:
            self._mounts = read_mounts(self.proc_root)
        return self._mounts

    def cgroup_root(self) -> str:
        """``/sys/fs/cgroup`` under ``sys_root``."""
        return os.path.join(self.sys_root, "fs", "cgroup")


def read_environ_bytes(proc_root: str) -> bytes:
    """The environment this process was started with, raw (not Python's ``os.environ``,
    which adds ``LC_CTYPE`` when it coerces the C locale).

    Raises:
        OSError: unreadable, as it is once the process is not dumpable.
    """
    with open(os.path.join(proc_root, "self", "environ"), "rb") as file:
        return file.read()


def parse_environ(raw: bytes) -> dict[str, str] | None:
    """``NAME=value`` entries separated by NUL; None for a malformed or duplicate entry."""
    environ: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        if not entry:
            continue
        key, separator, value = entry.decode("utf-8", "surrogateescape").partition("=")
        if not separator or not key or key in environ:
            return None
        environ[key] = value
    return environ
