"""The run journal: every finished run's record, appended to ``RESULTS_DIR/runs.jsonl`` as
it finishes, so an evaluation stopped midway (a session that ends, a machine that
reboots, Ctrl-C) keeps what finished and ``eval --resume`` runs only the rest.

The first line says which evaluation wrote the file (its ``identity``: suite, control or
not, provider, model, budgets, runtime, dependency options, repeats) and this folder's own
id (``evaluation``); each further line is one run: its key (task id, task version,
repeat), its task hash (the task's definition and its inputs' content, ``task_sha256``),
the SHA-256 of the identity, the folder's id, and the record, signed (Ed25519) with this
host's signing key, the key that seals every run's evidence. ``--resume`` refuses a
journal written by another evaluation (one line that names what differs), and reuses a
record only when

- its line's signature holds under this host's key, the line is of this evaluation (its
  identity's hash) and of this folder (its id), and its record is of the run its key
  names (a record edited, pasted under another key or carried over from another
  evaluation or folder runs again);
- its task's definition and inputs are the same as now, its run copied the repository
  hashed, and the run was not a harness error;
- its run folder is there and ``verify`` passes on it, with the sealed status and
  repository digest equal to the record's (a record whose evidence was deleted or
  changed runs again).

Anything else (a line cut short by a stop mid-write, a line that is not JSON, nested too
deep, or not a record) is ignored: that run runs again. ``check_line`` is what ``verify
RESULTS_DIR`` uses too.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import ValidationError

from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.records import HARNESS_ERROR, TRACES_DIR, RunRecord
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evidence.chain import read_bounded
from sandbox_agent.evidence.keys import fingerprint, load_or_create_signing_key, load_public_key
from sandbox_agent.evidence.seal import EVIDENCE_FILE, canonical_json
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


class TaskInputs(NamedTuple):
    """The content of what every run of a task is given, each as a SHA-256."""

    repository: str
    """The repository it starts from: the digest the controller seals as
    ``fixture_sha256_before`` (``repository_sha256``)."""
    plan: str
    """Its plan file ("" for none)."""
    held_out: str
    """Its held-out folder."""
    copy: str
    """The workspace copy of its repository, made as a run makes it
    (``Workspace.sha256_copy``): a run must have been given that very copy."""


def task_inputs(case: EvalCase) -> TaskInputs:
    """The case's inputs as they are now (read, never changed)."""
    repository = case_repository(case)
    return TaskInputs(
        repository=repository_sha256(repository),
        plan=file_sha256(case_plan(case)),
        held_out=repository_sha256(case.held_out_dir),
        copy=copy_sha256(repository),
    )


def copy_sha256(path: Path) -> str:
    """``Workspace.sha256_copy`` of a workspace made from ``path`` and removed (of the
    failure when none can be made)."""
    from sandbox_agent.errors import UsageError, WorkspaceError
    from sandbox_agent.workspace import Workspace

    try:
        with Workspace.create(path) as workspace:
            return workspace.sha256_copy
    except (UsageError, WorkspaceError) as error:
        return hashlib.sha256(f"not copied: {error}".encode()).hexdigest()


def case_repository(case: EvalCase) -> Path:
    """The folder a run of ``case`` copies its repository from."""
    return case.repo or (case.fixtures_dir or Path()) / case.task.fixture


def case_plan(case: EvalCase) -> Path | None:
    """The plan a run of ``case`` replays: its own, or the fixture's
    (``<fixtures_dir>/<name>.plan.json``) when it has none."""
    from sandbox_agent.controller.source import PLAN_SUFFIX

    if case.plan is not None:
        return case.plan
    if case.repo is not None or case.fixtures_dir is None:
        return None
    path = case.fixtures_dir / f"{case.task.fixture}{PLAN_SUFFIX}"
    return path if path.is_file() else None


def task_sha256(case: EvalCase, inputs: TaskInputs | None = None) -> str:
    """The task's definition (id, version, text, fixture, budgets, checks) and the content
    of its inputs (``inputs``, read now when None), hashed. A resumed record is reused,
    and ``verify RESULTS_DIR`` passes it, only for the same definition of the same inputs
    (SR-11 F1, F2).

    Host paths are left out (the held-out folder's is replaced by its content): a
    generated suite is built in a new temporary folder on each invocation (SR-11 F8).
    """
    definition = case.task.model_dump(mode="json")
    del definition["held_out"]["path"]
    content = (inputs or task_inputs(case))._asdict()
    return hashlib.sha256(canonical_json({"task": definition, **content})).hexdigest()


def repository_sha256(path: Path) -> str:
    """``tree_sha256`` of a folder as a run copies it (the controller's own digest of its
    repository); of the failure when it cannot be read (such a run fails to start, and is
    another run than one that could)."""
    from sandbox_agent.errors import WorkspaceError
    from sandbox_agent.workspace import WorkspaceLimits
    from sandbox_agent.workspace.workspace import source_sha256

    try:
        return source_sha256(path, WorkspaceLimits())
    except WorkspaceError as error:
        return hashlib.sha256(f"unreadable: {error}".encode()).hexdigest()


