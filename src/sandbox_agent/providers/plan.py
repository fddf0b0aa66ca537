"""Plan files (docs/CONTRACT.md section 4): ``{"steps": [{"tool", "args"} | {"raw": "..."}]}``.

Each step is one model turn, rendered as the raw text a model would have sent. A
``raw`` step is passed through untouched, so a plan can carry malformed output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sandbox_agent.errors import UsageError

MAX_PLAN_BYTES = 1024 * 1024
MAX_PLAN_STEPS = 1000
EXHAUSTED_SUMMARY = "plan exhausted"


class ToolStep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class RawStep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    raw: str


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[ToolStep | RawStep] = Field(max_length=MAX_PLAN_STEPS)

    def turn(self, index: int) -> str:
        """The raw text of turn ``index``; a ``finish`` with "plan exhausted" past the end."""
        if index >= len(self.steps):
            return render("finish", {"summary": EXHAUSTED_SUMMARY})
        step = self.steps[index]
        return step.raw if isinstance(step, RawStep) else render(step.tool, step.args)

    def whole_suite_test_runs(self) -> int:
        """``run_tests`` steps without a selector (raw steps are not parsed here)."""
        tools = [step for step in self.steps if isinstance(step, ToolStep)]
        return sum(step.tool == "run_tests" and not step.args.get("selector") for step in tools)


def render(tool: str, args: dict[str, Any]) -> str:
    """One turn in the raw form the controller parses."""
    return json.dumps({"tool": tool, "args": args})


def load_plan(path: str | Path) -> Plan:
    """Read and check a plan file.

    Raises:
        UsageError: the file is missing, too large, not JSON, or not a plan (one line).
    """
    plan_path = Path(path)
    try:
        if plan_path.stat().st_size > MAX_PLAN_BYTES:
            raise UsageError(f"plan file {plan_path} is larger than {MAX_PLAN_BYTES} bytes")
        data = json.loads(plan_path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot read plan file {plan_path}: {error.strerror}") from None
    except (ValueError, RecursionError) as error:  # undecodable, not JSON, a huge integer
        raise UsageError(
            f"plan file {plan_path} is not JSON ({error}); see docs/CONTRACT.md section 4"
        ) from None
    try:
        return Plan.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UsageError(
            f"plan file {plan_path} is not a plan: {where}: {first['msg']}; "
            'expected {"steps": [{"tool": ..., "args": {...}} | {"raw": "..."}]}'
        ) from None
