"""Synthetic run folders in the controller's format, so evidence tests need no controller."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.evidence import seal_run
from sandbox_agent.workspace.hashing import tree_sha256

RUN_ID = "run-0123456789abcdef"
DIFF = "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_chained_trace(path: Path, run_id: str, events: list[dict[str, Any]]) -> str:
    """Write ``events`` as a hash-chained trace; return the head (hash of the last line)."""
    previous = "0" * 64
    lines = []
    for seq, fields in enumerate(events):
        record = {
            "schema": 1,
            "run_id": run_id,
            "seq": seq,
            "time": dt.datetime(2025, 1, 1, tzinfo=dt.UTC).isoformat(),
            **fields,
            "prev_sha256": previous,
        }
        line = json.dumps(record, ensure_ascii=False).encode()
        lines.append(line)
        previous = sha256_hex(line)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return previous


@dataclass
class SyntheticRun:
    run_dir: Path
    source: Path
    record: dict[str, Any]

    @property
    def trace(self) -> Path:
        return self.run_dir / "trace.jsonl"

    def trace_lines(self) -> list[bytes]:
        return self.trace.read_bytes().splitlines()

    def write_trace_lines(self, lines: list[bytes]) -> None:
        self.trace.write_bytes(b"".join(line + b"\n" for line in lines))

    def evidence(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads((self.run_dir / "evidence.json").read_text())
        return document

    def write_evidence(self, document: dict[str, Any]) -> None:
        (self.run_dir / "evidence.json").write_text(json.dumps(document))


def make_run(root: Path, events: int = 6) -> SyntheticRun:
    """A sealed run folder over a small source tree, as the controller would leave it."""
    source = root / "source"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "core.py").write_text("x = 1\n")
    (source / "test_core.py").write_text("def test_x():\n    assert True\n")
    fixture_hash = tree_sha256(source)
    run_dir = root / "runs" / RUN_ID
    run_dir.mkdir(parents=True)
    kinds = ["run_started", "model_turn", "tool_call", "tool_result", "final_tests", "run_ended"]
    head = write_chained_trace(
        run_dir / "trace.jsonl",
        RUN_ID,
        [{"event": kinds[index % len(kinds)], "n": index} for index in range(events)],
    )
    result = {
        "run_id": RUN_ID,
        "status": "SUCCEEDED",
        "reason": "final tests passed",
        "diff": DIFF,
        "files_changed": ["pkg/core.py"],
        "final_tests": {"passed": True, "tests_run": 1, "failures": 0, "status": "completed"},
        "budget_used": {"iterations": 2, "tool_calls": 3, "policy_denials": 0},
        "fixture": {"intact": True, "sha256_before": fixture_hash, "sha256_after": fixture_hash},
        "trace_path": str(run_dir / "trace.jsonl"),
        "tool_calls": [],
    }
    (run_dir / "result.json").write_text(json.dumps(result, indent=2))
    (run_dir / "diff.patch").write_text(DIFF)
    record: dict[str, Any] = {
        "result": result,
        "fixture_sha256_before": fixture_hash,
        "fixture_sha256_after": fixture_hash,
        "diff_sha256": sha256_hex(DIFF.encode()),
        "image_id": "sha256:" + "ab" * 32,
        "spec_sha256s": ["cd" * 32],
        "attestation_sha256s": ["ef" * 32],
        "exit_report_sha256s": ["12" * 32],
        "trace_head_sha256": head,
        "source_path": str(source),
    }
    seal_run(run_dir, record)
    return SyntheticRun(run_dir=run_dir, source=source, record=record)


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(home))
    return home


@pytest.fixture
def sealed_run(tmp_path: Path, state_home: Path) -> SyntheticRun:
    return make_run(tmp_path)