def file_sha256(path: Path | None) -> str:
    """A file's SHA-256 ("" for none; of the failure when it cannot be read)."""
    if path is None:
        return ""
    try:
        return hashlib.sha256(read_bounded(path)).hexdigest()
    except OSError as error:
        return hashlib.sha256(f"unreadable: {error.strerror or error}".encode()).hexdigest()


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


class Journal:
    """``RESULTS_DIR/runs.jsonl``: the records so far, and each new one as it finishes."""

    def __init__(
        self,
        results_dir: Path,
        identity: dict[str, Any],
        *,
        resume: bool,
        signing_key: Ed25519PrivateKey | None = None,
        check_run: CheckRun | None = None,
    ) -> None:
        """Open the journal; with ``resume``, read the records already there.

        Without ``resume``, a journal already there is kept aside as
        ``runs-<its time>.jsonl``, never overwritten.

        Args:
            signing_key: signs each line and checks the lines read; this host's when None.
            check_run: whether a record's run folder backs it; ``run_folder_check`` when
                None (tests of the scheduling pass their own).

        Raises:
            UsageError: ``resume`` and the journal there was written by another
                evaluation, or is not a journal, or is larger than ``MAX_JOURNAL_BYTES``;
                the folder is not one, or the journal is not a plain file (a link there
                is refused, never followed).
        """
        _plain_folder(results_dir)
        _plain_folder_or_none(results_dir / TRACES_DIR)
        self.path = results_dir / JOURNAL_FILE
        _plain_file_or_none(self.path)
        self.identity = json.loads(json.dumps(identity, sort_keys=True, default=str))
        self._identity_sha256 = identity_sha256(self.identity)
        self._key = signing_key or load_or_create_signing_key()
        self._check_run = check_run or run_folder_check(results_dir)
        self.ignored = 0
        """Lines of a resumed journal that could not be read (their runs run again)."""
        self.not_reused: dict[str, int] = {}
        """Why lines or records were not used, and how many each (a run with no usable
        line runs again; a line superseded by a later good one costs nothing)."""
        self._found: dict[RunKey, tuple[str, RunRecord]] = {}
        self.evaluation: str | None = None
        """This results folder's own id, signed into each line so that a line moved in
        from another folder of the same evaluation is not this one's (SR-11 R4); None in
        a journal written before there was one."""
        self._inputs: dict[EvalCase, tuple[TaskInputs, str]] = {}
        """Each case's inputs and task hash, taken the first time it is asked: by
        ``run_all``, for every case before any run starts."""
        if self.path.exists():
            if resume:
                self._read()
            else:
                set_aside(self.path)
        if not self.path.exists() or self.path.stat().st_size == 0:
            self.evaluation = uuid.uuid4().hex
            header = {"journal": JOURNAL_SCHEMA, "identity": self.identity}
            self._write_line({**header, "evaluation": self.evaluation})

    @classmethod
    def existing(cls, results_dir: Path) -> Journal:
        """The journal in ``results_dir`` as it stands, to read (under its own identity).

        Raises:
            UsageError: it is not an evaluation journal.
        """
        path = results_dir / JOURNAL_FILE
        _plain_file_or_none(path)
        try:
            data = read_bounded(path, MAX_JOURNAL_BYTES)  # never blocks (SR-11 F5)
        except OSError as error:
            raise UsageError(f"cannot read {path} ({error.strerror or error})") from None
        head: Any = _json(data.split(b"\n", 1)[0].decode("utf-8", errors="replace"))
        if not is_journal_header(head):
            raise UsageError(f"{path} is not an evaluation journal")
        return cls(results_dir, head["identity"], resume=True)

    def finished(self, case: EvalCase, repeat: int) -> RunRecord | None:
        """The journal's record of this run, when it has one for the same task definition
        that is a result (a ``HARNESS_ERROR`` runs again: it says nothing of the model)
        and whose run folder backs it."""
        inputs, digest = self.inputs(case)
        found = self._found.get(case_key(case, repeat))
        if found is None or found[0] != digest or found[1].status == HARNESS_ERROR:
            return None
        if found[1].fixture_sha256 != inputs.repository:
            self._not_reused("its run copied another repository than this task's")
            del self._found[case_key(case, repeat)]
            return None
        why = self._check_run(found[1])
        if why is not None:
            self._not_reused(why)
            del self._found[case_key(case, repeat)]
            return None
        return found[1]

    def records(self) -> list[RunRecord]:
        """Every record the journal holds, in the order their runs first finished."""
        return [record for _, record in self._found.values()]

    def append(self, case: EvalCase, record: RunRecord) -> None:
        """Add one finished run (signed, flushed and synced before it returns)."""
        key, digest = case_key(case, record.repeat), self.inputs(case)[1]
        self._found[key] = (digest, record)
        entry: dict[str, Any] = {
            "key": list(key),
            "task_sha256": digest,
            "identity_sha256": self._identity_sha256,
            "evaluation": self.evaluation,
            "record": record.model_dump(mode="json"),
            "signer": fingerprint(self._key.public_key()),
        }
        entry["signature"] = base64.b64encode(self._key.sign(canonical_json(entry))).decode()
        self._write_line(entry)

    def inputs(self, case: EvalCase) -> tuple[TaskInputs, str]:
        """The case's inputs and task hash as this evaluation first read them (each
        case's runs must be given these; ``executor.run_case`` checks)."""
        if case not in self._inputs:
            inputs = task_inputs(case)
            self._inputs[case] = inputs, task_sha256(case, inputs)
        return self._inputs[case]

    def _not_reused(self, why: str) -> None:
        self.not_reused[why] = self.not_reused.get(why, 0) + 1

    def _write_line(self, value: dict[str, Any]) -> None:
        line = json.dumps(value, ensure_ascii=True, sort_keys=True) + "\n"
        with self.path.open("a+b") as handle:
            # A stop mid-write leaves a last line without its newline: end it first, or
            # this record would be glued to it and lost at the next resume.
            handle.seek(0, os.SEEK_END)
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
            handle.write(line.encode("ascii"))
            handle.flush()
            os.fsync(handle.fileno())

    def _read(self) -> None:
        try:
            data = read_bounded(self.path, MAX_JOURNAL_BYTES)
        except OSError as error:
            raise UsageError(
                f"cannot read {self.path} ({error.strerror or error}): give another "
                "--results-dir, or drop --resume"
            ) from None
        lines = data.decode("utf-8", errors="replace").splitlines()
        head: Any = _json(lines[0]) if lines else None
        if not is_journal_header(head):
            raise UsageError(
                f"{self.path} is not an evaluation journal: give another --results-dir, "
                "or drop --resume"
            )
        theirs = head["identity"]
        if theirs != self.identity:
            differs = sorted(
                key
                for key in set(self.identity) | set(theirs)
                if theirs.get(key) != self.identity.get(key)
            )
            raise UsageError(
                f"{self.path} was written by another evaluation (differs in: "
                f"{', '.join(differs) or 'its identity'}): give another --results-dir, "
                "or drop --resume to start over"
            )
        evaluation = head.get("evaluation")
        self.evaluation = evaluation if isinstance(evaluation, str) else None
        self._found, refused = read_lines(
            lines[1:], self._identity_sha256, self._key.public_key(), self.evaluation
        )
        for why in refused:
            self.ignored += 1
            self._not_reused(why)


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
        checked = check_line(_json(line), identity_digest, public_key, evaluation)
        if isinstance(checked, str):
            refused.append(checked)
        else:
            found[checked[0]] = (checked[1], checked[2])
    return found, refused


