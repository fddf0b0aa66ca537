"""An eval case on a cluster node: packed here, placed and run there.

A case goes to a node as data, never as a path (``bundle_case``): its repository (a
fixture or a generated one), its held-out tests and its plan, through the cluster's
payload (``cluster.payload``), and placed on the node (``case_on_node``). The node runs
it exactly as ``eval --jobs`` does (``run_case``: the agent, the held-out check on the
same node and backend, the score) and streams back ``Started`` and ``Finished`` with the
record and the run's folder (``run_eval_case``).

Nothing secret is packed: a case is task text, repository files, held-out tests and a
plan; real-model keys stay in each node's own environment (docs/CLUSTER.md).
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from sandbox_agent.cluster.payload import FolderCopy, copy_of, pack_run_folder, place
from sandbox_agent.cluster.remote import Finished, Message, as_task, in_thread, started
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.evals.tasks.cases import EvalCase


class CaseBundle(BaseModel):
    """One eval case as it crosses to a node: the case with the caller's paths, and the
    bytes of every folder and file it names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case: EvalCase
    repository: FolderCopy
    """The fixture folder (``fixtures_dir/<fixture>``) or the generated repository."""
    held_out: FolderCopy
    plan: bytes | None = None
    """The case's plan file, or the fixture's own reference plan when the case names none."""


def bundle_case(case: EvalCase) -> CaseBundle:
    """Pack ``case`` for a node.

    Raises:
        UsageError: a folder is missing or too large.
    """
    from sandbox_agent.controller.source import reference_plan_path

    if case.repo is not None:
        repository = case.repo
        plan_file = case.plan
    else:
        folder = case.fixtures_dir or _default_fixtures()
        repository = folder / case.task.fixture
        plan_file = case.plan or reference_plan_path(folder, case.task.fixture)
    return CaseBundle(
        case=case,
        repository=copy_of(repository),
        held_out=copy_of(case.held_out_dir),
        plan=plan_file.read_bytes() if plan_file is not None else None,
    )


def _default_fixtures() -> Path:
    from sandbox_agent.settings import default_fixtures_dir

    return default_fixtures_dir()


def case_on_node(bundle: CaseBundle, scratch: Path) -> EvalCase:
    """The case with this node's paths: repository, held-out tests and plan placed under
    ``scratch`` (or the caller's own paths where this node holds the identical trees)."""
    case = bundle.case
    repository = place(bundle.repository, scratch / "fixtures" / case.task.fixture)
    held_out = place(bundle.held_out, scratch / "held_out")
    plan: Path | None = None
    if bundle.plan is not None:
        scratch.mkdir(parents=True, exist_ok=True)
        plan = scratch / "plan.json"
        plan.write_bytes(bundle.plan)
    if case.repo is not None:
        return case.model_copy(update={"repo": repository, "plan": plan, "held_out_dir": held_out})
    return case.model_copy(
        update={"fixtures_dir": repository.parent, "plan": plan, "held_out_dir": held_out}
    )


def run_eval_case(bundle: CaseBundle, repeat: int, options: EvalOptions) -> Iterator[Message]:
    """One run of an eval case on this node: the agent, then the held-out check (same
    node, same backend), then the score; the record and the run's folder come back."""
    from sandbox_agent.controller import run_task
    from sandbox_agent.evals.results.records import RunRecord
    from sandbox_agent.evals.running.one_run import run_case
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    yield started()
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-node-") as scratch:
        case = case_on_node(bundle, Path(scratch) / "case")
        here = options.model_copy(update={"trace_dir": Path(scratch) / "traces", "jobs": 1})
        backend = DockerBackend(reap_on_first_use=False)
        try:
            record: RunRecord | None = None
            for item in in_thread(
                lambda token, _sink: run_case(case, repeat, here, backend, run_task, cancel=token)
            ):
                if isinstance(item, RunRecord):
                    record = item
        finally:
            backend.close()
        assert record is not None  # noqa: S101 - in_thread yields the result last
        yield Finished(
            payload=record.model_dump_json(), run_folder=pack_run_folder(record.trace_path)
        )


@functools.cache
def eval_case_task() -> Any:
    """``run_eval_case`` as a Ray task (no CPU asked: the sandbox slot is what counts)."""
    return as_task(run_eval_case)


def run_eval_case_whole(bundle: CaseBundle, repeat: int, options: EvalOptions) -> list[Message]:
    """``run_eval_case`` as one result: every message at the end (for Ray Client)."""
    return list(run_eval_case(bundle, repeat, options))


@functools.cache
def whole_eval_case_task() -> Any:
    """``run_eval_case_whole`` as a Ray task."""
    return as_task(run_eval_case_whole)
