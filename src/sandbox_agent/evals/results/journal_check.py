"""Reading a run journal back: each line's signature, evaluation and record checked
(``check_line``), a record's run folder checked against it (``run_folder_check``), and a
journal's lines read as a resume and ``verify RESULTS_DIR`` read them (``read_lines``).
The journal itself, and what makes a line trusted, is ``journal``'s docstring."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import ValidationError

from sandbox_agent.canonical import canonical_json
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.records import HARNESS_ERROR, TRACES_DIR, RunRecord
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evidence.chain import read_bounded
from sandbox_agent.evidence.keys import load_public_key
from sandbox_agent.evidence.seal import EVIDENCE_FILE
from sandbox_agent.evidence.verify import verify_run

JOURNAL_FILE = "runs.jsonl"
JOURNAL_SCHEMA = 2
"""2: each run's line is signed (schema 1's unsigned lines are never reused)."""
MAX_JOURNAL_BYTES = 256 * 1024 * 1024
"""A journal over this size is refused (about 50,000 runs' lines)."""
NODE_KEYS_DIR = "nodes"
"""``eval --ray``: ``<ip>-<node id>.pub`` per node, the key its runs were sealed with."""

CheckRun = Callable[[RunRecord], str | None]
"""Why a record's run folder does not back it (None: it does)."""


class RunKey(NamedTuple):
    task_id: str
    task_version: int
    repeat: int


def is_journal_header(head: Any) -> bool:
    """A journal's first line: its schema (the integer 1 or 2, SR-11 F7) and an identity."""
    schema = head.get("journal") if isinstance(head, dict) else None
    return (
        type(schema) is int
        and schema in (1, JOURNAL_SCHEMA)
        and isinstance(head.get("identity"), dict)
    )


def case_key(case: EvalCase, repeat: int) -> RunKey:
    return RunKey(case.task.id, case.task.version, repeat)


def identity_sha256(identity: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(identity)).hexdigest()


def check_line(
    entry: Any, identity_digest: str, public_key: Ed25519PublicKey, evaluation: str | None = None
) -> tuple[RunKey, str, RunRecord] | str:
    """One journal line's key, task hash and record, or why it cannot be trusted.

    Args:
        evaluation: the results folder's own id (its journal header's ``evaluation``;
            None for a journal written before there was one).
    """
    if not isinstance(entry, dict):
        return "not a journal line"
    try:
        signature = base64.b64decode(str(entry.get("signature", "")), validate=True)
        unsigned = {name: value for name, value in entry.items() if name != "signature"}
        public_key.verify(signature, canonical_json(unsigned))
    except (InvalidSignature, binascii.Error, ValueError, TypeError, RecursionError):
        return "its signature does not hold under this host's key (edited, or signed elsewhere)"
    if entry.get("identity_sha256") != identity_digest:
        return "it was written for another evaluation"
    if entry.get("evaluation") != evaluation:
        return "it was written in another results folder (another run of this evaluation)"
    try:
        task_id, version, repeat = entry["key"]
        key = RunKey(str(task_id), int(version), int(repeat))
        record = RunRecord.model_validate(entry["record"])
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError, ValidationError):
        return "it holds no record"
    if RunKey(record.task_id, record.task_version, record.repeat) != key:
        return "its record is of another run than its key"
    return key, str(entry.get("task_sha256")), record


def run_folder_check(results_dir: Path, public_key: Ed25519PublicKey | None = None) -> CheckRun:
    """The default ``CheckRun``: the record's run folder verifies under ``public_key``
    (this host's when None; under ``eval --ray``, the key of the node that sealed it, as
    that node declared it), and its sealed status is the record's."""

    def check(record: RunRecord) -> str | None:
        harness_error = record.status == HARNESS_ERROR
        if harness_error and (record.passed or record.clean):
            return "a harness error cannot count as passed"
        if not record.trace_path:
            # A run the harness could not finish may have sealed nothing: its signed
            # line is all there is, and it counts as not passed (SR-11 F9).
            return None if harness_error else "it names no run folder"
        # The folder as it is in this results folder (a copy handed to a reviewer holds
        # its own), never where the record's absolute path pointed when it was written.
        run_dir = results_dir / TRACES_DIR / Path(record.trace_path).parent.name
        key = public_key
        if record.node is not None:
            node_key = results_dir / NODE_KEYS_DIR / f"{record.node.replace('/', '-')}.pub"
            try:
                key = load_public_key(node_key)
            except UsageError:
                return f"the key of its node {record.node} is not in {results_dir / NODE_KEYS_DIR}"
        report = verify_run(run_dir, public_key=key, allow_missing_source=True, rehash_source=False)
        if not report.ok:
            return f"its run folder {run_dir} does not verify ({', '.join(report.failed())})"
        evidence = json.loads(read_bounded(run_dir / EVIDENCE_FILE))["record"]
        sealed = evidence["result"]
        if sealed.get("run_id") != run_dir.name:
            return f"its run folder {run_dir} holds another run ({sealed.get('run_id')})"
        if sealed.get("status") != record.status and not harness_error:
            # (A held-out phase that raised makes the record HARNESS_ERROR over the
            # controller's sealed status.)
            return f"its run folder {run_dir} sealed another status"
        if evidence.get("fixture_sha256_before") != record.fixture_sha256:
            return f"its run folder {run_dir} sealed another repository"
        return None

    return check


def read_lines(
    lines: list[str],
    identity_digest: str,
    public_key: Ed25519PublicKey,
    evaluation: str | None = None,
) -> tuple[dict[RunKey, tuple[str, RunRecord]], list[str]]:
    """A journal's run lines as a resume reads them (and ``verify RESULTS_DIR``): for each
    run the last line that holds (its task hash and record), and why each other failed."""
    found: dict[RunKey, tuple[str, RunRecord]] = {}
    refused: list[str] = []
    for line in lines:
        checked = check_line(parse_line(line), identity_digest, public_key, evaluation)
        if isinstance(checked, str):
            refused.append(checked)
        else:
            found[checked[0]] = (checked[1], checked[2])
    return found, refused


def parse_line(line: str) -> Any:
    """A journal line as JSON; None when it is not (cut short, nested too deep)."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None
