"""``sandbox-agent verify RESULTS_DIR``: what a reviewer handed an evaluation's folder can
check, with the signer's public key and nothing else.

Every run that ``report.json`` counts must be backed twice: by its line in ``runs.jsonl``,
signed by the key given (this host's by default) for the evaluation the journal's header
names (``journal.check_line``), holding that very record; and by its run folder, which must
verify under the key that sealed it, with the record's status (``journal.run_folder_check``).
Each run is counted once, the report's suite and control flag are the journal's, and the
summary is recomputed from the runs. The held-out verdicts, ``checks`` and ``passed`` are
in the signed lines, so none of the numbers the report gives rests on an unsigned file.

What it cannot say: that an evaluation left out runs it did not like (a reviewer compares
the report's tasks and repeats with what was asked), nor, for ``eval --ray``, that a
node's key is that node's: nodes declare their own (docs/CLUSTER.md, "Trust").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import ValidationError

from sandbox_agent.evals.journal import (
    JOURNAL_FILE,
    MAX_JOURNAL_BYTES,
    RunKey,
    identity_sha256,
    read_lines,
    run_folder_check,
)
from sandbox_agent.evals.records import RunRecord, summarize
from sandbox_agent.evals.report import EvalReport
from sandbox_agent.evidence.chain import read_bounded
from sandbox_agent.evidence.keys import load_public_key, public_key_path
from sandbox_agent.evidence.seal import canonical_json
from sandbox_agent.evidence.verify import VerifyCheck

REPORT_FILE = "report.json"


def is_results_dir(folder: Path) -> bool:
    """An evaluation's folder (a journal, and no trace of a single run)."""
    return (folder / JOURNAL_FILE).is_file() and not (folder / "trace.jsonl").exists()


def verify_results(
    results_dir: Path, *, public_key: Ed25519PublicKey | None = None
) -> list[VerifyCheck]:
    """The checks of an evaluation's folder, each one line; all ``ok`` or it is not
    verified. Never raises for what it finds."""
    checks: list[VerifyCheck] = []

    def add(name: str, ok: bool, detail: str) -> bool:
        checks.append(VerifyCheck(name=name, ok=ok, detail=detail))
        return ok

    key = public_key
    if key is None and public_key_path().is_file():
        key = load_public_key(public_key_path())
    if key is None:
        add("key", False, "no trusted public key here: pass --public-key (signing-key.pub)")
        return checks
    add("key", True, "the given key" if public_key else f"this host's key ({public_key_path()})")
    header, records, refused = _journal(results_dir / JOURNAL_FILE, key)
    add("journal", header is not None, _journal_detail(header, records, refused))
    if header is None:
        return checks
    report = _report(results_dir / REPORT_FILE)
    if isinstance(report, str):
        add("report", False, report)
        return checks
    identity = header["identity"]
    add(
        "report",
        report.suite == identity.get("suite") and report.control == identity.get("control"),
        f"suite {report.suite}, control {report.control}, {len(report.runs)} runs "
        f"(the journal's: suite {identity.get('suite')}, control {identity.get('control')})",
    )
    check_run = run_folder_check(results_dir, public_key)
    seen: set[RunKey] = set()
    unbacked: list[str] = []
    for run in report.runs:
        run_key = RunKey(run.task_id, run.task_version, run.repeat)
        name = f"{run.task_id} v{run.task_version} #{run.repeat}"
        signed = records.get(run_key)
        if run_key in seen:
            unbacked.append(f"{name}: counted twice")
        elif signed is None:
            unbacked.append(f"{name}: no signed line in the journal")
        elif canonical_json(signed.model_dump(mode="json")) != canonical_json(
            run.model_dump(mode="json")
        ):
            unbacked.append(f"{name}: differs from its signed line")
        elif (why := check_run(run)) is not None:
            unbacked.append(f"{name}: {why}")
        seen.add(run_key)
    add(
        "runs",
        not unbacked,
        f"all {len(report.runs)} backed by a signed line and a verifying run folder"
        if not unbacked
        else f"{len(unbacked)} of {len(report.runs)} not backed; first: {unbacked[0]}",
    )
    summary = summarize(report.runs)
    add(
        "summary",
        summary == report.summary,
        f"{summary.passed}/{summary.runs} passed, recomputed from the runs"
        if summary == report.summary
        else "the report's summary is not the one its runs give",
    )
    return checks


def _journal(
    path: Path, key: Ed25519PublicKey
) -> tuple[dict[str, Any] | None, dict[RunKey, RunRecord], int]:
    """The journal's header, its records whose lines hold (the last for each run, as a
    resume reads it), and how many lines did not."""
    try:
        lines = read_bounded(path, MAX_JOURNAL_BYTES).decode(errors="replace").splitlines()
        header = json.loads(lines[0]) if lines else None
    except (OSError, ValueError, RecursionError):
        return None, {}, 0
    if not isinstance(header, dict) or not isinstance(header.get("identity"), dict):
        return None, {}, 0
    found, refused = read_lines(lines[1:], identity_sha256(header["identity"]), key)
    return header, {run: record for run, (_, record) in found.items()}, len(refused)


def _journal_detail(header: dict[str, Any] | None, records: dict[RunKey, Any], refused: int) -> str:
    if header is None:
        return f"{JOURNAL_FILE} is missing, too large or not an evaluation journal"
    return f"{len(records)} runs signed for this evaluation" + (
        f"; {refused} lines not (cut short, unsigned or changed)" if refused else ""
    )


def _report(path: Path) -> EvalReport | str:
    try:
        return EvalReport.model_validate_json(read_bounded(path, MAX_JOURNAL_BYTES))
    except OSError as error:
        return f"{REPORT_FILE} cannot be read ({error.strerror or error})"
    except ValidationError:
        return f"{REPORT_FILE} is not an evaluation report"
