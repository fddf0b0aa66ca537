"""The one-shot baseline (issue 16): the same model, no agent loop, the same held-out check.

For each HumanEvalFix row: the buggy module and its docstring examples (the public
``test_examples.py`` the agent can read) go to the model in one chat request, without
tools; the fixed function comes back in a code block. It is appended to the buggy module
(a later ``def`` replaces the earlier one at import, and the module's imports and
helpers stay), and the result is judged exactly as an agent's final tree is: the row's
``check``, out of process, in a verified sandbox (``evals.running.heldout``). The model's code
never runs on the host. Whether the agent's loop helps the model or gets in its way is
the difference between this and the agent's held-out passes on the same rows.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from sandbox_agent.evals.running.heldout import HeldOutResult, run_held_out
from sandbox_agent.evals.tasks import humanevalfix
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.sandbox.base import Runtime, SandboxBackend, SandboxLimits

SYSTEM_PROMPT = "You are an expert Python programmer. You fix bugs. Answer with code only."
MAX_OUTPUT_TOKENS = 1024
"""One function, at most; the agent's replies are capped lower (one tool call each)."""
CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
RecordT = TypeVar("RecordT", bound=BaseModel)


class Completion(BaseModel):
    """What the model answered to one prompt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


Complete = Callable[[str, str], Completion]
"""``complete(system, user)``: one chat request to the model, no tools."""


class OneShotRecord(BaseModel):
    """One row's one-shot attempt and its held-out verdict."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    passed: bool
    held_out: HeldOutResult
    extracted: bool
    """A code block defining the entry point came back."""
    input_tokens: int
    output_tokens: int
    wall_s: float
    error: str | None = None


ONESHOT_FILE = "oneshot.jsonl"
"""The one-shot records of an evaluation, one JSON line each, appended as they come."""


def load_records(path: Path) -> list[OneShotRecord]:
    """The one-shot records ``path`` holds; a line cut short by a stop is skipped."""
    return load_lines(path, OneShotRecord)


def load_lines(path: Path, model: type[RecordT]) -> list[RecordT]:
    """The records of type ``model`` a JSON-lines file holds (none when it is absent); a
    line that is not one (cut short by a stop) is skipped."""
    if not path.is_file():
        return []
    found: list[RecordT] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            found.append(model.model_validate_json(line))
        except ValueError:
            continue
    return found


def prompt(row: humanevalfix.Row) -> str:
    """The user message: the module and its examples, and what to answer."""
    return (
        f"The function `{row.entry_point}` in this module has a bug.\n\n"
        f"```python\n{humanevalfix.module_text(row)}```\n\n"
        f"Its examples ({humanevalfix.PUBLIC_TESTS}):\n\n"
        f"```python\n{humanevalfix.public_tests(row)}```\n\n"
        f"Reply with the complete fixed function `{row.entry_point}` in one ```python code "
        "block, and nothing else."
    )


def extract_function(text: str, entry_point: str) -> str | None:
    """The last code block that defines ``entry_point``, or None."""
    for block in reversed(CODE_BLOCK.findall(text)):
        if re.search(rf"^\s*def {re.escape(entry_point)}\s*\(", block, re.MULTILINE):
            return str(block)
    return None


def candidate_module(row: humanevalfix.Row, function: str) -> str:
    """The buggy module with the model's function after it (the later ``def`` wins)."""
    return (
        humanevalfix.module_text(row)
        + "\n\n# The model's answer (one-shot baseline):\n"
        + (function if function.endswith("\n") else function + "\n")
    )


def run_one(
    row: humanevalfix.Row,
    complete: Complete,
    backend: SandboxBackend,
    *,
    runtime: Runtime = "runc",
) -> OneShotRecord:
    """Ask once, build the final tree, judge it; never raises for the model's answer."""
    started = time.monotonic()
    task_id = humanevalfix.task_id(row)
    try:
        answer = complete(SYSTEM_PROMPT, prompt(row))
    except Exception as error:  # a failed request is this row's failure, not the run's
        verdict = HeldOutResult(ran=False, passed=False, status="not run", reason=str(error))
        return OneShotRecord(
            task_id=task_id,
            passed=False,
            held_out=verdict,
            extracted=False,
            input_tokens=0,
            output_tokens=0,
            wall_s=round(time.monotonic() - started, 3),
            error=f"{type(error).__name__}: {error}"[:500],
        )
    function = extract_function(answer.text, row.entry_point)
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-oneshot-") as scratch:
        case = humanevalfix.build_case(row, Path(scratch), fix=False)
        assert case.repo is not None  # noqa: S101 - build_case always makes the repository
        if function is not None:
            (case.repo / f"{humanevalfix.MODULE}.py").write_text(
                candidate_module(row, function), encoding="utf-8"
            )
        verdict = judge(case, backend, runtime)
    return OneShotRecord(
        task_id=task_id,
        passed=verdict.passed and function is not None,
        held_out=verdict,
        extracted=function is not None,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        wall_s=round(time.monotonic() - started, 3),
    )


def judge(case: EvalCase, backend: SandboxBackend, runtime: Runtime) -> HeldOutResult:
    """The row's held-out check on the case's tree as it is now, exactly as an agent's
    final tree is judged (``evals.running.heldout``), at the row's test timeout."""
    assert case.repo is not None  # noqa: S101 - build_case always makes the repository
    return run_held_out(
        case.repo,
        case.held_out_dir,
        backend,
        runtime=runtime,
        limits=SandboxLimits(timeout_s=humanevalfix.TEST_TIMEOUT_S),
    )
