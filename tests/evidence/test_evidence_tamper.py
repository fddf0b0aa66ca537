"""Every kind of tampering with a sealed run is caught, and named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.evidence import REQUIRED_RECORD_FIELDS, verify_run


def test_an_untouched_run_verifies(sealed_run: Any) -> None:
    report = verify_run(sealed_run.run_dir)
    assert report.ok, report.checks
    assert report.first_bad_event is None
    assert [check.name for check in report.checks] == [
        "evidence", "signature", "trace_chain", "trace_head", "result", "diff", "fixture",
    ]  # fmt: skip


def _tampered(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return value[:-1] + ("0" if value[-1:] != "0" else "1")
    if isinstance(value, list):
        return [*value, "00" * 32]
    if isinstance(value, dict):
        return {**value, "status": "FAILED"}
    return value


@pytest.mark.parametrize("field", REQUIRED_RECORD_FIELDS)
def test_each_record_field_tampered_breaks_the_signature(sealed_run: Any, field: str) -> None:
    document = sealed_run.evidence()
    document["record"][field] = _tampered(document["record"][field])
    sealed_run.write_evidence(document)
    report = verify_run(sealed_run.run_dir)
    assert not report.ok
    assert "signature" in report.failed()
    assert "was changed" in report.check("signature").detail


@pytest.mark.parametrize("field", ["schema", "created", "signer", "signature"])
def test_envelope_fields_tampered_fail(sealed_run: Any, field: str) -> None:
    document = sealed_run.evidence()
    if field == "signer":
        document["signer"]["public_key"] = "A" * 43 + "="
    elif field == "signature":
        signature = document["signature"]
        # The first character carries six bits of the first byte: changing it always
        # changes the signature (replacing it with a fixed letter was a no-op 1 time in 64).
        document["signature"] = ("B" if signature[0] != "B" else "C") + signature[1:]
    else:
        document[field] = _tampered(document[field])
    sealed_run.write_evidence(document)
    report = verify_run(sealed_run.run_dir)
    assert not report.ok
    failed = report.failed()
    assert "signature" in failed or "evidence" in failed


def test_re_signed_by_another_key_is_refused(sealed_run: Any, tmp_path: Path) -> None:
    from sandbox_agent.evidence import load_or_create_signing_key
    from sandbox_agent.evidence.seal import build_evidence

    other = load_or_create_signing_key(tmp_path / "attacker")
    record = sealed_run.evidence()["record"]
    record["result"]["status"] = "FAILED"
    sealed_run.write_evidence(build_evidence(record, other))
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["signature", "result"]
    assert "not by this host's key" in report.check("signature").detail


def test_a_given_public_key_is_the_one_trusted(sealed_run: Any, tmp_path: Path) -> None:
    from sandbox_agent.evidence import load_or_create_signing_key

    stranger = load_or_create_signing_key(tmp_path / "stranger").public_key()
    assert verify_run(sealed_run.run_dir, public_key=stranger).failed() == ["signature"]


def test_without_any_trusted_key_the_signature_check_fails(
    sealed_run: Any, state_home: Path
) -> None:
    (state_home / "signing-key.pub").unlink()
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["signature"]
    assert "--public-key" in report.check("signature").detail


def test_a_changed_trace_line_names_the_break(sealed_run: Any) -> None:
    lines = sealed_run.trace_lines()
    lines[2] = lines[2].replace(b'"n": 2', b'"n": 9')
    sealed_run.write_trace_lines(lines)
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["trace_chain"]
    bad = report.first_bad_event
    assert (bad.line, bad.seq) == (4, 3)
    assert "line 3 was changed" in bad.reason


def test_a_changed_last_line_fails_the_head(sealed_run: Any) -> None:
    lines = sealed_run.trace_lines()
    lines[-1] = lines[-1].replace(b'"run_ended"', b'"run_endeD"')
    sealed_run.write_trace_lines(lines)
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["trace_head"]
    assert (report.first_bad_event.line, report.first_bad_event.seq) == (6, 5)


def test_a_deleted_line_is_named(sealed_run: Any) -> None:
    lines = sealed_run.trace_lines()
    del lines[3]
    sealed_run.write_trace_lines(lines)
    report = verify_run(sealed_run.run_dir)
    assert "trace_chain" in report.failed()
    bad = report.first_bad_event
    assert (bad.line, bad.seq) == (4, 4)
    assert "removed, inserted or reordered" in bad.reason


def test_deleted_last_line_fails_the_head(sealed_run: Any) -> None:
    sealed_run.write_trace_lines(sealed_run.trace_lines()[:-1])
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["trace_head"]
    assert "removed from or added at the end" in report.first_bad_event.reason


def test_an_inserted_line_is_named(sealed_run: Any) -> None:
    lines = sealed_run.trace_lines()
    forged = json.loads(lines[2])
    forged["event"] = "tool_call"
    lines.insert(3, json.dumps(forged).encode())
    sealed_run.write_trace_lines(lines)
    report = verify_run(sealed_run.run_dir)
    assert "trace_chain" in report.failed()
    assert report.first_bad_event.line == 4


def test_reordered_lines_are_named(sealed_run: Any) -> None:
    lines = sealed_run.trace_lines()
    lines[1], lines[2] = lines[2], lines[1]
    sealed_run.write_trace_lines(lines)
    report = verify_run(sealed_run.run_dir)
    assert "trace_chain" in report.failed()
    assert (report.first_bad_event.line, report.first_bad_event.seq) == (2, 2)


def test_a_renumbered_and_rechained_forgery_still_fails_the_head(sealed_run: Any) -> None:
    import hashlib

    events = [json.loads(line) for line in sealed_run.trace_lines()]
    del events[2]
    previous, lines = "0" * 64, []
    for seq, event in enumerate(events):
        event["seq"], event["prev_sha256"] = seq, previous
        line = json.dumps(event).encode()
        lines.append(line)
        previous = hashlib.sha256(line).hexdigest()
    sealed_run.write_trace_lines(lines)
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["trace_head"]


def test_an_event_of_another_run_is_named(sealed_run: Any) -> None:
    lines = sealed_run.trace_lines()
    first = json.loads(lines[0])
    first["run_id"] = "run-other"
    lines[0] = json.dumps(first).encode()
    sealed_run.write_trace_lines(lines)
    bad = verify_run(sealed_run.run_dir).first_bad_event
    assert bad.line == 1
    assert "run_id" in bad.reason


def test_a_missing_trace_fails(sealed_run: Any) -> None:
    sealed_run.trace.unlink()
    report = verify_run(sealed_run.run_dir)
    assert {"trace_chain", "trace_head"} <= set(report.failed())


def test_result_json_tampered(sealed_run: Any) -> None:
    path = sealed_run.run_dir / "result.json"
    result = json.loads(path.read_text())
    result["status"] = "FAILED"
    path.write_text(json.dumps(result))
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["result"]
    assert "['status']" in report.check("result").detail


def test_diff_patch_tampered(sealed_run: Any) -> None:
    (sealed_run.run_dir / "diff.patch").write_text("+import os\n")
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["diff"]


def test_source_tree_tampered(sealed_run: Any) -> None:
    (sealed_run.source / "pkg" / "core.py").write_text("x = 3\n")
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["fixture"]
    assert "now hashes to" in report.check("fixture").detail


def test_missing_source_fails_unless_allowed(sealed_run: Any) -> None:
    import shutil

    shutil.rmtree(sealed_run.source)
    report = verify_run(sealed_run.run_dir)
    assert report.failed() == ["fixture"]
    assert "source not available" in report.check("fixture").detail
    assert verify_run(sealed_run.run_dir, allow_missing_source=True).ok


def test_missing_evidence_fails_every_sealed_check(sealed_run: Any) -> None:
    (sealed_run.run_dir / "evidence.json").unlink()
    report = verify_run(sealed_run.run_dir)
    assert set(report.failed()) == {
        "evidence", "signature", "trace_head", "result", "diff", "fixture",
    }  # fmt: skip
    assert "never sealed" in report.check("evidence").detail
