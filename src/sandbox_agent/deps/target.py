"""The interpreter and platform an environment is made for: the runner image's.

The debootstrap image (``hostsetup.image``, Debian bookworm) runs Debian's CPython
3.11.2 on glibc 2.36, on the host's architecture. Wheels are chosen for exactly that,
whatever Python the host runs; nothing is built or run for it on the host.
"""

from __future__ import annotations

import platform

from pydantic import BaseModel, ConfigDict

PYTHON_VERSION = "3.11.2"
"""Debian bookworm's ``python3`` (``hostsetup.image.SUITE``)."""
PYTHON_MINOR = (3, 11)
GLIBC = "2_36"
"""Debian bookworm's glibc: manylinux wheels up to ``manylinux_2_36`` run there."""
RUNNER_OWN_PACKAGES = ("pytest", "pluggy")
"""Never installed in an environment: the sandbox runs the image's pytest 7.2.1 and pluggy
1.0.0 (the trusted runner imports them before the repository; ``sandbox_supervisor.deps``)."""


class Target(BaseModel):
    """Where the environment will be imported: part of every cache key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    python_version: str = PYTHON_VERSION
    platform: str
    """uv's ``--python-platform``: ``x86_64-manylinux_2_36`` on an x86_64 host."""


def marker_environment(target: Target) -> dict[str, str]:
    """PEP 508's marker variables for ``target`` (the runner image's CPython on Linux)."""
    machine = target.platform.split("-", 1)[0]
    major_minor = ".".join(target.python_version.split(".")[:2])
    return {
        "implementation_name": "cpython",
        "implementation_version": target.python_version,
        "os_name": "posix",
        "platform_machine": machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": target.python_version,
        "python_version": major_minor,
        "sys_platform": "linux",
        "extra": "",
    }


def runner_target() -> Target:
    """The runner image's target on this host's architecture."""
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return Target(platform=f"{arch}-manylinux_{GLIBC}")
