"""Unsticking containers whose runtime processes outlived them (seen under runsc)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.sandbox.docker import cleanup, stuck

CONTAINER = "8f8fa3844321b00468bc5636470478baf2819526cf8118318623cb7c0bd48964"
OTHER = "b6f06b2e68b4f2917a8a21696f6e9c35e5787828745d3d08400daed75812d671"


def fake_proc(tmp_path: Path, processes: dict[int, bytes]) -> Path:
    proc = tmp_path / "proc"
    for pid, cmdline in processes.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cmdline").write_bytes(cmdline)
    (proc / "self").mkdir()
    return proc


def test_only_the_containers_own_runtime_processes_are_found(tmp_path: Path) -> None:
    proc = fake_proc(
        tmp_path,
        {
            10: b"/usr/bin/containerd-shim-runc-v2\0-namespace\0moby\0-id\0" + CONTAINER.encode(),
            11: b"runsc-gofer\0--bundle\0/run/x/" + CONTAINER.encode(),
            12: b"runsc-sandbox\0boot\0" + OTHER.encode(),
            13: b"python3\0-c\0print('" + CONTAINER.encode() + b"')",  # not a runtime
            14: b"/usr/bin/dockerd\0",
        },
    )
    assert stuck.runtime_processes(CONTAINER, proc) == [10, 11]


def test_a_short_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="64-hex"):
        stuck.runtime_processes(CONTAINER[:12], tmp_path)


class FlakyApi:
    """A Docker API whose removals fail with the given texts, then succeed."""

    def __init__(self, failures: list[str]) -> None:
        self.failures = failures
        self.calls = 0

    def remove_container(self, container_id: str, **_: Any) -> None:
        self.calls += 1
        if self.failures:
            raise RuntimeError(self.failures.pop(0))


def test_a_stuck_removal_is_unstuck_once_and_retried() -> None:
    api = FlakyApi(["UnixHTTPConnectionPool(host='localhost', port=None): Read timed out."])
    unstuck: list[str] = []
    outcome = cleanup.remove(api, CONTAINER, unstick=lambda cid: unstuck.append(cid) or [42])
    assert outcome == "removed"
    assert unstuck == [CONTAINER]
    assert api.calls == 2


def test_a_removal_that_stays_stuck_is_reported_never_hidden() -> None:
    api = FlakyApi(["removal of container x is already in progress"] * 2)
    outcome = cleanup.remove(api, CONTAINER, unstick=lambda cid: [42])
    assert outcome.startswith("failed: ")
    assert "already in progress" in outcome


def test_other_failures_do_not_kill_anything() -> None:
    api = FlakyApi(["permission denied"])
    killed: list[str] = []
    outcome = cleanup.remove(api, CONTAINER, unstick=lambda cid: killed.append(cid) or [])
    assert outcome == "failed: permission denied"
    assert killed == []
