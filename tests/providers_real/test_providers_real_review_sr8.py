"""SR-8 (issue 20) C8-3: huge integers from a model endpoint, through the real SDKs.

Written against the code before the fix and seen to fail there: a ``start_line`` past
Python's 4300-digit limit in a tool call's arguments crashed the controller (a
ValueError out of ``parse_turn``) and left the run unsealed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_model_servers import (
    Answer,
    FakeModelServer,
    anthropic_message,
    anthropic_tool_use,
    openai_completion,
    openai_tool_call,
)
from real_provider_support import paginator_run

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.evidence import verify_run
from sandbox_agent.providers import options_for
from sandbox_agent.sandbox.fake import FakeBackend, completed

HUGE = "9" * 5000


def _run(provider: str, server: FakeModelServer, ledger: Path, tmp_path: Path) -> RunConfig:
    options = options_for(
        provider,
        model="gpt-4o-mini" if provider == "openai" else "claude-sonnet-5-5",
        base_url=f"{server.url}/v1" if provider == "openai" else server.url,
        ledger_path=str(ledger),
    )
    return paginator_run(options, tmp_path, provider=provider)


@pytest.mark.parametrize("digits", [4300, 5000])
def test_c8_3_a_huge_line_number_in_openai_tool_arguments_is_an_invalid_output(
    server: FakeModelServer, online: Path, tmp_path: Path, digits: int
) -> None:
    arguments = f'{{"path": "paginator/core.py", "start_line": {"9" * digits}}}'
    finish = openai_tool_call("finish", json.dumps({"summary": "done"}), "call_1")
    server.answers.extend(
        [
            Answer(
                200, openai_completion({"tool_calls": [openai_tool_call("read_file", arguments)]})
            ),
            Answer(200, openai_completion({"tool_calls": [finish]})),
        ]
    )
    result = run_task(_run("openai", server, online, tmp_path), sandbox=FakeBackend([completed()]))
    assert result.budget_used.invalid_outputs == 1
    assert verify_run(Path(result.trace_path).parent).ok


def test_c8_3_huge_numbers_in_an_openai_answer_body_end_the_run_sealed(
    server: FakeModelServer, online: Path, tmp_path: Path
) -> None:
    """A usage count past the digit limit: the SDK's own JSON decoding refuses it; that
    is an unreadable answer, never a crash."""
    body = json.dumps(openai_completion({"content": "hi"})).replace(
        '"prompt_tokens": 100', f'"prompt_tokens": {HUGE}'
    )
    server.answers.append(Answer(200, body.encode()))
    result = run_task(_run("openai", server, online, tmp_path), sandbox=FakeBackend([completed()]))
    assert result.status != "SUCCEEDED"
    assert verify_run(Path(result.trace_path).parent).ok


def test_c8_3_a_huge_line_number_in_anthropic_tool_input_is_an_invalid_output(
    server: FakeModelServer, online: Path, tmp_path: Path
) -> None:
    use = anthropic_tool_use("read_file", {"path": "paginator/core.py", "start_line": 10**4000})
    finish = anthropic_tool_use("finish", {"summary": "done"}, "toolu_2")
    server.answers.extend(
        [Answer(200, anthropic_message([use])), Answer(200, anthropic_message([finish]))]
    )
    result = run_task(
        _run("anthropic", server, online, tmp_path), sandbox=FakeBackend([completed()])
    )
    assert result.budget_used.invalid_outputs == 1
    assert verify_run(Path(result.trace_path).parent).ok
