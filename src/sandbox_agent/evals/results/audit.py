"""``sandbox-agent verify RESULTS_DIR``: what a reviewer handed an evaluation's folder can
check, with the signer's public key and the evaluation's inputs.

Every run that ``report.json`` counts must be backed twice: by its line in ``runs.jsonl``,
signed by the key given (this host's by default) for the evaluation the journal's header
names (``journal_check.check_line``), holding that very record; and by its run folder, which must
verify under the key that sealed it, with the record's status and repository digest
(``journal_check.run_folder_check``). Each run is counted once, the summary is recomputed from
the runs. The held-out verdicts, ``checks`` and ``passed`` are in the signed lines, so none
of the numbers the report gives rests on an unsigned file.

The inputs: each signed line holds its task's hash, which covers the content of the
repository, plan and held-out tests the run was given (``inputs.task_sha256``). The
evaluation's inputs are rebuilt here from the journal's identity (suite, control,
``--fixtures-dir``, ``--plans``, ``--dataset``) and each run's hash must be theirs: a run
made on a fixture with its bug removed, or under another plan, is not verified. The
header is unsigned: only an identity a signed line vouches for (its hash is in the line)
is acted on, and only for tasks of signed runs; with no such line nothing is rebuilt
(SR-12 D5). Rebuilding reads, it never fetches: no sdist is downloaded and no dependency
environment made (a realrepos sdist this host lacks fails the check, saying so).

The headline: the report's suite, control flag, provider, model, runtime, notice, per-task
table and repeats must be the ones the journal and the runs give, and ``report.md`` what
``report.json`` renders to. ``jobs``, ``started_at``, ``wall_seconds`` and ``cluster`` are
unsigned presentation.

What it cannot say: that an evaluation left out runs it did not like (a reviewer compares
the report's tasks and repeats with what was asked), nor, for ``eval --ray``, that a
node's key is that node's: nodes declare their own (docs/CLUSTER.md, "Trust").
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import ValidationError

from sandbox_agent.canonical import canonical_json
from sandbox_agent.errors import SandboxAgentError
from sandbox_agent.evals.results.inputs import task_inputs, task_sha256
from sandbox_agent.evals.results.journal_check import (
    JOURNAL_FILE,
    MAX_JOURNAL_BYTES,
    RunKey,
    identity_sha256,
    is_journal_header,
    read_lines,
    run_folder_check,
)
from sandbox_agent.evals.results.records import HARNESS_ERROR, RunRecord, per_task, summarize
from sandbox_agent.evals.results.report import EvalReport, notice_for, to_markdown
from sandbox_agent.evidence.chain import read_bounded
from sandbox_agent.evidence.keys import load_public_key, public_key_path
from sandbox_agent.evidence.verify import VerifyCheck

REPORT_FILE = "report.json"
MARKDOWN_FILE = "report.md"

TaskHashes = Callable[[dict[str, Any], list[str]], dict[str, tuple[str, str]]]
"""Each named task's hash and repository digest, from an evaluation's identity (its
inputs rebuilt)."""
Found = dict[RunKey, tuple[str, RunRecord]]


def is_results_dir(folder: Path) -> bool:
    """An evaluation's folder (a journal, and no trace of a single run)."""
    return (folder / JOURNAL_FILE).is_file() and not (folder / "trace.jsonl").exists()


def rebuilt_task_hashes(
    identity: dict[str, Any], task_ids: list[str]
) -> dict[str, tuple[str, str]]:
    """The default ``TaskHashes``: the evaluation's cases built here, as ``eval`` built
    them (in a temporary folder, removed after), from what is on this host: nothing is
    fetched, no dependency environment made (``suite_of_identity``: ``offline``).

    Raises:
        SandboxAgentError: its inputs cannot be built here (a task, fixture, plan or
            dataset missing, a realrepos sdist not on this host).
    """
    from sandbox_agent.evals.tasks.suites import build_cases, suite_of_identity

    suite, options = suite_of_identity(identity, task_ids)
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-verify-") as scratch:
        hashes = {}
        for case in build_cases(suite, options, Path(scratch)):
            inputs = task_inputs(case)
            hashes[case.task.id] = task_sha256(case, inputs), inputs.repository
        return hashes


def verify_results(
    results_dir: Path,
    *,
    public_key: Ed25519PublicKey | None = None,
    task_hashes: TaskHashes = rebuilt_task_hashes,
) -> list[VerifyCheck]:
    """The checks of an evaluation's folder, each one line; all ``ok`` or it is not
    verified. Never raises for what it finds.

    Args:
        public_key: the signer's; this host's when None.
        task_hashes: the hashes of the evaluation's tasks (tests of the harness's own fake
            tasks pass theirs).
    """
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
    header, found, refused = _journal(results_dir / JOURNAL_FILE, key)
    add("journal", bool(found), _journal_detail(header, found, refused))
    if header is None:
        return checks
    report = _report(results_dir / REPORT_FILE)
    if isinstance(report, str):
        add("report", False, report)
        return checks
    identity = header["identity"]
    wrong = _headline(report, identity)
    add(
        "report",
        not wrong,
        f"suite {report.suite}, control {report.control}, provider {report.provider}"
        f"{_endpoint(identity)}, {len(report.runs)} runs: as the journal and the runs give"
        if not wrong
        else f"its {wrong[0]} is not the one the journal and the runs give",
    )
    check_run = run_folder_check(results_dir, public_key)
    seen: set[RunKey] = set()
    unbacked: list[str] = []
    for run in report.runs:
        run_key = RunKey(run.task_id, run.task_version, run.repeat)
        name = f"{run.task_id} v{run.task_version} #{run.repeat}"
        signed = found.get(run_key)
        if run_key in seen:
            unbacked.append(f"{name}: counted twice")
        elif signed is None:
            unbacked.append(f"{name}: no signed line in the journal")
        elif _json_of(signed[1]) != _json_of(run):
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
    if found:
        add("inputs", *_inputs(report, found, identity, task_hashes))
    else:
        add("inputs", False, "not rebuilt: no signed line vouches for the journal's header")
    summary = summarize(report.runs)
    add(
        "summary",
        summary == report.summary,
        f"{summary.passed}/{summary.runs} passed, recomputed from the runs"
        if summary == report.summary
        else "the report's summary is not the one its runs give",
    )
    add(MARKDOWN_FILE, *_markdown(results_dir / MARKDOWN_FILE, report))
    return checks


