"""One-shot best-of-N (issue 29): what sampling with execution-based selection buys alone.

For each HumanEvalFix row: the one-shot prompt (``evals.running.oneshot``) is answered N times,
the first greedily, then at a temperature with seeds ``seed + k`` (exactly as the
``repair`` strategy samples its first round). Each answer's function is put in the
module and the row's *visible* tests (its docstring examples, ``test_examples.py``) run
in a verified sandbox; the first answer that passes them is the one judged by the
held-out check, else the first answer. The held-out tests never choose: their verdict on
every answer is recorded only as coverage (could any of the N have passed?).

Set beside the agent on the same rows, this separates what sampling and selection buy
from what the agent's context, feedback and repair rounds add.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sandbox_agent.evals.running.heldout import HeldOutResult, copy_regular_tree
from sandbox_agent.evals.running.oneshot import (
    SYSTEM_PROMPT,
    Completion,
    candidate_module,
    extract_function,
    judge,
    load_lines,
    prompt,
)
from sandbox_agent.evals.tasks import humanevalfix
from sandbox_agent.sandbox.base import Runtime, SandboxBackend, SandboxLimits, SandboxRequest

BESTOF_FILE = "bestof.jsonl"
SampledComplete = Callable[[str, str, float, int], Completion]
"""``complete(system, user, temperature, seed)``: one chat request, no tools."""
VISIBLE_LABEL = "sandbox-agent.eval"


class BestOfRecord(BaseModel):
    """One row's N samples, which passed the visible tests, and the chosen one's verdict."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    samples: int
    passed: bool
    """The selected answer passed the held-out check."""
    selected: int | None
    """1-based: the first answer to pass the visible tests; None: none did (the first
    answer was judged)."""
    visible: list[bool | None]
    """Per answer: passed the visible tests; None: no function came back."""
    heldout: list[bool | None]
    """Per answer: passed the held-out check (coverage only, never used to choose)."""
    held_out: HeldOutResult
    input_tokens: int
    output_tokens: int
    wall_s: float
    error: str | None = None


def load_bestof(path: Path) -> list[BestOfRecord]:
    """The records ``path`` holds; a line cut short by a stop is skipped."""
    return load_lines(path, BestOfRecord)


def _visible(repo: Path, backend: SandboxBackend, runtime: Runtime) -> bool:
    from sandbox_agent.policy import runner_command
    from sandbox_agent.tools.testrun import judge

    command = runner_command("unittest")
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-bestof-") as scratch:
        root = Path(scratch) / "workspace"
        copy_regular_tree(repo, root)
        Path(scratch).chmod(0o755)
        result = backend.run(
            SandboxRequest(
                argv=command.argv,
                workspace=root,
                runtime=runtime,
                limits=SandboxLimits(timeout_s=humanevalfix.TEST_TIMEOUT_S),
                workload_env=command.workload_env,
                labels={VISIBLE_LABEL: "visible"},
            )
        )
    return judge(result, "unittest").passed


def run_best_of(
    row: humanevalfix.Row,
    complete: SampledComplete,
    backend: SandboxBackend,
    *,
    samples: int,
    temperature: float,
    seed: int,
    runtime: Runtime = "runc",
) -> BestOfRecord:
    """Sample, check each answer's visible tests, judge the selected one; never raises
    for the model's answers (a failed request ends the row's sampling, recorded)."""
    started = time.monotonic()
    task_id = humanevalfix.task_id(row)
    visible: list[bool | None] = []
    heldout: list[bool | None] = []
    verdicts: list[HeldOutResult | None] = []
    tokens = [0, 0]
    error: str | None = None
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-bestof-") as scratch:
        case = humanevalfix.build_case(row, Path(scratch), fix=False)
        assert case.repo is not None  # noqa: S101 - build_case always makes the repository
        module = case.repo / f"{humanevalfix.MODULE}.py"
        for k in range(1, samples + 1):
            warmth = 0.0 if k == 1 else temperature
            try:
                answer = complete(SYSTEM_PROMPT, prompt(row), warmth, seed + k)
            except Exception as failed:  # the row's failure, recorded; the evaluation goes on
                error = f"{type(failed).__name__}: {failed}"[:500]
                break
            tokens[0] += answer.input_tokens
            tokens[1] += answer.output_tokens
            function = extract_function(answer.text, row.entry_point)
            if function is None:
                visible.append(None)
                heldout.append(None)
                verdicts.append(None)
                continue
            module.write_text(candidate_module(row, function), encoding="utf-8")
            visible.append(_visible(case.repo, backend, runtime))
            verdict = judge(case, backend, runtime)
            heldout.append(verdict.passed)
            verdicts.append(verdict)
    selected = next((k for k, ok in enumerate(visible, start=1) if ok), None)
    chosen_index = (selected or 1) - 1
    chosen = verdicts[chosen_index] if chosen_index < len(verdicts) else None
    if chosen is None:
        chosen = HeldOutResult(ran=False, passed=False, status="not run", reason="no function")
    return BestOfRecord(
        task_id=task_id,
        samples=len(visible),
        passed=chosen.passed,
        selected=selected,
        visible=visible,
        heldout=heldout,
        held_out=chosen,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        wall_s=round(time.monotonic() - started, 3),
        error=error,
    )
