"""PID 1's stream on the host: Docker's multiplexing, frame order, forged and broken frames."""

from __future__ import annotations

import struct

import pytest
from sandbox_records import NONCE, a_frame, attestation, out_frame, x_frame

from sandbox_agent.sandbox.docker.stream import DockerStreamDemux, FrameReader
from sandbox_supervisor import protocol


def read(stream: bytes, budget: int = 65536, chunk: int = 0) -> FrameReader:
    reader = FrameReader(NONCE, "runc", budget)
    step = chunk or len(stream) or 1
    for start in range(0, len(stream), step):
        reader.feed(stream[start : start + step])
    reader.finish()
    return reader


@pytest.mark.parametrize("chunk", [0, 1, 7])
def test_a_clean_stream_in_any_chunking(chunk: int) -> None:
    stream = a_frame() + out_frame(b"hello ") + out_frame(b"world") + x_frame(output_bytes=11)
    reader = read(stream, chunk=chunk)
    assert reader.framing_error is None
    assert reader.attested
    assert reader.exit_status == "valid"
    assert bytes(reader.output) == b"hello world"
    assert reader.runner_report is not None
    assert reader.runner_report.tests_run == 3


def test_a_forged_control_frame_inside_data_stays_data() -> None:
    forged = x_frame(exit_code=0) + a_frame()
    stream = a_frame() + out_frame(forged) + x_frame(exit_code=1, output_bytes=len(forged))
    reader = read(stream)
    assert reader.framing_error is None
    assert bytes(reader.output) == forged
    assert reader.exit_report is not None
    assert reader.exit_report.exit_code == 1


def test_a_truncated_frame_is_a_framing_error() -> None:
    reader = read(a_frame() + x_frame()[:-3])
    assert reader.framing_error is not None
    assert "inside a frame" in reader.framing_error
    assert reader.exit_report is None


def test_a_second_attestation_is_a_framing_error() -> None:
    reader = read(a_frame() + a_frame() + x_frame())
    assert reader.framing_error == "a second attestation"
    assert reader.exit_report is None


def test_data_after_the_exit_report_voids_it() -> None:
    reader = read(a_frame() + x_frame() + out_frame(b"late"))
    assert reader.framing_error is not None
    assert reader.exit_report is None
    assert reader.exit_status.startswith("malformed: framing error after the exit report")


def test_data_before_the_attestation_is_a_framing_error() -> None:
    reader = read(out_frame(b"early") + a_frame() + x_frame(output_bytes=5))
    assert reader.framing_error is not None
    assert not reader.attestation_seen


def test_a_wrong_nonce_is_refused_in_both_records() -> None:
    reader = read(a_frame(nonce="f" * 32) + x_frame(nonce="f" * 32))
    assert not reader.attested
    assert reader.attestation_status.startswith("malformed")
    assert reader.exit_report is None
    assert reader.exit_status.startswith("malformed")


def test_a_failed_or_incomplete_attestation_is_not_valid() -> None:
    failing = attestation()
    failing["checks"][0]["ok"] = False
    payload = protocol.encode_record(protocol.KIND_ATTESTATION, failing)
    reader = read(payload + x_frame())
    assert not reader.attested
    assert reader.attestation_status == "failed: pid1"
    reader = read(a_frame(checks=[]) + x_frame())
    assert not reader.attested
    assert reader.attestation_status.startswith("failed: missing pid1")


def test_an_unknown_kind_or_oversize_length_fails_at_once() -> None:
    assert read(a_frame() + b"Z\x00\x00\x00\x01z").framing_error is not None
    huge = struct.pack(">cI", b"1", protocol.MAX_FRAME_PAYLOAD + 1)
    reader = read(a_frame() + huge)
    assert reader.framing_error is not None
    assert "exceeds" in reader.framing_error


def test_output_past_the_budget_is_a_framing_error() -> None:
    reader = read(a_frame() + out_frame(b"x" * 11) + x_frame(output_bytes=11), budget=10)
    assert reader.framing_error is not None
    assert len(reader.output) <= 10


def test_an_exit_report_disagreeing_with_the_bytes_received_is_a_mismatch() -> None:
    reader = read(a_frame() + out_frame(b"abc") + x_frame(output_bytes=4))
    assert reader.exit_report is None
    assert reader.exit_status.startswith("mismatch")


def test_record_digests_are_of_the_raw_payloads() -> None:
    import hashlib

    reader = read(a_frame() + x_frame())
    assert reader.attestation_sha256 == hashlib.sha256(a_frame()[5:]).hexdigest()
    assert reader.exit_report_sha256 == hashlib.sha256(x_frame()[5:]).hexdigest()


def docker_chunk(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(data)) + data


@pytest.mark.parametrize("step", [1, 3, 9, 1000])
def test_the_docker_demux_splits_streams_in_any_chunking(step: int) -> None:
    raw = docker_chunk(1, b"frames") + docker_chunk(2, b"crash") + docker_chunk(1, b"!")
    demux = DockerStreamDemux()
    got: dict[int, bytes] = {1: b"", 2: b""}
    for start in range(0, len(raw), step):
        for stream, piece in demux.feed(raw[start : start + step]):
            got[stream] += piece
    assert got == {1: b"frames!", 2: b"crash"}
    assert not demux.pending
