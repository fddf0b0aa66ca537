"""SR-6: ``verify`` against someone who edits a sealed run folder (each test written first)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.evidence import verify_run


def result_text(run: Any) -> str:
    return (run.run_dir / "result.json").read_text()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"passed": true', '"passed": 1'),
        ('"failures": 0', '"failures": false'),
        ('"tests_run": 1', '"tests_run": 1.0'),
        ('"intact": true', '"intact": 1.0'),
        # A first-wins reader (many are) sees FAILED; Python's last-wins saw the sealed one.
        ('"status": "SUCCEEDED"', '"status": "FAILED", "status": "SUCCEEDED"'),
    ],
)
def test_f9_a_result_equal_only_to_pythons_eye_is_refused(
    sealed_run: Any, old: str, new: str
) -> None:
    """SR-6 F9: ``result.json`` was compared with ``==`` on Python objects, so 1, 1.0 and
    true were one value, and a duplicated key passed with its last value."""
    text = result_text(sealed_run)
    assert old in text
    (sealed_run.run_dir / "result.json").write_text(text.replace(old, new, 1))
    report = verify_run(sealed_run.run_dir)
    assert not report.ok
    assert report.failed() == ["result"]


def test_f9_duplicate_keys_in_evidence_json_are_refused(sealed_run: Any) -> None:
    """The same ambiguity in the signed document: a first-wins reader would see another record."""
    path = sealed_run.run_dir / "evidence.json"
    text = path.read_text()
    forged = text.replace('"schema":', '"schema": "forged", "schema":', 1)
    path.write_text(forged)
    report = verify_run(sealed_run.run_dir)
    assert not report.ok
    assert "evidence" in report.failed()


# Probes that hold -------------------------------------------------------------------


def test_holds_symlinked_files_and_extra_files_change_nothing(
    sealed_run: Any, tmp_path: Path
) -> None:
    """Content is what is checked: a symlink to the same bytes verifies, to other bytes
    fails, and extra files in the folder are not evidence of anything."""
    folder = sealed_run.run_dir
    (folder / "result.forged.json").write_text('{"status": "SUCCEEDED"}')
    (folder / ".evidence.json.123.tmp").write_text("{}")
    elsewhere = tmp_path / "elsewhere.patch"
    elsewhere.write_text("--- a/x\n+++ b/x\n")
    (folder / "diff.patch").unlink()
    os.symlink(elsewhere, folder / "diff.patch")
    assert verify_run(folder).failed() == ["diff"]


def test_holds_a_whitespace_only_reformat_of_result_json_verifies(sealed_run: Any) -> None:
    """Re-indenting is not a lie: the same data in other whitespace still verifies."""
    path = sealed_run.run_dir / "result.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=None))
    assert verify_run(sealed_run.run_dir).ok
