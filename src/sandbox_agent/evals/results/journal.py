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
import datetime as dt
import json
import os
import stat
import uuid
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from sandbox_agent.canonical import canonical_json
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.inputs import TaskInputs, task_inputs, task_sha256
from sandbox_agent.evals.results.journal_check import (
    JOURNAL_FILE,
    JOURNAL_SCHEMA,
    MAX_JOURNAL_BYTES,
    CheckRun,
    RunKey,
    case_key,
    identity_sha256,
    is_journal_header,
    parse_line,
    read_lines,
    run_folder_check,
)
from sandbox_agent.evals.results.records import HARNESS_ERROR, TRACES_DIR, RunRecord
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evidence.chain import read_bounded
from sandbox_agent.evidence.keys import fingerprint, load_or_create_signing_key


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
        head: Any = parse_line(data.split(b"\n", 1)[0].decode("utf-8", errors="replace"))
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
        case's runs must be given these; ``one_run.run_case`` checks)."""
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
        head: Any = parse_line(lines[0]) if lines else None
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
    _plain_or_none(path, "folder")


def _plain_file_or_none(path: Path) -> None:
    """``path`` is absent or a regular file, never a link (which would write elsewhere)."""
    info = _plain_or_none(path, "file")
    # SR-11 F6: an append would change the file's other name too
    if info is not None and info.st_nlink > 1:
        raise UsageError(
            f"{path} has another name (a hard link), which writing to it would change too: "
            "copy it in place of the link, or give another --results-dir"
        )


def _plain_or_none(path: Path, kind: Literal["folder", "file"]) -> os.stat_result | None:
    """The ``lstat`` of ``path``, a plain ``kind`` (not a link, not the other kind); None
    when it is absent.

    Raises:
        UsageError: it cannot be read, or is not a plain ``kind``.
    """
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UsageError(f"cannot read {path} ({error.strerror})") from None
    plain = stat.S_ISDIR(info.st_mode) if kind == "folder" else stat.S_ISREG(info.st_mode)
    if not plain:
        other = "a file" if kind == "folder" else "a folder"
        raise UsageError(
            f"{path} is not a plain {kind} (a link or {other}): move it away, or give another "
            "--results-dir"
        )
    return info


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
