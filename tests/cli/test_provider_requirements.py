"""What a user needs to run a model is said at once (issue 30, items 5 and 6): every
missing requirement of a hosted provider in one line, the real providers named where the
default simulated one has no plan, and test doubles never listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.cli import main
from sandbox_agent.errors import UsageError
from sandbox_agent.providers import (
    PROVIDERS,
    REAL_PROVIDERS,
    USER_PROVIDERS,
    create_provider,
    is_provider,
    no_plan_message,
    registered_doubles,
)
from sandbox_agent.providers.gate import check_gate
from sandbox_agent.providers.options import PlanOptions

KEY = "sk-ant-api03-" + "Qw8" * 14
NOTHING: dict[str, str] = {}
OPEN = {"SANDBOX_AGENT_OFFLINE": "0", "ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": "none"}


def refusal(provider: str, model: str | None, environ: dict[str, str], **kwargs: object) -> str:
    with pytest.raises(UsageError) as refused:
        check_gate(provider, model, environ=environ, argv=["x"], **kwargs)  # type: ignore[arg-type]
    message = str(refused.value)
    assert "\n" not in message
    assert KEY not in message
    return message


def test_everything_a_hosted_provider_lacks_is_named_in_one_message() -> None:
    message = refusal("anthropic", None, NOTHING, prices=(None, None))
    assert message.startswith("--provider anthropic needs 3 more things: (1) ")
    for item in ("SANDBOX_AGENT_OFFLINE=0", "ANTHROPIC_API_KEY is not set", "--model is required"):
        assert item in message
    # The model's price goes with the model: a table model, or both price flags.
    assert "--price-per-mtok-in and --price-per-mtok-out" in message


def test_a_model_without_a_price_is_named_with_the_rest() -> None:
    message = refusal("openai", "my-finetune", NOTHING, prices=(None, None))
    assert "(1) real providers are off: set SANDBOX_AGENT_OFFLINE=0" in message
    assert "(2) OPENAI_API_KEY is not set" in message
    assert "(3) no price known for model 'my-finetune'" in message
    assert "needs 3 more things" in message


def test_prices_given_or_known_are_not_missing() -> None:
    passed = check_gate(
        "openai", "my-finetune", prices=(0.0, 0.0), environ=OPEN, argv=["sandbox-agent"]
    )
    assert passed.model == "my-finetune"
    passed = check_gate(
        "anthropic", "claude-haiku-4-5", prices=(None, None), environ=OPEN, argv=["x"]
    )
    assert passed.api_key == KEY


def test_one_missing_item_is_one_plain_sentence() -> None:
    environ = {k: v for k, v in OPEN.items() if k != "ANTHROPIC_API_KEY"}
    message = refusal("anthropic", "claude-haiku-4-5", environ)
    assert message == "ANTHROPIC_API_KEY is not set: export it in the environment"


def test_a_refused_base_url_is_one_more_item_not_a_second_attempt() -> None:
    message = refusal("openai", None, {"OPENAI_API_KEY": "none"}, base_url="file:///etc/passwd")
    assert "needs 3 more things" in message
    assert "http(s) URL" in message
    assert "http(s) URL" in refusal("openai", "m", OPEN, base_url="http://[::1")


def test_the_run_command_names_everything_missing_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("SANDBOX_AGENT_OFFLINE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    assert True\n")
    argv = ["run", "--repo", str(repo), "--task", "fix it", "--provider", "openai"]
    assert main([*argv, "--trace-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    for item in ("SANDBOX_AGENT_OFFLINE=0", "OPENAI_API_KEY is not set", "--model is required"):
        assert item in err


def test_test_doubles_work_when_named_but_are_not_in_the_package_nor_shown() -> None:
    doubles = registered_doubles()  # tests/conftest.py registers tests/doubles/
    assert "scripted-slow" in doubles
    assert all(is_provider(name) for name in doubles)
    assert not doubles & set(PROVIDERS)
    assert not doubles & set(USER_PROVIDERS)
    assert USER_PROVIDERS[0] == "scripted"
    assert set(USER_PROVIDERS) == set(PROVIDERS)


def test_an_unknown_provider_lists_what_a_user_can_choose_and_how() -> None:
    with pytest.raises(UsageError) as refused:
        create_provider("gpt-9", PlanOptions())
    message = str(refused.value)
    assert "choose one of: scripted" in message
    for name in registered_doubles():
        assert name not in message
    for name in REAL_PROVIDERS:
        assert f"--provider {name}" in message
    assert "make model" in message
    assert "SANDBOX_AGENT_OFFLINE=0" in message


def test_no_plan_names_each_real_provider_and_how_to_turn_it_on() -> None:
    message = no_plan_message()
    assert "\n" not in message
    for fragment in (
        "--provider local after 'make model'",
        "--provider anthropic with SANDBOX_AGENT_OFFLINE=0 and ANTHROPIC_API_KEY",
        "--provider openai with SANDBOX_AGENT_OFFLINE=0 and OPENAI_API_KEY",
        "--model NAME",
        "--plan FILE",
    ):
        assert fragment in message
    assert "scripted-slow" not in message


def test_a_run_without_provider_or_plan_says_which_models_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    assert True\n")
    argv = ["run", "--repo", str(repo), "--task", "fix it", "--trace-dir", str(tmp_path / "r")]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"sandbox-agent run: {no_plan_message()}"
