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


CLONE3 = "clone3"
GVISOR_CLONE3_RULE = {
    "names": [CLONE3],
    "action": "SCMP_ACT_ALLOW",
    "args": [],
    "comment": "runsc: gVisor answers clone3 itself (ENOSYS: not implemented in 20221219)",
    "includes": {},
    "excludes": {},
}


@functools.cache
def profile_json(runtime: Runtime = "runc") -> str:
    """The profile as compact JSON text: what goes into ``SecurityOpt`` as ``seccomp=<text>``.

    Under runsc one rule differs, derived here from the pinned file: Docker answers
    ``clone3`` with ENOSYS (``errnoRet`` 38) so that glibc falls back to ``clone``, whose
    flags seccomp can filter; gVisor ignores ``errnoRet`` and answered EPERM, glibc did
    not fall back, and no process could start a thread. gVisor itself does not implement
    ``clone3`` (it answers ENOSYS), so there the call is let through to it
    (tests/sandbox/conformance: ``test_the_workload_can_start_threads_and_clone3_is_not_there``
    fails if a later gVisor implements it).

    Raises:
        SetupError: the shipped profile is missing or differs from the pinned hash.
    """
    profile = json.loads(_pinned_bytes())
    if runtime == "runsc":
        profile["syscalls"] = [
            rule for rule in profile["syscalls"] if rule["names"] != [CLONE3]
        ] + [GVISOR_CLONE3_RULE]
    return json.dumps(profile, separators=(",", ":"), sort_keys=False)


def _pinned_bytes() -> bytes:
    try:
        raw = resources.files("sandbox_agent.sandbox.docker").joinpath(PROFILE_FILE).read_bytes()
    except OSError as error:
        raise SetupError(f"the seccomp profile is missing ({error}): reinstall") from error
    digest = hashlib.sha256(raw).hexdigest()
    if digest != PROFILE_SHA256:
        raise SetupError(
            f"the seccomp profile {PROFILE_FILE} was changed (sha256 {digest[:12]}...): "
            "restore it from git or reinstall"
        )
    return raw


def canary(runtime: Runtime) -> dict[str, int]:
    """The canary PID 1 checks: ``{"syscall": NR, "errno": E}`` for this runtime."""
    errno = GVISOR_CANARY_ERRNO if runtime == "runsc" else CANARY_ERRNO
    return {"syscall": CANARY_SYSCALL, "errno": errno}
