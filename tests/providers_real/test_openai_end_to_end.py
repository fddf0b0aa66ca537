"""A whole run on the paginator fixture, with the openai provider against a loopback server.

The server answers with the fixture's reference tool calls, plus an edit that makes the
code under test print a key-shaped string. The process's key must reach nothing the
run records; the printed string must not reach the trace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_model_servers import Answer, FakeModelServer, openai_completion, openai_tool_call
from real_provider_support import FAKE_OPENAI_KEY, openai_options, paginator_run

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.ledger import Ledger
from sandbox_agent.settings import PROJECT_ROOT

PLANTED = "sk-proj-" + "Pl4nt3d" * 5
LEAKY_EDIT = {
    "path": "paginator/core.py",
    "old": 'T = TypeVar("T")',
    "new": f'T = TypeVar("T")\nprint("{PLANTED}")',
}


def scripted_answers() -> list[Answer]:
    plan = json.loads((PROJECT_ROOT / "fixtures" / "paginator.plan.json").read_text())
    answers = []
    for number, step in enumerate(plan["steps"]):
        args = step["args"]
        if step["tool"] == "apply_patch":
            args = {"edits": [*args["edits"], LEAKY_EDIT]}
        call = openai_tool_call(step["tool"], json.dumps(args), f"call_{number}")
        answers.append(Answer(200, openai_completion({"tool_calls": [call]})))
    return answers


def paginator_on(server: FakeModelServer, ledger: Path, tmp_path: Path) -> RunConfig:
    """The paginator task with the openai provider pointed at ``server``."""
    return paginator_run(openai_options(f"{server.url}/v1", ledger), tmp_path)


@pytest.mark.docker
@pytest.mark.slow
def test_a_paginator_run_keeps_keys_out_of_its_trace(
    server: FakeModelServer, online: Path, tmp_path: Path
) -> None:
    server.answers.extend(scripted_answers())
    result = run_task(paginator_on(server, online, tmp_path))

    assert result.status == "SUCCEEDED", result.reason
    assert len(server.received) == len(scripted_answers())
    assert result.budget_used.cost_usd > 0
    (spend,) = Ledger(online).summary()
    assert (spend.requests, spend.open_reservations) == (len(server.received), 0)
    run_dir = Path(result.trace_path).parent
    everything = result.model_dump_json() + "".join(
        path.read_text(errors="replace") for path in run_dir.rglob("*") if path.is_file()
    )
    assert FAKE_OPENAI_KEY not in everything
    # The planted string is the code change itself, so the diff keeps it (diff.patch,
    # result.diff); the trace, which records the model's turns and the test output, may not.
    trace = Path(result.trace_path).read_text()
    assert PLANTED not in trace
    assert "[REDACTED]" in trace


@pytest.mark.docker
@pytest.mark.slow
def test_an_answer_that_is_not_json_ends_the_run_sealed_on_a_provider_error(
    server: FakeModelServer, online: Path, tmp_path: Path
) -> None:
    """SR-6 F12: an undecodable answer used to escape as JSONDecodeError, and the run
    stopped unsealed; now the run ends on the provider's failure, its final tests run and
    its record sealed and verifiable."""
    from sandbox_agent.evidence import verify_run

    first = openai_tool_call("list_files", "{}", "call_0")
    server.answers.extend(
        [Answer(200, openai_completion({"tool_calls": [first]})), Answer(200, b"{not json")]
    )
    result = run_task(paginator_on(server, online, tmp_path))

    assert result.status != "SUCCEEDED"
    assert "provider" in result.reason
    assert result.final_tests is not None
    assert not result.final_tests.passed
    assert len(server.received) == 2  # the broken answer is not retried
    report = verify_run(Path(result.trace_path).parent)
    assert report.ok, report.failed()
