"""Builders of PID 1 records and frames for the sandbox unit tests."""

from __future__ import annotations

from typing import Any

from sandbox_agent.sandbox.docker.records import REQUIRED_CHECKS
from sandbox_supervisor import protocol

NONCE = "0123456789abcdef0123456789abcdef"


def attestation(nonce: str = NONCE, runtime: str = "runc", **changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "attestation",
        "v": 1,
        "nonce": nonce,
        "runtime": runtime,
        "ok": True,
        "checks": [{"name": name, "ok": True, "detail": "fine"} for name in REQUIRED_CHECKS],
    }
    record.update(changes)
    return record


def exit_report(nonce: str = NONCE, **changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "exit",
        "v": 1,
        "nonce": nonce,
        "launch": "fork",
        "exit_code": 0,
        "signal": None,
        "timed_out": False,
        "output_bytes": 0,
        "output_truncated": False,
        "duration_ms": 12.5,
        "oom_kills_delta": 0,
        "runner_report": {
            "runner": "unittest",
            "tests_run": 3,
            "failures": 0,
            "errors": 0,
            "skipped": 0,
        },
        "runner_report_error": None,
    }
    record.update(changes)
    return record


def a_frame(**changes: Any) -> bytes:
    return protocol.encode_record(protocol.KIND_ATTESTATION, attestation(**changes))


def x_frame(**changes: Any) -> bytes:
    return protocol.encode_record(protocol.KIND_EXIT, exit_report(**changes))


def out_frame(data: bytes) -> bytes:
    return protocol.encode_frame(protocol.KIND_STDOUT, data)
