"""The trace's hash chain: seq 0 starts at 64 zeros; each line names its predecessor's hash."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.trace import GENESIS_SHA256, Redactor, TraceWriter, read_chain


def test_chain_is_well_formed(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    writer = TraceWriter(tmp_path / "run", "r1", Redactor({}), seen.append)
    writer.emit("run_started", task="t")
    writer.emit("tool_call", tool="read_file", arguments={"path": "sk-ant-0123456789abcdef"})
    writer.emit("run_finished", status="FAILED")
    writer.close()
    lines = writer.path.read_bytes().splitlines()
    events = [json.loads(line) for line in lines]
    assert events[0]["prev_sha256"] == GENESIS_SHA256
    for previous, line, event in zip(lines, lines[1:], events[1:], strict=False):
        assert event["prev_sha256"] == hashlib.sha256(previous).hexdigest()
        assert line
    assert writer.head_sha256 == hashlib.sha256(lines[-1]).hexdigest()
    assert [e["seq"] for e in events] == [0, 1, 2]
    assert all(e["schema"] == 1 and e["run_id"] == "r1" for e in events)
    assert all(e["time"].endswith("Z") for e in events)
    assert "sk-ant" not in writer.path.read_text()
    assert seen == events
    assert read_chain(writer.path) == events


def test_tampering_breaks_the_chain(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "run", "r1", Redactor({}))
    for index in range(3):
        writer.emit("tool_call", index=index)
    writer.close()
    lines = writer.path.read_text().splitlines()
    lines[1] = lines[1].replace('"index": 1', '"index": 9')
    writer.path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="line 3"):
        read_chain(writer.path)


def test_a_run_folder_is_never_reused(tmp_path: Path) -> None:
    TraceWriter(tmp_path / "run", "r1", Redactor({})).close()
    with pytest.raises(FileExistsError):
        TraceWriter(tmp_path / "run", "r1", Redactor({}))


class _SlowRedactor(Redactor):
    """Widens the window between reading ``seq`` and writing the line, as a busy machine
    does: a run's baseline thread and its main thread emit at the same moment."""

    def value(self, value: Any) -> Any:
        time.sleep(0.005)
        return super().value(value)


def test_events_emitted_from_several_threads_keep_one_chain(tmp_path: Path) -> None:
    """The baseline's collect-only run writes its ``sandbox_run`` event from its own thread
    while the run's thread writes its own: two lines with the same ``seq`` broke the chain
    and a good run failed ``verify`` (seen in CI, issue 21)."""
    writer = TraceWriter(tmp_path / "run", "r1", _SlowRedactor({}))

    def emit_some(thread: int) -> None:
        for index in range(5):
            writer.emit("sandbox_run", thread=thread, index=index)

    threads = [threading.Thread(target=emit_some, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    events = read_chain(writer.path)
    assert [event["seq"] for event in events] == list(range(30))
    last = writer.path.read_bytes().splitlines()[-1]
    assert writer.head_sha256 == hashlib.sha256(last).hexdigest()
