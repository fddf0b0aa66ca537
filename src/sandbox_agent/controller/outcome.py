"""The end of a run: its status from evidence, its result, its trace closed, its outputs
written and sealed. ``result.json`` is written last: a run whose seal fails must not
leave a result claiming a status without evidence.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sandbox_agent.controller.loop_common import LoopState, LoopStop
from sandbox_agent.controller.models import (
    MAX_OUTPUT_TAIL_CHARS,
    CandidateRecord,
    FinalTests,
    FixtureIntegrity,
    RunConfig,
    RunEnvironment,
    RunResult,
    ToolCallRecord,
)
from sandbox_agent.controller.status import Evidence, FinalTestEvidence, compute_status
from sandbox_agent.providers.errors import ProviderError
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.trace import Redactor, TraceWriter

if TYPE_CHECKING:
    from sandbox_agent.deps import Environment
    from sandbox_agent.policy import Policy
    from sandbox_agent.tools.testrun import TestRun
    from sandbox_agent.workspace import Workspace

RESULT_FILE = "result.json"
DIFF_FILE = "diff.patch"


class Session(Protocol):
    """What the end of a run reads of its session (``controller.run.RunSession``)."""

    config: RunConfig
    run_id: str
    run_dir: Path
    environment: Environment | None

    @property
    def source_path(self) -> Path: ...

    def evidence_digests(self) -> dict[str, Any]: ...


def environment_fields(environment: Environment | None) -> dict[str, Any] | None:
    """The trace's record of the dependency environment: what it holds, and what it cost."""
    if environment is None:
        return None
    return {
        **environment.summary(),
        "source": environment.source,
        "manifest_sha256": environment.manifest_sha256,
        "size_bytes": environment.size_bytes,
        "made": environment.made,
        "resolved": environment.resolved,
        "prepare_ms": environment.prepare_ms,
    }


def final_tests_of(final: TestRun, redact: Redactor) -> FinalTests:
    """The result's ``final_tests`` (the contract's fields, exactly): the one place a
    ``TestRun`` becomes it. ``failures`` is failed plus errored (``TestRun.failures``);
    there is no ``errors`` field in the contract."""
    return FinalTests(
        passed=bool(final.passed),
        tests_run=int(final.tests_run),
        failures=int(final.failures),
        status=str(final.status),
        reused=final.reused,
        baseline_tests=final.baseline_tests or 0,
        missing_tests=list(final.missing_tests[:20]),
        output_tail=output_tail(final, redact),
    )


def output_tail(final: TestRun, redact: Redactor) -> str | None:
    """The test output lines of ``final``'s summary (what a ``run_tests`` call shows the
    model: its first line is the verdict, the rest the output's last lines), redacted,
    then cut to its last ``MAX_OUTPUT_TAIL_CHARS``; None when there are none."""
    _, _, tail = final.summary.partition("\n")
    tail = redact.text(tail).strip("\n")
    if not tail:
        return None
    return tail if len(tail) <= MAX_OUTPUT_TAIL_CHARS else "…" + tail[-MAX_OUTPUT_TAIL_CHARS + 1 :]


def final_fields(final: TestRun) -> dict[str, Any]:
    return {
        "passed": final.passed,
        "tests_run": final.tests_run,
        "failures": final.failures,
        "status": final.status,
        "exit_code": final.exit_code,
        "attested": final.attested,
        "runtime": final.runtime,
        "reused": final.reused,
        "baseline_tests": final.baseline_tests,
        "missing_tests": len(final.missing_tests),
    }


def after_final(stop: LoopStop, final: TestRun, cancel: CancelToken) -> LoopStop:
    """A final test run cut short by cancellation or the deadline ends the run that way."""
    if final.sandbox.status == "completed":
        return stop
    return _cut_short(stop, cancel, "during the final test run")


def after_the_loop(stop: LoopStop, cancel: CancelToken) -> LoopStop:
    """Cancellation or the wall clock during the phases after the loop (the final tests,
    the diff, the hash of the original) ends the run that way too: those phases stop
    early for them, so their result is not the run's (SR-8 C8-4)."""
    if stop.end in ("cancelled", "timeout"):
        return stop
    return _cut_short(stop, cancel, "after the loop, during the final checks")


