"""Who runs what inside the container: PID 1 as uid 0 with four capabilities, every
workload process as another uid with none.

PID 1 starts as uid 0 holding exactly ``PID1_CAPABILITIES`` (Docker: ``--user 0:0
--cap-drop ALL --cap-add SETUID,SETGID,KILL,SETPCAP``, verified in inspect and attested).
Each process PID 1 forks drops, before it runs anything else: the whole capability
bounding set (``SETPCAP``), its supplementary groups, then its gid and uid (``SETGID``,
``SETUID``; the kernel clears the permitted, effective and ambient sets when the last
uid 0 goes). Then it checks the result in ``/proc/self/status``. Why (issue 15, G1):
gVisor ignores the dumpable flag, so a process of PID 1's own uid could open
``/proc/1/fd/1`` (the host stream) and signal PID 1; a process of another uid can
do neither, on either runtime (docs/DECISIONS.md, "Verdicts the code under test cannot
forge"). ``KILL`` lets PID 1 signal the workload's processes at its deadline.
"""

from __future__ import annotations

import ctypes
import os

from sandbox_supervisor.syscalls import libc

PR_CAPBSET_DROP = 24
PR_GET_NO_NEW_PRIVS = 39
EINVAL = 22
CAP_KILL = 5
CAP_SETGID = 6
CAP_SETUID = 7
CAP_SETPCAP = 8
PID1_CAPABILITIES = (1 << CAP_KILL) | (1 << CAP_SETGID) | (1 << CAP_SETUID) | (1 << CAP_SETPCAP)
"""PID 1's effective, permitted and bounding sets, exactly (``0x1e0``)."""
CAP_LAST_POSSIBLE = 63
"""Every bit of the 64-bit sets is dropped; a kernel that does not know one says EINVAL."""
WORKLOAD_UID = 10001
"""The code under test: every ``run_tests`` workload, and a held-out check's candidate."""
JUDGE_UID = 10002
"""The held-out judge: another uid than the candidate it calls, so out of its reach."""
CAPABILITY_LINES = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


class IdentityError(Exception):
    """The drop to the workload's identity failed or did not give what it must."""


def drop_to(uid: int, gid: int) -> None:
    """In a freshly forked child of PID 1: become ``uid``:``gid`` with no capability.

    Raises:
        IdentityError: a step failed, or ``/proc/self/status`` does not show exactly
            the identity asked for with every capability set empty.
    """
    c = libc()
    for cap in range(CAP_LAST_POSSIBLE + 1):
        if c.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            if errno != EINVAL:  # EINVAL: a capability this kernel does not have
                raise IdentityError(f"cannot drop capability {cap} from the bounding set: {errno}")
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as error:
        raise IdentityError(f"cannot become {uid}:{gid}: {error.strerror}") from None
    problems = identity_problems(read_status(), uid, gid)
    if c.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1:
        problems.append("no_new_privs is not set")
    if problems:
        raise IdentityError("; ".join(problems))


def read_status(proc_root: str = "/proc") -> dict[str, str]:
    """``/proc/self/status`` as ``{key: value}``."""
    with open(os.path.join(proc_root, "self", "status"), encoding="utf-8") as file:
        text = file.read()
    status = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        status[key.strip()] = value.strip()
    return status


def identity_problems(status: dict[str, str], uid: int, gid: int) -> list[str]:
    """What differs from ``uid``:``gid``, no groups, and every capability set shown zero."""
    problems = []
    uids, gids = status.get("Uid", "").split(), status.get("Gid", "").split()
    if len(uids) != 4 or set(uids) != {str(uid)}:
        problems.append(f"uids {' '.join(uids)} (want {uid})")
    if len(gids) != 4 or set(gids) != {str(gid)}:
        problems.append(f"gids {' '.join(gids)} (want {gid})")
    if status.get("Groups", ""):
        problems.append(f"groups {status['Groups']} (want none)")
    for name in CAPABILITY_LINES:
        value = status.get(name)
        if value is None:
            if name != "CapAmb":  # gVisor shows no CapAmb line
                problems.append(f"{name} not shown")
        elif int(value, 16) != 0:
            problems.append(f"{name} {value}")
    return problems
