"""PID 1's config arrives on stdin, and every workload process leaves PID 1's identity
(issue 15, G1). The Docker tests check both on runc and runsc; these check the logic."""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Iterator

import pytest

from sandbox_supervisor import identity, protocol
from sandbox_supervisor.__main__ import read_config

ROOT = os.geteuid() == 0


@pytest.fixture
def stdin_pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        try:
            os.close(fd)
        except OSError:
            continue


def test_the_config_frame_is_read_and_the_go_byte_left_for_later(
    stdin_pipe: tuple[int, int],
) -> None:
    read_end, write_end = stdin_pipe
    config = json.dumps({"nonce": "a" * 32}).encode()
    os.write(write_end, protocol.encode_config(config) + protocol.GO)
    assert read_config(read_end, 5.0) == config.decode()
    assert os.read(read_end, 1) == protocol.GO


def test_a_config_written_in_pieces_is_read_whole(stdin_pipe: tuple[int, int]) -> None:
    read_end, write_end = stdin_pipe
    frame = protocol.encode_config(b'{"v":1}')
    pid = os.fork()
    if pid == 0:  # a slow writer: one byte at a time
        for byte in frame:
            os.write(write_end, bytes([byte]))
            time.sleep(0.01)
        os._exit(0)
    try:
        assert read_config(read_end, 30.0) == '{"v":1}'
    finally:
        os.waitpid(pid, 0)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (protocol.GO, "closed before the config was whole"),
        (struct.pack(">cI", b"A", 2) + b"{}", "not a config frame"),
        (struct.pack(">cI", b"C", protocol.MAX_CONFIG_BYTES + 1), "not a config frame"),
        (struct.pack(">cI", b"C", 10) + b"{}", "closed before the config was whole"),
        (struct.pack(">cI", b"C", 2) + b"\xff\xfe", "not UTF-8"),
    ],
    ids=["go byte only", "other kind", "too long", "truncated", "not UTF-8"],
)
def test_anything_but_one_whole_config_frame_is_refused(
    stdin_pipe: tuple[int, int], data: bytes, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    read_end, write_end = stdin_pipe
    os.write(write_end, data)
    os.close(write_end)
    assert read_config(read_end, 5.0) is None
    assert why in capsys.readouterr().err


def test_no_config_within_the_timeout_is_refused(
    stdin_pipe: tuple[int, int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert read_config(stdin_pipe[0], 0.2) is None
    assert "in time" in capsys.readouterr().err


def test_the_config_frame_has_a_size_limit() -> None:
    with pytest.raises(ValueError, match="more than"):
        protocol.encode_config(b" " * (protocol.MAX_CONFIG_BYTES + 1))


def _in_child(fn: str) -> dict[str, object]:
    """Run ``identity.<fn>`` in a forked child; what it saw, as JSON through a pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        result: dict[str, object] = {}
        try:
            getattr(identity, fn)(identity.WORKLOAD_UID, identity.WORKLOAD_UID)
        except identity.IdentityError as error:
            result["error"] = str(error)
        result["status"] = identity.read_status()
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.mark.skipif(not ROOT, reason="changing uid needs root (CI runs as root)")
def test_a_process_dropped_by_pid1_has_the_workload_uid_and_no_capability() -> None:
    # On the host, with no_new_privs unset, the drop itself succeeds and its own check
    # then refuses: the child must never run a workload without no_new_privs.
    seen = _in_child("drop_to")
    assert seen.get("error") == "no_new_privs is not set", seen
    status = seen["status"]
    assert isinstance(status, dict)
    assert identity.identity_problems(status, identity.WORKLOAD_UID, identity.WORKLOAD_UID) == []


def test_identity_problems_name_every_difference() -> None:
    status = {
        "Uid": "10001\t10001\t0\t10001",
        "Gid": "10001\t10001\t10001\t10001",
        "Groups": "0",
        "CapInh": "0000000000000000",
        "CapPrm": "0000000000000000",
        "CapEff": "0000000000000000",
        "CapBnd": "00000000000001e0",
    }
    problems = identity.identity_problems(status, 10001, 10001)
    assert problems == [
        "uids 10001 10001 0 10001 (want 10001)",
        "groups 0 (want none)",
        "CapBnd 00000000000001e0",
    ]
    clean = {**status, "Uid": "10001\t10001\t10001\t10001", "Groups": "", "CapBnd": "0" * 16}
    assert identity.identity_problems(clean, 10001, 10001) == []  # gVisor: no CapAmb line
    assert identity.identity_problems({}, 10001, 10001)[-1] == "CapBnd not shown"