def _headline(report: EvalReport, identity: dict[str, Any]) -> list[str]:
    """The report's fields that are not what its journal's identity and its runs give."""
    model = identity.get("model") or next((run.model for run in report.runs if run.model), "")
    expected = {
        "suite": identity.get("suite"),
        "control": identity.get("control"),
        "provider": identity.get("provider"),
        "model": model,
        "runtime": identity.get("runtime"),
        "notice": notice_for(report.provider),
        "tasks": per_task(report.runs),
        "identity": identity,
    }
    wrong = [name for name, value in expected.items() if getattr(report, name) != value]
    if report.repeats < 1 or any(run.repeat >= report.repeats for run in report.runs):
        wrong.append("repeats")
    return wrong


def _endpoint(identity: dict[str, Any]) -> str:
    options = identity.get("provider_options")
    endpoint = options.get("base_url") if isinstance(options, dict) else None
    return f" at {endpoint}" if endpoint else ""


def _inputs(
    report: EvalReport, found: Found, identity: dict[str, Any], task_hashes: TaskHashes
) -> tuple[bool, str]:
    """Whether every counted run's signed task hash is the one its inputs give here
    (rebuilt for the tasks of signed runs only)."""
    task_ids = sorted(
        {
            run.task_id
            for run in report.runs
            if RunKey(run.task_id, run.task_version, run.repeat) in found
        }
    )
    if not task_ids:
        return not report.runs, "no signed runs to check"
    try:
        hashes = task_hashes(identity, task_ids)
    except (SandboxAgentError, ValidationError, OSError) as error:
        return False, (
            f"the evaluation's inputs cannot be rebuilt here ({error}): verify where its "
            "fixtures, plans and dataset are, from the folder it ran in"
        )
    other = []
    for run in report.runs:
        line = found.get(RunKey(run.task_id, run.task_version, run.repeat))
        task_hash, repository = hashes.get(run.task_id, ("", ""))
        if line is None:
            continue  # not backed: the runs check says so
        if line[0] != task_hash or (
            run.status != HARNESS_ERROR and run.fixture_sha256 != repository
        ):
            other.append(f"{run.task_id} #{run.repeat}")
    if other:
        return False, (
            f"{len(other)} of {len(report.runs)} runs were made on other inputs (repository, "
            f"plan or held-out tests) than this host's; first: {other[0]}"
        )
    return (
        True,
        f"all {len(report.runs)} runs of the {len(task_ids)} tasks' inputs as they are here",
    )


def _markdown(path: Path, report: EvalReport) -> tuple[bool, str]:
    try:
        text = read_bounded(path, MAX_JOURNAL_BYTES).decode("utf-8", errors="replace")
    except OSError as error:
        return False, f"{MARKDOWN_FILE} cannot be read ({error.strerror or error})"
    if text != to_markdown(report):
        return False, f"{MARKDOWN_FILE} is not what {REPORT_FILE} renders to (edited)"
    return True, f"what {REPORT_FILE} renders to"


def _json_of(record: RunRecord) -> bytes | None:
    """The record as it is signed (None when it holds a number JSON cannot carry)."""
    try:
        return canonical_json(record.model_dump(mode="json"))
    except ValueError:
        return None


def _journal(path: Path, key: Ed25519PublicKey) -> tuple[dict[str, Any] | None, Found, int]:
    """The journal's header, its task hashes and records whose lines hold (the last for
    each run, as a resume reads it), and how many lines did not."""
    try:
        lines = read_bounded(path, MAX_JOURNAL_BYTES).decode(errors="replace").splitlines()
        header: Any = json.loads(lines[0]) if lines else None
        if not is_journal_header(header):
            return None, {}, 0
        digest = identity_sha256(header["identity"])
    except (OSError, ValueError, RecursionError):  # ValueError: Infinity (SR-11 F4)
        return None, {}, 0
    evaluation = header.get("evaluation")
    evaluation = evaluation if isinstance(evaluation, str) else None
    found, refused = read_lines(lines[1:], digest, key, evaluation)
    return header, found, len(refused)


def _journal_detail(header: dict[str, Any] | None, records: Found, refused: int) -> str:
    if header is None:
        return f"{JOURNAL_FILE} is missing, too large or not an evaluation journal"
    not_signed = f"; {refused} lines not (cut short, unsigned or changed)" if refused else ""
    if not records:
        return (
            "no run signed by the trusted key for the evaluation its header names (an "
            f"unsigned header is nobody's word){not_signed}"
        )
    return f"{len(records)} runs signed for this evaluation{not_signed}"


def _report(path: Path) -> EvalReport | str:
    try:
        return EvalReport.model_validate_json(read_bounded(path, MAX_JOURNAL_BYTES))
    except OSError as error:
        return f"{REPORT_FILE} cannot be read ({error.strerror or error})"
    except ValidationError:
        return f"{REPORT_FILE} is not an evaluation report"
