"""`sandbox-agent verify RUN_DIR`: one line per check, the first failing event, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.cli import main


def test_verified_run_exits_0(sealed_run: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(sealed_run.run_dir)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in out[:7]] == [
        "evidence", "signature", "trace_chain", "trace_head", "result", "diff", "fixture",
    ]  # fmt: skip
    assert out[-1] == "verified"


def test_tampered_run_exits_1_naming_the_event(
    sealed_run: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = sealed_run.trace_lines()
    del lines[1]
    sealed_run.write_trace_lines(lines)
    assert main(["verify", str(sealed_run.run_dir)]) == 1
    out = capsys.readouterr().out
    assert "FAIL trace_chain" in out
    assert "first failing event: line 2 (seq 2)" in out


def test_json_report(sealed_run: Any, capsys: pytest.CaptureFixture[str]) -> None:
    (sealed_run.run_dir / "diff.patch").write_text("")
    assert main(["verify", str(sealed_run.run_dir), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [c["name"] for c in report["checks"] if not c["ok"]] == ["diff"]


def test_public_key_flag_and_missing_source_flag(
    sealed_run: Any, state_home: Path, tmp_path: Path
) -> None:
    import shutil

    shutil.rmtree(sealed_run.source)
    key = tmp_path / "trusted.pub"
    (state_home / "signing-key.pub").rename(key)
    args = ["verify", str(sealed_run.run_dir), "--public-key", str(key)]
    assert main(args) == 1
    assert main([*args, "--allow-missing-source"]) == 0


def test_not_a_folder_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(tmp_path / "nope")]) == 2
    assert "holds trace.jsonl" in capsys.readouterr().err
