"""SR-6: the controller against a fully compromised model (each test written first).

Runs use the shipped FakeBackend (no Docker) and scripted plans, whose ``raw`` steps
carry any bytes a model could send.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.controller import Budgets, RunConfig, RunResult, run_task
from sandbox_agent.controller.loop import LoopState, agent_loop
from sandbox_agent.errors import InfrastructureError
from sandbox_agent.providers.base import ModelReply, ModelRequest
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.sandbox.fake import FakeBackend, completed
from sandbox_agent.settings import PROJECT_ROOT
from sandbox_agent.trace import read_chain

FIXTURES = PROJECT_ROOT / "fixtures"
PASSING = completed(exit_code=0, tests_run=6)
SECRET = "tok-Q7vXw2pL9sRk4mZc"
"""The value of an environment secret of no known key shape (redacted by exact value)."""


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("DEPLOY_TOKEN", SECRET)


def config(tmp_path: Path, steps: list[dict[str, Any]], **budgets: Any) -> RunConfig:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": steps}))
    return RunConfig(
        task="Fix the pagination bug.",
        fixture="paginator",
        fixtures_dir=FIXTURES,
        provider="scripted",
        provider_options=PlanOptions(plan_path=str(plan)),
        budgets=Budgets(**budgets),
        trace_dir=tmp_path / "runs",
    )


def run(tmp_path: Path, steps: list[dict[str, Any]], **budgets: Any) -> RunResult:
    return run_task(config(tmp_path, steps, **budgets), sandbox=FakeBackend([PASSING] * 4))


def run_files(result: RunResult) -> str:
    folder = Path(result.trace_path).parent
    return "\n".join(path.read_text() for path in sorted(folder.iterdir()) if path.is_file())


def test_f5_secrets_a_model_names_never_reach_result_json(tmp_path: Path) -> None:
    """SR-6 F5: the trace was redacted, ``result.json``'s tool calls were not: a tool
    named after a secret, a path holding one, echoed in a denial, went there verbatim."""
    steps = [
        {"tool": SECRET, "args": {}},
        {"tool": "read_file", "args": {"path": f"{SECRET}.py"}},
        {"tool": "search", "args": {"pattern": SECRET}},
        {"tool": "read_file", "args": {"path": f"/etc/{SECRET}"}},
        {"tool": "finish", "args": {"summary": f"done {SECRET}"}},
    ]
    result = run(tmp_path, steps)
    assert SECRET not in result.model_dump_json()
    assert SECRET not in run_files(result)


def test_f6_a_secret_cut_by_the_reply_limit_leaves_no_prefix_in_the_trace(
    tmp_path: Path,
) -> None:
    """SR-6 F6: the reply was cut to 4000 characters before it was redacted, so a secret
    straddling the cut lost its tail and its first characters were written as they were."""
    padding = "x" * (4000 - 12)
    steps = [{"raw": padding + SECRET}, {"tool": "finish", "args": {"summary": "done"}}]
    result = run(tmp_path, steps)
    trace = Path(result.trace_path).read_text()
    assert SECRET[:12] not in trace


def test_f3_a_provider_error_after_the_deadline_is_a_timeout(tmp_path: Path) -> None:
    """SR-6 F3 (loop side): the run's deadline reaches the provider, and a provider that
    gives up because the wall clock ran out ends the run TIMEOUT, not FAILED."""
    seen: list[float | None] = []

    class NoTools:
        def repository_files(self, most: int) -> tuple[list[str], bool]:
            return [], False

    class Slow:
        name = "slow"

        def complete(self, request: ModelRequest) -> ModelReply:
            seen.append(request.deadline)
            time.sleep(0.3)
            raise InfrastructureError("openai API: the run's wall clock ran out")

        def close(self) -> None:
            """Nothing held."""

    from sandbox_agent.trace import Redactor, TraceWriter

    cancel = CancelToken()
    cancel.deadline = time.monotonic() + 0.2
    trace = TraceWriter(tmp_path / "run", "r", Redactor())
    stop = agent_loop(
        config(tmp_path, []),
        provider=Slow(),
        toolbox=NoTools(),  # type: ignore[arg-type] # only the task's file listing is asked
        trace=trace,
        state=LoopState(),
        cancel=cancel,
    )
    trace.close()
    assert seen == [cancel.deadline]
    assert stop.end == "timeout"


def test_f7_a_run_that_cannot_be_sealed_leaves_no_result_claiming_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SR-6 F7: ``result.json`` (status SUCCEEDED) was written before the seal; when
    sealing failed (an unsafe key, a full disk) the folder kept an unsealed success."""
    from sandbox_agent.errors import EvidenceError
    from sandbox_agent.evidence import seal as seal_module

    def broken(*args: Any, **kwargs: Any) -> None:
        raise EvidenceError("cannot write evidence.json: No space left on device")

    monkeypatch.setattr(seal_module, "seal_run", broken)
    monkeypatch.setattr("sandbox_agent.evidence.seal_run", broken)
    with pytest.raises(EvidenceError):
        run_task(config(tmp_path, []), sandbox=FakeBackend([PASSING] * 4))
    (folder,) = (tmp_path / "runs").iterdir()
    assert not (folder / "result.json").exists()
    events = read_chain(folder / "trace.jsonl")
    assert events[-1]["event"] == "run_finished"


# Probes that hold -------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 10_000 + "]" * 10_000,  # deep nesting: RecursionError is caught
        '{"tool": "finish", "tool": "finish", "args": {"summary": "x"}}',  # duplicate keys
        '{"tool": "finish", "args": {"summary": NaN}}',
        '{"tool": "ﬁnish", "args": {"summary": "x"}}',  # NFKC ligature, not "finish"
        '{"tool": "finish\\u0000", "args": {}}',
        "\ud800",  # a lone surrogate
        "",
    ],
)
def test_every_odd_output_counts_against_a_budget(tmp_path: Path, raw: str) -> None:
    """No output counts as neither valid nor invalid: a model repeating it forever is
    stopped by a budget, and the run never succeeds."""
    result = run(
        tmp_path, [{"raw": raw}] * 8, max_invalid_outputs=3, max_denials=3, max_tool_calls=50
    )
    assert result.status in ("BUDGET_EXHAUSTED", "POLICY_ABORTED")
    used = result.budget_used
    assert used.invalid_outputs + used.policy_denials >= 4


def test_holds_a_run_with_hostile_strings_verifies_and_its_files_agree(tmp_path: Path) -> None:
    """After F5-F9 the sealed record, result.json and the trace still agree byte for byte
    in what verify compares (canonical JSON), with odd strings and floats in the run."""
    from sandbox_agent.evidence import verify_run

    steps = [
        {"raw": "\ud800 not json"},
        {"tool": f"{SECRET}\u2028", "args": {}},
        {"tool": "finish", "args": {"summary": "\u0085 done \U0001f600"}},
    ]
    result = run(tmp_path, steps)
    report = verify_run(Path(result.trace_path).parent)
    assert report.ok, report.failed()
