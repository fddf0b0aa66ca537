"""The opt-in gate: every missing piece is named in one line, and the key never is."""

from __future__ import annotations

import pytest

from sandbox_agent.errors import UsageError
from sandbox_agent.providers.gate import check_gate

KEY = "sk-ant-api03-" + "Qw8" * 14
OPEN = {"SANDBOX_AGENT_OFFLINE": "0", "ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": "none"}


def refusal(provider: str, environ: dict[str, str], **kwargs: object) -> str:
    with pytest.raises(UsageError) as refused:
        check_gate(provider, kwargs.pop("model", "m"), environ=environ, argv=["x"], **kwargs)  # type: ignore[arg-type]
    message = str(refused.value)
    assert "\n" not in message
    assert KEY not in message
    return message


def test_an_open_gate_hands_over_the_key() -> None:
    passed = check_gate("anthropic", "claude-haiku-4-5", environ=OPEN, argv=["sandbox-agent"])
    assert (passed.model, passed.api_key) == ("claude-haiku-4-5", KEY)
    # A local server without a key: the placeholder is accepted explicitly.
    assert check_gate("openai", "llama3", environ=OPEN, argv=[]).api_key == "none"


@pytest.mark.parametrize("offline", [None, "1", "", "false"])
def test_offline_unless_explicitly_zero(offline: str | None) -> None:
    environ = {k: v for k, v in OPEN.items() if k != "SANDBOX_AGENT_OFFLINE"}
    if offline is not None:
        environ["SANDBOX_AGENT_OFFLINE"] = offline
    assert "SANDBOX_AGENT_OFFLINE=0" in refusal("anthropic", environ)


def test_a_missing_key_is_named() -> None:
    environ = {"SANDBOX_AGENT_OFFLINE": "0"}
    assert "ANTHROPIC_API_KEY is not set" in refusal("anthropic", environ)
    assert "OPENAI_API_KEY=none" in refusal("openai", environ)


def test_a_key_on_the_command_line_is_refused() -> None:
    with pytest.raises(UsageError, match="appears on the command line") as refused:
        check_gate("anthropic", "m", environ=OPEN, argv=["run", "--task", f"use {KEY}"])
    assert KEY not in str(refused.value)


def test_model_provider_and_base_url_are_checked() -> None:
    assert "--model is required" in refusal("anthropic", OPEN, model=None)
    assert "not a real provider" in refusal("scripted", OPEN)
    assert "must not carry credentials" in refusal(
        "openai", OPEN, base_url="http://user:pw@127.0.0.1:8000/v1"
    )
    assert "http(s) URL" in refusal("openai", OPEN, base_url="file:///etc/passwd")
