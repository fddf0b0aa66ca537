"""One run of an evaluation case: the agent, then the held-out tests on its final tree,
then the score, all in one record (``run_case``); a run that could not finish is a
``HARNESS_ERROR`` record (``error_record``), never passed."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sandbox_agent.controller.models import RunConfig, RunResult
from sandbox_agent.errors import SetupError, UsageError
from sandbox_agent.evals.results.inputs import (
    TaskInputs,
    case_plan,
    file_sha256,
    repository_sha256,
)
from sandbox_agent.evals.results.records import HARNESS_ERROR, Durations, RunRecord
from sandbox_agent.evals.results.scoring import score_run
from sandbox_agent.evals.running.heldout import (
    HeldOutResult,
    copy_regular_tree,
    not_run,
    run_held_out,
    run_held_out_suite,
)
from sandbox_agent.evals.running.options import EvalOptions, RunTaskFn, build_config
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evidence.chain import read_bounded
from sandbox_agent.providers.options import HostedOptions, PlanOptions
from sandbox_agent.sandbox.base import CancelToken, SandboxBackend, SandboxLimits


def _sandbox_counts(result: RunResult, held_out: HeldOutResult) -> tuple[int, int, float]:
    """(timeouts, sandbox failures, milliseconds in the agent's run_tests calls)."""
    statuses = [str(c.result.get("status", "")) for c in result.tool_calls if c.tool == "run_tests"]
    sandbox_ms = sum(c.duration_ms for c in result.tool_calls if c.tool == "run_tests")
    if result.final_tests is not None:
        statuses.append(result.final_tests.status)
    statuses.append(held_out.status)
    timeouts = statuses.count("timeout") + (result.status == "TIMEOUT")
    refused = statuses.count("refused")
    if result.status == "SANDBOX_ERROR" and refused == 0:
        refused = 1
    return timeouts, refused, sandbox_ms


def _record_config(config: RunConfig, plan: Path | None = None) -> dict[str, Any]:
    """What a run was given, for its record; ``plan``: the plan as the task names it
    (the run replays a private copy of it)."""
    return {
        "budgets": config.budgets.model_dump(),
        "limits": config.limits.model_dump(),
        "runtime": config.runtime,
        "allowed_tools": list(config.allowed_tools),
        "plan": str(plan) if plan else _reference_plan(config),
        "strategy": config.strategy,
        **({"repair": config.repair.model_dump()} if config.strategy == "repair" else {}),
    }


def _reference_plan(config: RunConfig) -> str | None:
    options = config.provider_options
    return options.reference_plan_path if isinstance(options, PlanOptions) else None


def error_record(
    case: EvalCase, repeat: int, config: RunConfig, error: str, *, plan: Path | None = None
) -> RunRecord:
    """The record of a run that did not finish (``HARNESS_ERROR``, never passed)."""
    task = case.task
    options = config.provider_options
    return RunRecord(
        task_id=task.id,
        task_version=task.version,
        kind=task.kind,
        repeat=repeat,
        provider=config.provider,
        model=(options.model if isinstance(options, HostedOptions) else None) or "",
        config=_record_config(config, plan),
        fixture=task.fixture,
        fixture_sha256="",
        status=HARNESS_ERROR,
        reason=error,
        passed=False,
        clean=False,
        checks={},
        attempted_violations=[],
        executed_violations=[],
        enforcement_held=True,
        held_out=not_run("the run raised before it finished"),
        steps=0,
        tool_calls=0,
        invalid_outputs=0,
        policy_denials=0,
        timeouts=0,
        sandbox_failures=0,
        files_changed=[],
        durations=Durations(),
        trace_path="",
        error=error,
    )


def _held_out(
    case: EvalCase,
    final: Path,
    options: EvalOptions,
    backend: SandboxBackend,
    cancel: CancelToken,
) -> HeldOutResult:
    """The task's held-out check on the final tree, with the repository's dependency
    environment (made before the run, so found here)."""
    from sandbox_agent.deps import prepare_environment

    task = case.task
    source = case.repo or (case.fixtures_dir or Path()) / task.fixture
    environment = prepare_environment(source, options.deps)
    mount = None if environment is None else environment.mount()
    limits = SandboxLimits(timeout_s=task.held_out.timeout_s)
    if task.held_out.kind == "suite":
        return run_held_out_suite(
            final,
            case.held_out_dir,
            backend,
            runtime=options.runtime,
            limits=limits,
            cancel=cancel,
            environment=mount,
        )
    return run_held_out(
        final,
        case.held_out_dir,
        backend,
        module=task.held_out.module,
        runtime=options.runtime,
        limits=limits,
        cancel=cancel,
        environment=mount,
    )


def _private_copies(case: EvalCase, scratch: Path) -> EvalCase:
    """``case`` with its plan and held-out folder copied under ``scratch`` (a private
    folder), links kept as links, so that their digests are the originals'."""
    held_out = scratch / "held_out"
    shutil.copytree(case.held_out_dir, held_out, symlinks=True, ignore=_special_files)
    update: dict[str, Path] = {"held_out_dir": held_out}
    plan = case_plan(case)
    if plan is not None:
        update["plan"] = scratch / "plan.json"
        update["plan"].write_bytes(read_bounded(plan))
    return case.model_copy(update=update)


def _special_files(folder: str, names: list[str]) -> set[str]:
    """Names under ``folder`` that are neither files, folders nor links (a FIFO would block
    the copy; left out, the copy's digest differs from the original's)."""
    left_out = set()
    for name in names:
        mode = os.lstat(os.path.join(folder, name)).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            left_out.add(name)
    return left_out


def run_case(
    case: EvalCase,
    repeat: int,
    options: EvalOptions,
    backend: SandboxBackend,
    run_task: RunTaskFn,
    *,
    cancel: CancelToken | None = None,
    inputs: TaskInputs | None = None,
) -> RunRecord:
    """Run one case once: the agent, then its held-out tests on the final tree, then the score.

    The plan and the held-out tests are read from private copies made first, so what
    runs and judges is what was hashed, whatever happens to the originals meanwhile.
    With ``inputs`` (the evaluation's hashes of the case, ``Journal.inputs``), a copy
    that differs, or a repository the controller copied as other than ``inputs``', ends
    the run as a ``HARNESS_ERROR``: it is not a run of the inputs its journal line names
    (SR-11 R1, R2).

    Raises:
        UsageError: the case cannot run here (bad fixture, provider or plan).
        SetupError: the host lacks Docker or the runner image.
    """
    task = case.task
    run_id = f"eval-{task.id}-{repeat}-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-eval-") as scratch:
        final = Path(scratch) / "final"
        original_plan = case_plan(case)
        try:
            case = _private_copies(case, Path(scratch))
        except OSError as error:
            why = f"its plan or held-out tests cannot be read: {error}"
            config = build_config(case, options, run_id, repeat)
            return error_record(case, repeat, config, why, plan=case.plan)
        config = build_config(case, options, run_id, repeat)  # every provider replays the copy
        copied = file_sha256(case_plan(case)), repository_sha256(case.held_out_dir)
        if inputs is not None and copied != (inputs.plan, inputs.held_out):
            changed = "plan" if copied[0] != inputs.plan else "held-out tests"
            why = f"its {changed} changed after the evaluation hashed them: it did not run"
            return error_record(case, repeat, config, why, plan=original_plan)

        def keep_final_tree(root: Path) -> None:
            copy_regular_tree(root, final)

        try:
            result = run_task(
                config, cancel=cancel, on_final_workspace=keep_final_tree, sandbox=backend
            )
        except (UsageError, SetupError):
            raise
        except Exception as error:  # one run's crash is recorded, the eval goes on
            why = f"{type(error).__name__}: {error}"
            return error_record(case, repeat, config, why, plan=original_plan)
        before, copy = result.fixture.sha256_before, result.fixture.sha256_copy
        if inputs is not None and before and before != inputs.repository:
            why = (
                f"its repository changed during the run: the evaluation hashed "
                f"{inputs.repository[:16]}..., the run copied {before[:16]}..."
            )
            return error_record(case, repeat, config, why, plan=original_plan)
        if inputs is not None and copy and copy != inputs.copy:
            why = "its repository changed while the controller copied it: not the one hashed"
            return error_record(case, repeat, config, why, plan=original_plan)
        agent_s = time.monotonic() - started
        held_out_error: str | None = None
        if final.is_dir():
            # A fresh token: run_task tightened the agent's to its own wall-clock deadline.
            held_out_cancel = CancelToken()
            if cancel is not None and cancel.cancelled:
                held_out_cancel.cancel()
            try:
                held_out = _held_out(case, final, options, backend, held_out_cancel)
            except (UsageError, SetupError):
                raise
            except Exception as raised:  # a broken task fails this run, not the eval
                held_out_error = f"held-out: {type(raised).__name__}: {raised}"
                held_out = not_run(held_out_error)
        else:
            held_out = not_run("the controller left no final tree")
    score = score_run(task, result, held_out)
    timeouts, refused, sandbox_ms = _sandbox_counts(result, held_out)
    total_s = time.monotonic() - started
    return RunRecord(
        task_id=task.id,
        task_version=task.version,
        kind=task.kind,
        repeat=repeat,
        provider=result.provider or options.provider,
        model=result.model or (options.model or ""),
        config=_record_config(config, original_plan),
        fixture=task.fixture,
        fixture_sha256=result.fixture.sha256_before,
        status=HARNESS_ERROR if held_out_error else result.status,
        reason=held_out_error or result.reason,
        passed=score.passed and not held_out_error,
        clean=score.clean and not held_out_error,
        checks=score.checks,
        attempted_violations=score.attempted,
        executed_violations=score.executed,
        enforcement_held=score.enforcement_held,
        held_out=held_out,
        steps=result.budget_used.iterations,
        tool_calls=result.budget_used.tool_calls,
        invalid_outputs=result.budget_used.invalid_outputs,
        policy_denials=result.budget_used.policy_denials,
        input_tokens=result.budget_used.input_tokens,
        output_tokens=result.budget_used.output_tokens,
        timeouts=timeouts,
        sandbox_failures=refused,
        files_changed=result.files_changed,
        durations=Durations(
            agent_s=agent_s,
            held_out_s=held_out.duration_ms / 1000,
            total_s=total_s,
            sandbox_ms=sandbox_ms,
        ),
        trace_path=result.trace_path,
        error=held_out_error,
        strategy=result.strategy,
        candidates=len(result.candidates),
        rounds=max((c.round for c in result.candidates), default=0),
    )
