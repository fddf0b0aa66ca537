"""The run journal: every finished run's record, appended to ``RESULTS_DIR/runs.jsonl`` as
it finishes, so an evaluation stopped midway (a session that ends, a machine that
reboots, Ctrl-C) keeps what finished and ``eval --resume`` runs only the rest.

The first line says which evaluation wrote the file (its ``identity``: suite, control or
not, provider, model, budgets, runtime, dependency options, repeats); each further line
is one run: its key (task id, task version, repeat), the SHA-256 of the task's definition
and the record. ``--resume`` refuses a journal written by another evaluation (one line
that names what differs), and reuses a record only when its task's definition is the
same and the run was not a harness error. A line cut short by a stop mid-write is
ignored: that run runs again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from sandbox_agent.errors import UsageError
from sandbox_agent.evals.cases import EvalCase
from sandbox_agent.evals.records import HARNESS_ERROR, RunRecord

JOURNAL_FILE = "runs.jsonl"
JOURNAL_SCHEMA = 1


class RunKey(NamedTuple):
    task_id: str
    task_version: int
    repeat: int


def task_sha256(case: EvalCase) -> str:
    """The task's definition (id, version, text, fixture, budgets, checks), hashed; a
    resumed record is reused only for the same definition."""
    text = json.dumps(case.task.model_dump(mode="json"), sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def case_key(case: EvalCase, repeat: int) -> RunKey:
    return RunKey(case.task.id, case.task.version, repeat)


class Journal:
    """``RESULTS_DIR/runs.jsonl``: the records so far, and each new one as it finishes."""

    def __init__(self, results_dir: Path, identity: dict[str, Any], *, resume: bool) -> None:
        """Open the journal; with ``resume``, read the records already there.

        Without ``resume``, a journal already there is kept aside as
        ``runs-<its time>.jsonl``, never overwritten.

        Raises:
            UsageError: ``resume`` and the journal there was written by another
                evaluation, or is not a journal.
        """
        results_dir.mkdir(parents=True, exist_ok=True)
        self.path = results_dir / JOURNAL_FILE
        self.identity = json.loads(json.dumps(identity, sort_keys=True, default=str))
        self.ignored = 0
        """Lines of a resumed journal that could not be read (their runs run again)."""
        self._found: dict[RunKey, tuple[str, RunRecord]] = {}
        if self.path.exists():
            if resume:
                self._read()
            else:
                set_aside(self.path)
        if not self.path.exists() or self.path.stat().st_size == 0:
            self._write_line({"journal": JOURNAL_SCHEMA, "identity": self.identity})

    @classmethod
    def existing(cls, results_dir: Path) -> Journal:
        """The journal in ``results_dir`` as it stands, to read (under its own identity).

        Raises:
            UsageError: it is not an evaluation journal.
        """
        path = results_dir / JOURNAL_FILE
        head = _json(path.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0])
        identity = head.get("identity") if isinstance(head, dict) else None
        if not isinstance(identity, dict):
            raise UsageError(f"{path} is not an evaluation journal")
        return cls(results_dir, identity, resume=True)

    def finished(self, case: EvalCase, repeat: int) -> RunRecord | None:
        """The journal's record of this run, when it has one for the same task definition
        that is a result (a ``HARNESS_ERROR`` runs again: it says nothing of the model)."""
        found = self._found.get(case_key(case, repeat))
        if found is None or found[0] != task_sha256(case) or found[1].status == HARNESS_ERROR:
            return None
        return found[1]

    def records(self) -> list[RunRecord]:
        """Every record the journal holds, in the order their runs first finished."""
        return [record for _, record in self._found.values()]

    def append(self, case: EvalCase, record: RunRecord) -> None:
        """Add one finished run (flushed and synced before it returns)."""
        key, digest = case_key(case, record.repeat), task_sha256(case)
        self._found[key] = (digest, record)
        self._write_line(
            {
                "key": list(key),
                "task_sha256": digest,
                "record": record.model_dump(mode="json"),
            }
        )

    def _write_line(self, value: dict[str, Any]) -> None:
        line = json.dumps(value, ensure_ascii=True, sort_keys=True) + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def _read(self) -> None:
        lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        head = _json(lines[0]) if lines else None
        if not isinstance(head, dict) or head.get("journal") != JOURNAL_SCHEMA:
            raise UsageError(
                f"{self.path} is not an evaluation journal: give another --results-dir, "
                "or drop --resume"
            )
        theirs = head.get("identity")
        if theirs != self.identity:
            differs = sorted(
                key
                for key in set(self.identity) | set(theirs if isinstance(theirs, dict) else {})
                if not isinstance(theirs, dict) or theirs.get(key) != self.identity.get(key)
            )
            raise UsageError(
                f"{self.path} was written by another evaluation (differs in: "
                f"{', '.join(differs) or 'its identity'}): give another --results-dir, "
                "or drop --resume to start over"
            )
        for line in lines[1:]:
            entry = _json(line)
            try:
                if not isinstance(entry, dict):
                    raise ValueError("not an object")
                task_id, version, repeat = entry["key"]
                key = RunKey(str(task_id), int(version), int(repeat))
                record = RunRecord.model_validate(entry["record"])
                self._found[key] = (str(entry["task_sha256"]), record)
            except (KeyError, TypeError, ValueError, ValidationError):
                self.ignored += 1


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
    except ValueError:
        return None