def _cut_short(stop: LoopStop, cancel: CancelToken, when: str) -> LoopStop:
    """The run ends ``cancelled`` or ``timeout`` (saying ``when``) if the cancel or the
    wall clock came; else as ``stop`` says."""
    if cancel.cancelled:
        return LoopStop("cancelled", f"cancelled {when}")
    if cancel.deadline_passed():
        return LoopStop("timeout", f"wall clock ran out {when}")
    return stop


def make_result(
    session: Session,
    *,
    cancel: CancelToken,
    workspace: Workspace,
    policy: Policy,
    state: LoopState,
    stop: LoopStop,
    final: TestRun | None,
    trace: TraceWriter,
    started: float,
) -> RunResult:
    diff = workspace.diff(limits=session.config.diff_limits, cancel=cancel)
    files = workspace.files_changed()
    sha_after = workspace.source_sha256_now()
    stop = after_the_loop(stop, cancel)
    final_evidence = None if final is None else FinalTestEvidence.of(final)
    verdict = compute_status(
        Evidence(
            loop_end=stop.end,
            loop_reason=stop.reason,
            original_intact=sha_after == workspace.sha256_before,
            protected_in_diff=tuple(policy.check_final_diff(files)),
            final_tests=final_evidence,
            loop_untried=stop.untried,
        )
    )
    state.used.wall_seconds = round(time.monotonic() - started, 3)
    redact = Redactor()
    return RunResult(
        run_id=session.run_id,
        status=verdict.status,
        reason=redact.text(verdict.reason),
        diff=diff,
        files_changed=files,
        final_tests=None if final is None else final_tests_of(final, redact),
        budget_used=state.used,
        fixture=FixtureIntegrity(
            intact=sha_after == workspace.sha256_before,
            sha256_before=workspace.sha256_before,
            sha256_after=sha_after,
            sha256_copy=workspace.sha256_copy,
        ),
        trace_path=str(trace.path),
        run_dir=str(session.run_dir),
        # Recorded redacted by the loop; again here, as ``result.json`` is public too.
        tool_calls=[
            ToolCallRecord.model_validate(redact.value(call.model_dump()))
            for call in state.tool_calls
        ],
        provider=session.config.provider,
        model=redact.text(state.model),
        runtime=session.config.runtime,
        model_summary=None if state.model_summary is None else redact.text(state.model_summary),
        strategy=session.config.strategy,
        candidates=[
            CandidateRecord.model_validate(redact.value(c.model_dump())) for c in state.candidates
        ],
        environment=None
        if session.environment is None
        else RunEnvironment.model_validate(session.environment.summary()),
        provider_error=None
        if state.provider_error is None
        else ProviderError.model_validate(redact.value(state.provider_error.model_dump())),
    )


def close_run(
    session: Session,
    trace: TraceWriter,
    result: RunResult | None,
    *,
    state: LoopState,
    started: float,
) -> None:
    """The run's last trace event, then the diff, the seal and ``result.json``."""
    if result is None:
        trace.emit(
            "run_finished",
            status=None,
            reason="the run stopped on an error",
            budgets=state.used.model_dump(),
        )
        trace.close()
        return
    trace.emit(
        "run_finished",
        status=result.status,
        reason=result.reason,
        budgets=result.budget_used.model_dump(),
        fixture=result.fixture.model_dump(),
        files_changed=result.files_changed,
        diff_sha256=hashlib.sha256(result.diff.encode()).hexdigest(),
        wall_seconds=round(time.monotonic() - started, 3),
    )
    trace.close()
    (session.run_dir / DIFF_FILE).write_text(result.diff, encoding="utf-8")
    # Sealed first, published after: a run whose seal fails (an unsafe key, a full
    # disk) must not leave a result.json claiming its status without evidence.
    _seal(session, result, trace)
    temporary = session.run_dir / f".{RESULT_FILE}.tmp"
    temporary.write_text(result.model_dump_json(indent=2), encoding="utf-8")
    os.replace(temporary, session.run_dir / RESULT_FILE)


def _seal(session: Session, result: RunResult, trace: TraceWriter) -> None:
    from sandbox_agent.evidence import seal_run

    record: dict[str, Any] = {
        "result": json.loads(result.model_dump_json()),
        "fixture_sha256_before": result.fixture.sha256_before,
        "fixture_sha256_after": result.fixture.sha256_after,
        "diff_sha256": hashlib.sha256(result.diff.encode()).hexdigest(),
        "trace_head_sha256": trace.head_sha256,
        "source_path": str(session.source_path),
        **session.evidence_digests(),
    }
    seal_run(session.run_dir, record)