def _plain_folder(path: Path) -> None:
    """``path`` is (or is made as) a folder (the user's own link to one is theirs to make;
    links inside it are refused by ``_plain_file_or_none``)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        info = path.stat()
    except OSError as error:
        raise UsageError(
            f"cannot use {path} as the results folder ({error.strerror}): give another "
            "--results-dir"
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{path} is not a folder: give another --results-dir")


def _plain_folder_or_none(path: Path) -> None:
    """``path`` is absent or a folder, never a link: run folders made under a linked
    ``traces/`` would be written outside the results folder (SR-11 R5)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    except OSError as error:
        raise UsageError(f"cannot read {path} ({error.strerror})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(
            f"{path} is not a plain folder (a link or a file): move it away, or give another "
            "--results-dir"
        )


def _plain_file_or_none(path: Path) -> None:
    """``path`` is absent or a regular file, never a link (which would write elsewhere)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    except OSError as error:
        raise UsageError(f"cannot read {path} ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(
            f"{path} is not a plain file (a link or a folder): move it away, or give another "
            "--results-dir"
        )
    if info.st_nlink > 1:  # SR-11 F6: an append would change the file's other name too
        raise UsageError(
            f"{path} has another name (a hard link), which writing to it would change too: "
            "copy it in place of the link, or give another --results-dir"
        )


def set_aside(path: Path) -> Path:
    """Keep ``path`` under a name of its own time (``runs-<UTC time>[-N].jsonl``), never
    over another file; return the new name."""
    stamp = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
    for number in range(1000):
        suffix = f"-{number}" if number else ""
        aside = path.with_name(f"{path.stem}-{stamp:%Y%m%dT%H%M%SZ}{suffix}{path.suffix}")
        if not aside.exists():
            os.replace(path, aside)
            return aside
    raise UsageError(f"{path.parent} holds too many journals set aside: move some away")


def _json(line: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None
