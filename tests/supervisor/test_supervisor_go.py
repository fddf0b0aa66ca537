"""PID 1 forks nothing until the host's go: the host's own check of the attestation gates
every run, and a pre-started sandbox that is never used runs nothing.

Real pipes on the host stand in for the attach stream's stdin; the Docker tests
(``tests/sandbox/conformance``) do the same through Docker on both runtimes.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervisor_helpers import keep_identity, passing_attester, valid_config

from sandbox_supervisor import protocol
from sandbox_supervisor.__main__ import EXIT_REFUSED, await_go, supervise


@pytest.fixture
def go_pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        try:
            os.close(fd)
        except OSError:
            continue


def _supervise(tmp_path: Path, go_fd: int, **overrides: object) -> tuple[int, list[bytes], Path]:
    marker = tmp_path / "ran"
    config = valid_config(
        argv=["/usr/bin/env", "touch", str(marker)],
        cwd=str(tmp_path),
        workload_env={"PATH": "/usr/bin:/bin"},
        **overrides,
    )
    with tempfile.TemporaryFile() as out:
        code = supervise(
            json.dumps(config),
            out.fileno(),
            attester=passing_attester,
            read_oom=lambda: None,
            go_fd=go_fd,
            drop=keep_identity,
        )
        out.seek(0)
        kinds = [kind for kind, _ in protocol.FrameDecoder().feed(out.read())]
    return code, kinds, marker


def test_the_go_byte_starts_the_workload(tmp_path: Path, go_pipe: tuple[int, int]) -> None:
    os.write(go_pipe[1], protocol.GO)
    code, kinds, marker = _supervise(tmp_path, go_pipe[0])
    assert code == 0
    assert kinds == [protocol.KIND_ATTESTATION, protocol.KIND_EXIT]
    assert marker.exists()


def test_closed_stdin_runs_nothing(tmp_path: Path, go_pipe: tuple[int, int]) -> None:
    """What the host does when its check of the record fails, or it discards the sandbox."""
    os.close(go_pipe[1])
    code, kinds, marker = _supervise(tmp_path, go_pipe[0])
    assert code == EXIT_REFUSED
    assert kinds == [protocol.KIND_ATTESTATION]  # no exit report: never "completed"
    assert not marker.exists()


def test_any_other_byte_runs_nothing(tmp_path: Path, go_pipe: tuple[int, int]) -> None:
    os.write(go_pipe[1], b"g")
    code, kinds, marker = _supervise(tmp_path, go_pipe[0])
    assert (code, kinds) == (EXIT_REFUSED, [protocol.KIND_ATTESTATION])
    assert not marker.exists()


def test_no_go_within_the_timeout_runs_nothing(tmp_path: Path, go_pipe: tuple[int, int]) -> None:
    started = time.monotonic()
    code, kinds, marker = _supervise(tmp_path, go_pipe[0], go_timeout_s=0.2)
    assert 0.2 <= time.monotonic() - started < 5
    assert (code, kinds) == (EXIT_REFUSED, [protocol.KIND_ATTESTATION])
    assert not marker.exists()


def test_a_failed_attestation_does_not_wait_for_a_go(
    tmp_path: Path, go_pipe: tuple[int, int]
) -> None:
    from sandbox_supervisor.attest import Check

    os.write(go_pipe[1], protocol.GO)
    config = valid_config(argv=["/usr/bin/env", "true"], cwd=str(tmp_path))
    with tempfile.TemporaryFile() as out:
        code = supervise(
            json.dumps(config),
            out.fileno(),
            attester=lambda _: [Check("uid", False, "0")],
            go_fd=go_pipe[0],
            drop=keep_identity,
        )
    assert code == EXIT_REFUSED
    assert os.read(go_pipe[0], 1) == protocol.GO  # left unread: PID 1 never waited


def test_await_go_names_why(go_pipe: tuple[int, int]) -> None:
    read_end, write_end = go_pipe
    assert await_go(read_end, 0.05) == "none within 0.05 s"
    os.write(write_end, protocol.GO)
    assert await_go(read_end, 1) is None
    os.write(write_end, b"x")
    assert await_go(read_end, 1) == "unexpected byte b'x'"
    os.close(write_end)
    assert await_go(read_end, 1) == "stdin closed"


@pytest.mark.parametrize("value", [0, -1, "1", None])
def test_go_timeout_must_be_a_positive_number(value: object) -> None:
    from sandbox_supervisor.config import ConfigError, parse_config

    text = json.dumps(valid_config(go_timeout_s=value))
    with pytest.raises(ConfigError, match="go_timeout_s"):
        parse_config(text)


def test_the_go_timeout_counts_from_the_attestation(go_pipe: tuple[int, int]) -> None:
    """PID 1 may spend part of ``go_timeout_s`` importing the runner's first imports
    (``launch.warm_runner``): the wait ends ``go_timeout_s`` after the attestation, and a
    go that came meanwhile is taken even when that time has passed."""
    read_end, write_end = go_pipe
    long_ago = time.monotonic() - 10
    started = time.monotonic()
    assert await_go(read_end, 5, since=long_ago) == "none within 5 s"
    assert time.monotonic() - started < 1  # not another 5 s from now
    os.write(write_end, protocol.GO)
    assert await_go(read_end, 5, since=long_ago) is None
