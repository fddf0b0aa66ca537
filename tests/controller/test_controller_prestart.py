"""How many sandboxes the controller asks to have made ahead at the start of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.providers import options_for
from sandbox_agent.providers.plan import Plan
from sandbox_agent.sandbox.base import CancelToken, SandboxRequest, SandboxResult
from sandbox_agent.sandbox.fake import FakeBackend, completed
from sandbox_agent.settings import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "fixtures"
FAILING = completed(exit_code=1, tests_run=6, failures=2)
PASSING = completed(exit_code=0, tests_run=6)


class CountingBackend(FakeBackend):
    """The shipped fake, noting the count of each pre-start hint given before any run."""

    def __init__(self) -> None:
        super().__init__([FAILING, PASSING, PASSING])
        self.hints: list[int] = []
        self.ran = False

    def prestart(self, request: SandboxRequest, count: int = 1) -> None:
        if not self.ran:
            self.hints.append(count)

    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        self.ran = True
        return super().run(request, cancel)


def _first_hint(tmp_path: Path, provider: str, prestart: int, plan: Path | None = None) -> int:
    backend = CountingBackend()
    config = RunConfig(
        task="Fix the pagination bug.",
        fixture="paginator",
        fixtures_dir=FIXTURES,
        provider=provider,
        provider_options=options_for(provider, plan_path=str(plan) if plan else None),
        prestart=prestart,
        trace_dir=tmp_path / "runs",
    )
    run_task(config, sandbox=backend)
    assert len(backend.hints) <= 1
    return backend.hints[0] if backend.hints else 0


@pytest.mark.parametrize(
    ("provider", "prestart", "expected"),
    [
        ("scripted", 2, 2),  # the reference plan runs the whole suite twice
        ("mock-adversarial", 2, 2),  # it follows the same plan
        ("scripted", 1, 1),  # never more than --prestart
        ("scripted", 0, 0),  # none at all
        ("injection", 2, 1),  # no plan known: the next test run's only
    ],
)
def test_one_sandbox_ahead_per_planned_test_run_up_to_the_flag(
    tmp_path: Path, provider: str, prestart: int, expected: int
) -> None:
    assert _first_hint(tmp_path, provider, prestart) == expected


def test_a_plan_without_test_runs_still_gets_one_for_the_final_verdict(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"tool": "finish", "args": {"summary": "s"}}]}))
    assert _first_hint(tmp_path, "scripted", 2, plan) == 1


def test_only_whole_suite_structured_steps_count() -> None:
    steps: list[dict[str, Any]] = [
        {"tool": "run_tests", "args": {}},
        {"tool": "run_tests", "args": {"selector": "tests.test_core"}},
        {"raw": '{"tool": "run_tests", "args": {}}'},
        {"tool": "run_tests", "args": {"selector": ""}},
        {"tool": "read_file", "args": {"path": "run_tests"}},
    ]
    assert Plan.model_validate({"steps": steps}).whole_suite_test_runs() == 2
