"""Shared pieces of the supervisor tests: a valid config, and running PID 1's logic
on the host with a stand-in attestation (the real one runs in the Docker tests).

A plain module with a unique name, not a conftest: several conftest.py files in
folders without ``__init__.py`` would shadow each other when imported by name."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox_supervisor import protocol
from sandbox_supervisor.__main__ import supervise
from sandbox_supervisor.attest import Check
from sandbox_supervisor.config import Config

NONCE = "0123456789abcdef0123456789abcdef"
MiB = 1024 * 1024


def valid_config(**overrides: Any) -> dict[str, Any]:
    """A config PID 1 accepts; ``overrides`` replace top-level keys."""
    config: dict[str, Any] = {
        "v": 1,
        "nonce": NONCE,
        "runtime": "runc",
        "argv": ["/usr/bin/python3", "-I", "-B", "-m", "sandbox_supervisor.run_tests", "unittest"],
        "cwd": "/workspace",
        "workload_env": {"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
        "deadline_s": 30.0,
        "kill_grace_s": 1.0,
        "output_budget": MiB,
        "go_timeout_s": 30.0,
        "workload_uid": 10001,
        "workload_gid": 10001,
        "judge": None,
        "expect": {
            "uid": 0,
            "gid": 0,
            "capabilities": 0x1E0,
            "memory_bytes": 512 * MiB,
            "pids": 128,
            "nofile": 256,
            "fsize_bytes": 64 * MiB,
            "tmpfs_bytes": 64 * MiB,
            "env": {"PATH": "/usr/bin:/bin", "HOSTNAME": "sandbox", "HOME": "/"},
            "workspace": "/workspace",
            "tmp": "/tmp",
            "canary": {"syscall": 146, "errno": 131},
            "deps": None,
        },
    }
    config.update(overrides)
    return config


@dataclass
class Supervised:
    """What the host would see from one supervised run."""

    exit_code: int
    frames: list[tuple[bytes, bytes]]
    pending: int

    def records(self, kind: bytes) -> list[dict[str, Any]]:
        return [json.loads(payload) for k, payload in self.frames if k == kind]

    @property
    def exit_report(self) -> dict[str, Any]:
        (record,) = self.records(protocol.KIND_EXIT)
        return record

    def data(self, kind: bytes | None = None) -> bytes:
        kinds = {protocol.KIND_STDOUT, protocol.KIND_STDERR} if kind is None else {kind}
        return b"".join(payload for k, payload in self.frames if k in kinds)


def keep_identity(uid: int, gid: int) -> None:
    """The host tests' ``drop``: the workload keeps the test process's uid (a test run
    by another user than root cannot change it; the drop is tested on its own and in
    the Docker tests)."""


def passing_attester(config: Config) -> list[Check]:
    return [Check("host_test", True, "attestation runs in the Docker tests")]


def run_supervised(
    code: str,
    *,
    cwd: Path | None = None,
    attester: Callable[[Config], list[Check]] = passing_attester,
    argv: list[str] | None = None,
    **overrides: Any,
) -> Supervised:
    """Run ``python -c code`` (or ``argv``) under PID 1's logic and decode its whole output."""
    config = valid_config(
        argv=argv or [sys.executable, "-I", "-B", "-c", code],
        cwd=str(cwd or tempfile.gettempdir()),
        workload_env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp"},
        **overrides,
    )
    go_read, go_write = os.pipe()
    os.write(go_write, protocol.GO)  # the host's go, as after its own check of the record
    with tempfile.TemporaryFile() as out:
        try:
            exit_code = supervise(
                json.dumps(config),
                out.fileno(),
                attester=attester,
                read_oom=lambda: None,
                go_fd=go_read,
                drop=keep_identity,
            )
        finally:
            os.close(go_read)
            os.close(go_write)
        out.seek(0)
        decoder = protocol.FrameDecoder()
        frames = list(decoder.feed(out.read()))
    return Supervised(exit_code, frames, decoder.pending)
