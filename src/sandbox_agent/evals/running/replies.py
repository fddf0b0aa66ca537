"""What a node sends back for a run of an evaluation, checked against the run it answers,
and the records of runs that got no usable answer.

A node may be compromised (docs/THREAT_MODEL.md T-74): a record of another run than the
one asked for is refused (SR-10 C2), and a run folder is unpacked only under a name no
other run's folder has, within the payload's bounds (SR-10 C1, ``cluster.payload``). A
run that got no usable answer is a harness error, and a run lost with its node ends
``LOST``: neither ever passes.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_agent.cluster.payload import unpack_run_folder
from sandbox_agent.cluster.remote import Finished
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.cluster_report import LOST
from sandbox_agent.evals.results.records import RunRecord
from sandbox_agent.evals.running.heldout import not_run
from sandbox_agent.evals.running.one_run import error_record
from sandbox_agent.evals.running.options import EvalOptions, build_config
from sandbox_agent.evals.tasks.cases import EvalCase


def answered_record(
    message: Finished, case: EvalCase, repeat: int, trace_dir: Path | None
) -> RunRecord:
    """The record ``message`` holds, when it is of run ``repeat`` of ``case``; its run
    folder written under ``trace_dir`` (as a local run's would be).

    Raises:
        UsageError: the record is of another run, or its folder cannot be unpacked here.
        ValueError: the payload is not a record.
    """
    record = RunRecord.model_validate_json(message.payload)
    if (record.task_id, record.task_version, record.repeat) != (
        case.task.id,
        case.task.version,
        repeat,
    ):
        raise UsageError(
            f"a record of {record.task_id} #{record.repeat} for a run of {case.task.id} #{repeat}"
        )
    config = dict(record.config)
    config["plan"] = str(case.plan) if case.plan else None
    trace_path = record.trace_path
    if message.run_folder is not None and trace_dir is not None:
        folder = unpack_run_folder(message.run_folder, trace_dir)
        trace_path = str(folder / Path(record.trace_path).name)
    return record.model_copy(update={"config": config, "trace_path": trace_path})


def harness_error(case: EvalCase, repeat: int, options: EvalOptions, error: str) -> RunRecord:
    """The record of run ``repeat`` of ``case`` that got no usable answer (never passed)."""
    config = build_config(case, options, f"eval-{case.task.id}-{repeat}", repeat)
    return error_record(case, repeat, config, error)


def lost(record: RunRecord, reason: str) -> RunRecord:
    """``record`` as a run lost with its node (``LOST``: never passed, held-out not run)."""
    return record.model_copy(
        update={"status": LOST, "reason": reason, "error": None, "held_out": not_run(reason)}
    )
