"""A real run is sealed by the controller and verifies; tampering with it does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.cli import main
from sandbox_agent.controller.loop import run_task
from sandbox_agent.controller.models import RunConfig
from sandbox_agent.evidence import verify_run


@pytest.mark.docker
@pytest.mark.slow
def test_a_real_run_verifies_and_tampering_is_caught(tmp_path: Path) -> None:
    result = run_task(
        RunConfig(fixture="paginator", task="fix the paginator", trace_dir=tmp_path / "runs")
    )
    run_dir = Path(result.trace_path).parent
    report = verify_run(run_dir)
    assert report.ok, [check for check in report.checks if not check.ok]
    assert main(["verify", str(run_dir)]) == 0

    lines = (run_dir / "trace.jsonl").read_bytes().splitlines()
    event = json.loads(lines[1])
    event["event"] = "forged"
    lines[1] = json.dumps(event, ensure_ascii=False).encode()
    (run_dir / "trace.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    report = verify_run(run_dir)
    assert report.failed() == ["trace_chain"]
    assert report.first_bad_event is not None
    assert report.first_bad_event.line == 3
    assert main(["verify", str(run_dir)]) == 1
