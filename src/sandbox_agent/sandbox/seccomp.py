"""The pinned seccomp profile: Docker's default plus one canary rule PID 1 checks from inside.

The profile ships as package data (``seccomp_profile.json``; its provenance is in
``seccomp_profile.SOURCE.md``). Its sha256 is pinned here, so an edited file is refused
instead of silently weakening every sandbox. The container gets the compact JSON text
(``security_opt_value``) and inspect must give back exactly that text.
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources

from sandbox_agent.errors import SetupError
from sandbox_agent.sandbox.base import Runtime

PROFILE_FILE = "seccomp_profile.json"
PROFILE_SHA256 = "22d7c51ae1fc172b25078a4ac34c4eaaee9f083523cabf873e48aaf9af67e5a0"
"""sha256 of the shipped file, bytes as stored."""

CANARY_SYSCALL = 146
"""``sched_get_priority_max`` on x86_64: harmless, and it *succeeds* under Docker's default
profile on both runtimes, so a failure proves our profile is in force. (Not 148,
``sched_rr_get_interval``: gVisor already refuses it with EPERM without any rule, which
made the runsc canary prove nothing.)"""
CANARY_ERRNO = 131
"""ENOTRECOVERABLE: what the canary rule answers under runc."""
GVISOR_CANARY_ERRNO = 1
"""gVisor (runsc 20221219, ``--oci-seccomp``) ignores ``errnoRet`` and answers EPERM."""


@functools.cache
def profile_json() -> str:
    """The profile as compact JSON text: what goes into ``SecurityOpt`` as ``seccomp=<text>``.

    Raises:
        SetupError: the shipped profile is missing or differs from the pinned hash.
    """
    try:
        raw = resources.files("sandbox_agent.sandbox").joinpath(PROFILE_FILE).read_bytes()
    except OSError as error:
        raise SetupError(f"the seccomp profile is missing ({error}): reinstall") from error
    digest = hashlib.sha256(raw).hexdigest()
    if digest != PROFILE_SHA256:
        raise SetupError(
            f"the seccomp profile {PROFILE_FILE} was changed (sha256 {digest[:12]}...): "
            "restore it from git or reinstall"
        )
    return json.dumps(json.loads(raw), separators=(",", ":"), sort_keys=False)


def canary(runtime: Runtime) -> dict[str, int]:
    """The canary PID 1 checks: ``{"syscall": NR, "errno": E}`` for this runtime."""
    errno = GVISOR_CANARY_ERRNO if runtime == "runsc" else CANARY_ERRNO
    return {"syscall": CANARY_SYSCALL, "errno": errno}
