"""SR-8 (issue 20) C8-3 and C8-1 on the host: PID 1's records with odd numbers and a runner
report carrying test ids (a larger exit-report frame, and only that one)."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_agent.sandbox.docker.records import check_exit_report
from sandbox_supervisor import protocol

NONCE = "0" * 32
RECORD: dict[str, Any] = {
    "type": "exit",
    "v": 1,
    "nonce": NONCE,
    "launch": "fork",
    "exit_code": 0,
    "signal": None,
    "timed_out": False,
    "output_bytes": 0,
    "output_truncated": False,
    "duration_ms": 1.0,
    "oom_kills_delta": 0,
    "runner_report": {
        "runner": "unittest",
        "tests_run": 1,
        "failures": 0,
        "errors": 0,
        "skipped": 0,
        "mode": "run",
        "ids": ["t.T.a"],
        "broken": [],
        "skipped_ids": [],
    },
    "runner_report_error": None,
}
ODD = st.one_of(
    st.integers(),
    st.integers(min_value=10**9, max_value=10**4299),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)


@settings(max_examples=300, deadline=None)
@given(
    key=st.sampled_from(
        ["v", "exit_code", "signal", "output_bytes", "duration_ms", "oom_kills_delta"]
    ),
    number=ODD,
)
def test_c8_3_any_number_in_an_exit_report_is_valid_or_malformed(key: str, number: Any) -> None:
    payload = json.dumps({**RECORD, key: number}).encode()
    report, why, _ = check_exit_report(payload, NONCE, 0)
    assert (report is None) == (why != "valid")


@settings(max_examples=200, deadline=None)
@given(key=st.sampled_from(["tests_run", "failures", "errors", "skipped"]), number=ODD)
def test_c8_3_any_number_in_a_runner_report_is_a_bounded_report_or_none(
    key: str, number: Any
) -> None:
    record = {**RECORD, "runner_report": {**RECORD["runner_report"], key: number}}
    _, why, runner = check_exit_report(json.dumps(record).encode(), NONCE, 0)
    assert why == "valid"
    if runner is not None:
        assert 0 <= getattr(runner, key) <= 10**9
        assert runner.tests_run + runner.failures + runner.errors + runner.skipped < 10**10


@pytest.mark.parametrize("digits", [4300, 4301])
def test_c8_3_a_huge_exit_code_is_malformed(digits: int) -> None:
    payload = json.dumps(RECORD).replace('"exit_code": 0', f'"exit_code": {"9" * digits}')
    report, why, _ = check_exit_report(payload.encode(), NONCE, 0)
    assert report is None
    assert why.startswith("malformed")


def test_c8_1_only_the_exit_report_frame_may_hold_a_large_runner_report() -> None:
    big = b"x" * (protocol.MAX_FRAME_PAYLOAD + 1)
    assert protocol.encode_frame(protocol.KIND_EXIT, big)
    with pytest.raises(ValueError, match="too large"):
        protocol.encode_frame(protocol.KIND_STDOUT, big)
    decoder = protocol.FrameDecoder()
    header = struct.pack(">cI", protocol.KIND_EXIT, protocol.MAX_EXIT_PAYLOAD + 1)
    with pytest.raises(protocol.FramingError):
        list(decoder.feed(header))
    header = struct.pack(">cI", protocol.KIND_ATTESTATION, protocol.MAX_FRAME_PAYLOAD + 1)
    with pytest.raises(protocol.FramingError):
        list(protocol.FrameDecoder().feed(header))
