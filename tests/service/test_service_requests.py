"""What a run request may ask for, through a real server on loopback: the strategy, the
budgets and repair options within the operator's maxima, and a provider refusal that
names the flag that would enable it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fake_run import FakeRunFunction
from service_harness import LiveServer, wait_finished

from sandbox_agent.controller.models import (
    DEFAULT_CANDIDATES,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_MAX_WALL_SECONDS,
    Budgets,
    RepairOptions,
)
from sandbox_agent.service import settings as service_settings
from sandbox_agent.service.admission import BUDGET_MAXIMA, REPAIR_MAXIMA
from sandbox_agent.service.settings import ServiceSettings

SUBMISSION = {"fixture": "paginator", "task": "fix the page count"}


def _run(server: LiveServer, body: dict[str, Any]) -> dict[str, Any]:
    with server.client() as client:
        answer = client.post("/runs", json=body)
        assert answer.status_code == 202, answer.text
        return wait_finished(client, answer.json()["id"])


def test_the_strategy_defaults_as_the_cli_and_reaches_the_run_config(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    fake = FakeRunFunction()
    providers = ("scripted", "local")
    server = start_server(make_settings(providers=providers), fake)
    tools = _run(server, {**SUBMISSION, "provider": "scripted"})
    repair = _run(server, {**SUBMISSION, "provider": "local"})
    chosen = _run(server, {**SUBMISSION, "provider": "scripted", "strategy": "repair"})
    assert [tools["strategy"], repair["strategy"], chosen["strategy"]] == [
        "tools",
        "repair",
        "repair",
    ]
    assert [config.strategy for config in fake.calls] == ["tools", "repair", "repair"]
    assert repair["repair"] == RepairOptions().model_dump()
    assert tools["repair"] is None
    with server.client() as client:
        listed = client.get("/runs").json()["runs"]
        assert [run["strategy"] for run in listed] == ["repair", "repair", "tools"]
        answer = client.post("/runs", json={**SUBMISSION, "strategy": "sideways"})
        assert answer.status_code == 422


def test_a_request_without_provider_gets_the_first_real_one_the_server_offers(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    fake = FakeRunFunction()
    server = start_server(make_settings(providers=("scripted", "local")), fake)
    run = _run(server, SUBMISSION)
    assert run["provider"] == "local"
    assert run["strategy"] == "repair"
    with server.client() as client:
        offered = client.get("/fixtures").json()
    assert offered["default_provider"] == "local"
    assert offered["default_strategies"] == {"scripted": "tools", "local": "repair"}
    assert offered["strategies"] == ["tools", "repair"]
    assert offered["repo_roots"] == []


def test_budgets_within_the_maxima_reach_the_run_and_absent_ones_are_capped_defaults(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    fake = FakeRunFunction()
    server = start_server(make_settings(max_run_wall_seconds=60.0), fake)
    run = _run(server, {**SUBMISSION, "budgets": {"max_iterations": 7, "max_denials": 0}})
    expected = Budgets(max_iterations=7, max_denials=0, max_wall_seconds=60.0)
    assert fake.calls[0].budgets == expected
    assert run["budgets"] == expected.model_dump()
    assert DEFAULT_MAX_WALL_SECONDS > 60.0, "the default was capped by the maximum"
    plain = _run(server, SUBMISSION)
    assert plain["budgets"]["max_iterations"] == DEFAULT_MAX_ITERATIONS
    assert plain["budgets"]["max_wall_seconds"] == 60.0


@pytest.mark.parametrize(
    ("body", "flag"),
    [
        ({"budgets": {"max_iterations": 51}}, "--max-run-iterations"),
        ({"budgets": {"max_tool_calls": 10**30}}, "--max-run-tool-calls"),
        ({"budgets": {"max_wall_seconds": 1800.5}}, "--max-run-wall-seconds"),
        ({"budgets": {"max_denials": 11}}, "--max-run-denials"),
        ({"budgets": {"max_invalid_outputs": 11}}, "--max-run-invalid-outputs"),
        ({"strategy": "repair", "repair": {"candidates": 11}}, "--max-run-candidates"),
        ({"strategy": "repair", "repair": {"rounds": 5}}, "--max-run-rounds"),
        ({"strategy": "repair", "repair": {"round_candidates": 5}}, "--max-run-round-candidates"),
        (
            {"strategy": "repair", "repair": {"candidate_tokens": 4097}},
            "--max-run-candidate-tokens",
        ),
    ],
)
def test_a_limit_over_its_maximum_is_refused_naming_the_flag_that_raises_it(
    server: LiveServer, body: dict[str, Any], flag: str
) -> None:
    with server.client() as client:
        answer = client.post("/runs", json={**SUBMISSION, **body})
        assert answer.status_code == 422, answer.text
        detail = answer.json()["detail"]
        assert isinstance(detail, str)
        assert "\n" not in detail
        assert f"serve {flag}" in detail, detail
        assert client.get("/runs").json()["total"] == 0


def test_the_maxima_have_named_defaults_at_least_the_runs_own() -> None:
    bounded = [(Budgets, BUDGET_MAXIMA), (RepairOptions, REPAIR_MAXIMA)]
    for model, maxima in bounded:
        for field, setting in maxima.items():
            named = f"DEFAULT_{setting.upper()}"
            maximum = ServiceSettings.model_fields[setting].default
            assert getattr(service_settings, named) == maximum
            assert maximum >= model.model_fields[field].default, (field, setting)
            assert setting in service_settings.MAXIMUM_FLAGS


def test_repair_options_reach_the_run_within_the_maxima(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    fake = FakeRunFunction()
    server = start_server(make_settings(max_run_candidates=3), fake)
    asked = {
        "candidates": 2, "rounds": 0, "temperature": 0.5, "seed": 7, "focus": "off",
        "redraws": 2, "feedback": "tried",
    }  # fmt: skip
    run = _run(server, {**SUBMISSION, "strategy": "repair", "repair": asked})
    assert fake.calls[0].repair == RepairOptions(**asked)
    assert run["repair"]["candidates"] == 2
    capped = _run(server, {**SUBMISSION, "strategy": "repair"})
    assert capped["repair"]["candidates"] == min(3, DEFAULT_CANDIDATES)


def test_allow_no_tests_reaches_the_run_as_the_cli_flag_does(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    # Issue 30: run --allow-no-tests had no field in a run request.
    fake = FakeRunFunction()
    server = start_server(make_settings(), fake)
    allowed = _run(server, {**SUBMISSION, "allow_no_tests": True})
    plain = _run(server, SUBMISSION)
    assert [config.allow_no_tests for config in fake.calls] == [True, False]
    assert (allowed["allow_no_tests"], plain["allow_no_tests"]) == (True, False)
    with server.client() as client:
        answer = client.post("/runs", json={**SUBMISSION, "allow_no_tests": "maybe"})
        assert answer.status_code == 422


@pytest.mark.parametrize(
    "body",
    [
        {"repair": {"candidates": 2}},
        {"strategy": "tools", "repair": {"seed": 1}},
    ],
)
def test_repair_options_for_the_tools_strategy_are_refused(
    server: LiveServer, body: dict[str, Any]
) -> None:
    with server.client() as client:
        answer = client.post("/runs", json={**SUBMISSION, "provider": "scripted", **body})
        assert answer.status_code == 422
        assert "strategy repair" in answer.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        {"budgets": {"max_iterations": 0}},
        {"budgets": {"max_wall_seconds": -1}},
        {"budgets": {"max_turns": 3}},
        {"strategy": "repair", "repair": {"temperature": 0}},
        {"strategy": "repair", "repair": {"candidate_tokens": 10}},
        {"strategy": "repair", "repair": {"focus": "sometimes"}},
        {"strategy": "repair", "repair": {"redraws": 9}},
        {"strategy": "repair", "repair": {"redraws": -1}},
        {"strategy": "repair", "repair": {"feedback": "everything"}},
    ],
)
def test_nonsense_limits_are_invalid_bodies(server: LiveServer, body: dict[str, Any]) -> None:
    with server.client() as client:
        answer = client.post("/runs", json={**SUBMISSION, **body})
        assert answer.status_code == 422
        assert isinstance(answer.json()["detail"], list)


def test_a_non_finite_wall_clock_is_refused(server: LiveServer) -> None:
    body = b'{"fixture": "paginator", "task": "t", "budgets": {"max_wall_seconds": NaN}}'
    with server.client() as client:
        answer = client.post("/runs", content=body, headers={"Content-Type": "application/json"})
        assert answer.status_code == 422
        assert client.get("/runs").json()["total"] == 0


@pytest.mark.parametrize(
    ("provider", "says"),
    [
        ("local", "serve --provider local"),
        (
            "anthropic",
            "serve --provider anthropic, with SANDBOX_AGENT_OFFLINE=0 and ANTHROPIC_API_KEY",
        ),
        ("openai", "serve --provider openai, with SANDBOX_AGENT_OFFLINE=0 and OPENAI_API_KEY"),
        ("scripted-slow", "serve --provider scripted-slow enables it"),
        ("gpt-9", "each enabled by serve --provider NAME"),
    ],
)
def test_a_provider_not_enabled_is_refused_naming_the_flag_that_enables_it(
    server: LiveServer, provider: str, says: str
) -> None:
    with server.client() as client:
        answer = client.post("/runs", json={**SUBMISSION, "provider": provider})
        assert answer.status_code == 400
        detail = answer.json()["detail"]
        assert says in detail, detail
        assert "enabled here: scripted, injection, mock-adversarial" in detail
        assert "\n" not in detail


def test_sr13_f9_a_real_provider_gets_the_model_flags_serve_was_given(
    make_settings: Callable[..., ServiceSettings], start_server: Callable[..., LiveServer]
) -> None:
    # SR-13 F9: no serve flag or request field set a model, an address or prices, so every
    # run of serve --provider openai ended "rejected: --model is required".
    fake = FakeRunFunction()
    given = {"model": "m-1", "base_url": "http://127.0.0.1:9/v1", "price_per_mtok_in": 0.5,
             "price_per_mtok_out": 1.5, "max_cost_usd": 0.25}  # fmt: skip
    server = start_server(
        make_settings(providers=("openai", "scripted"), model_options=given), fake
    )
    _run(server, {**SUBMISSION, "provider": "openai"})
    _run(server, {**SUBMISSION, "provider": "scripted"})
    real, scripted = (config.provider_options for config in fake.calls)
    assert {field: getattr(real, field) for field in given} == given
    assert not hasattr(scripted, "model")  # the scripted kind has no such field
