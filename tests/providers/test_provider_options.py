"""One options model per provider kind (issue 31): each holds only its own fields, refuses
a value out of range where it is made, round-trips through JSON and a pickle (a Ray
payload), and is what the registry builds for a provider's name."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from sandbox_agent.controller.models import RunConfig
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.providers import (
    PROVIDERS,
    USER_PROVIDERS,
    create_provider,
    is_simulated,
    options_for,
    options_kind,
    registered_doubles,
)
from sandbox_agent.providers.base import ModelRequest
from sandbox_agent.providers.options import (
    MAX_CALLS,
    MAX_OUTPUT_TOKENS,
    MAX_PRICE_PER_MTOK,
    MAX_REQUEST_TIMEOUT_SECONDS,
    MAX_SPEND_USD,
    MAX_TOKENS,
    VARIANTS,
    AnthropicOptions,
    InjectionOptions,
    LocalOptions,
    MeteredOptions,
    OpenAIOptions,
    PlanOptions,
    ProviderOptions,
)
from sandbox_agent.settings import PROJECT_ROOT

METERED = (LocalOptions, AnthropicOptions, OpenAIOptions)
HOSTED = (AnthropicOptions, OpenAIOptions)
OUT_OF_RANGE: list[tuple[str, Any, str]] = [
    ("max_cost_usd", -0.01, "greater than or equal to 0"),
    ("max_cost_usd", float("inf"), "finite number"),
    ("max_cost_usd", MAX_SPEND_USD * 2, "less than or equal to"),
    ("experiment_budget_usd", float("nan"), "finite number"),
    ("experiment_budget_usd", MAX_SPEND_USD + 1, "less than or equal to"),
    ("max_calls", 0, "greater than or equal to 1"),
    ("max_calls", MAX_CALLS + 1, "less than or equal to"),
    ("max_tokens", 0, "greater than or equal to 1"),
    ("max_tokens", MAX_TOKENS + 1, "less than or equal to"),
    ("max_output_tokens", 0, "greater than or equal to 1"),
    ("max_output_tokens", MAX_OUTPUT_TOKENS + 1, "less than or equal to"),
    ("request_timeout_seconds", 0, "greater than 0"),
    ("request_timeout_seconds", MAX_REQUEST_TIMEOUT_SECONDS + 1, "less than or equal to"),
    ("experiment", "", "at least 1 character"),
]
HOSTED_OUT_OF_RANGE: list[tuple[str, Any, str]] = [
    ("price_per_mtok_in", -1, "greater than or equal to 0"),
    ("price_per_mtok_out", MAX_PRICE_PER_MTOK * 10, "less than or equal to"),
    ("price_per_mtok_out", float("inf"), "finite number"),
    ("model", "", "at least 1 character"),
    ("base_url", "ftp://example.org", "should match pattern"),
]


def refusal(model: type[Any], field: str, value: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        model(**{field: value})
    problem = refused.value.errors(include_url=False)[0]
    assert problem["loc"] == (field,)
    return str(problem["msg"])


@pytest.mark.parametrize("model", METERED, ids=lambda m: m.__name__)
@pytest.mark.parametrize(("field", "value", "says"), OUT_OF_RANGE)
def test_each_metered_kind_refuses_a_limit_out_of_range(
    model: type[Any], field: str, value: Any, says: str
) -> None:
    assert says in refusal(model, field, value)


@pytest.mark.parametrize("model", HOSTED, ids=lambda m: m.__name__)
@pytest.mark.parametrize(("field", "value", "says"), HOSTED_OUT_OF_RANGE)
def test_each_hosted_kind_refuses_a_price_model_or_endpoint_out_of_range(
    model: type[Any], field: str, value: Any, says: str
) -> None:
    assert says in refusal(model, field, value)


def test_openai_and_local_refuse_an_unknown_tool_protocol() -> None:
    for model in (OpenAIOptions, LocalOptions):
        assert "Input should be" in refusal(model, "tool_protocol", "xml")


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (PlanOptions, "max_cost_usd"),
        (InjectionOptions, "plan_path"),
        (LocalOptions, "model"),
        (LocalOptions, "base_url"),
        (LocalOptions, "price_per_mtok_in"),
        (AnthropicOptions, "tool_protocol"),
        (OpenAIOptions, "plan_path"),
    ],
)
def test_each_kind_holds_only_its_own_fields(model: type[Any], field: str) -> None:
    assert field not in model.model_fields
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model(**{field: None})


def test_each_kind_has_its_own_defaults() -> None:
    local, hosted = LocalOptions(), OpenAIOptions()
    assert (local.max_output_tokens, hosted.max_output_tokens) == (1024, 2048)
    assert (local.request_timeout_seconds, hosted.request_timeout_seconds) == (300, 120)
    assert (local.tool_protocol, hosted.tool_protocol) == ("json_schema", None)
    assert (hosted.max_cost_usd, hosted.experiment_budget_usd) == (1.0, 10.0)
    assert (hosted.max_calls, hosted.max_tokens, hosted.experiment) == (60, 2_000_000, "default")


def every_variant() -> list[Any]:
    return [
        PlanOptions(plan_path="/p/plan.json", reference_plan_path="/f/ref.plan.json"),
        InjectionOptions(),
        LocalOptions(run_id="r", ledger_path="/l.sqlite3", tool_protocol="tools"),
        AnthropicOptions(model="claude-haiku-4-5", max_cost_usd=0.5, base_url="http://h:1"),
        OpenAIOptions(model="gpt-4o-mini", price_per_mtok_in=0, price_per_mtok_out=0, max_calls=3),
    ]


def test_every_kind_is_tested_here() -> None:
    assert {type(options) for options in every_variant()} == set(VARIANTS)


@pytest.mark.parametrize("options", every_variant(), ids=lambda o: o.kind)
def test_the_union_round_trips_through_json_and_a_pickle(options: Any) -> None:
    union: TypeAdapter[ProviderOptions] = TypeAdapter(ProviderOptions)
    back = union.validate_json(union.dump_json(options))
    assert back == options
    assert type(back) is type(options)
    assert pickle.loads(pickle.dumps(options)) == options  # noqa: S301 - our own bytes


@pytest.mark.parametrize("options", every_variant(), ids=lambda o: o.kind)
def test_a_run_and_an_eval_carry_their_options_through_json_and_a_pickle(options: Any) -> None:
    provider = next(name for name, entry in PROVIDERS.items() if entry.options is type(options))
    config = RunConfig(task="t", fixture="paginator", provider=provider, provider_options=options)
    for back in (
        RunConfig.model_validate_json(config.model_dump_json()),
        pickle.loads(pickle.dumps(config)),  # noqa: S301 - how Ray ships it to a node
    ):
        assert back == config
        assert type(back.provider_options) is type(options)
    evaluation = EvalOptions(provider=provider, provider_options=options)
    assert EvalOptions.model_validate_json(evaluation.model_dump_json()) == evaluation
    assert pickle.loads(pickle.dumps(evaluation)) == evaluation  # noqa: S301 - our own


def test_a_json_payload_without_the_kind_is_refused() -> None:
    union: TypeAdapter[ProviderOptions] = TypeAdapter(ProviderOptions)
    with pytest.raises(ValidationError, match="Unable to extract tag using discriminator"):
        union.validate_python({"plan_path": "/p.json"})


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("scripted", PlanOptions),
        ("mock-adversarial", PlanOptions),
        ("injection", InjectionOptions),
        ("local", LocalOptions),
        ("anthropic", AnthropicOptions),
        ("openai", OpenAIOptions),
        ("scripted-slow", PlanOptions),  # a test double, registered by tests/conftest.py
    ],
)
def test_a_run_without_options_gets_its_providers_defaults(provider: str, model: type[Any]) -> None:
    assert options_kind(provider) is model
    assert type(RunConfig(task="t", provider=provider).provider_options) is model
    assert type(EvalOptions(provider=provider).provider_options) is model


def test_options_of_another_kind_are_refused() -> None:
    with pytest.raises(UsageError, match="provider 'openai' takes OpenAIOptions, not PlanOptions"):
        RunConfig(task="t", provider="openai", provider_options=PlanOptions())
    with pytest.raises(UsageError, match="takes PlanOptions, not LocalOptions"):
        EvalOptions(provider="scripted", provider_options=LocalOptions())
    with pytest.raises(UsageError, match="takes InjectionOptions"):
        create_provider("injection", PlanOptions())


def test_options_for_keeps_the_kinds_fields_and_checks_the_others() -> None:
    local = options_for("local", model="gpt-4o-mini", max_calls=5, plan_path="/p.json")
    assert local == LocalOptions(max_calls=5)
    # A field the kind does not use is still checked: a bad flag is refused whatever runs.
    with pytest.raises(ValidationError) as refused:
        options_for("scripted", max_cost_usd=-1)
    assert refused.value.errors()[0]["loc"] == ("max_cost_usd",)
    with pytest.raises(TypeError, match="no provider options have a field 'max_cost'"):
        options_for("openai", max_cost=1)


def test_updated_validates_again_and_leaves_out_other_kinds_fields() -> None:
    plan = PlanOptions(plan_path="/p.json")
    assert plan.updated(run_id="r", ledger_path="/l.sqlite3") == plan
    hosted = OpenAIOptions(model="gpt-4o-mini")
    assert hosted.updated(ledger_path="/l.sqlite3", plan_path=None).ledger_path == "/l.sqlite3"
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        hosted.updated(max_calls=0)
    with pytest.raises(TypeError):
        hosted.updated(kind="local")


def test_a_test_double_runs_when_named_and_is_never_listed(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"steps": [{"raw": "slowly"}]}')
    doubles = registered_doubles()
    assert "scripted-slow" in doubles
    assert is_simulated("scripted-slow")
    assert not doubles & set(USER_PROVIDERS)
    with pytest.raises(UsageError) as refused:
        create_provider("gpt-9", PlanOptions())
    assert not any(name in str(refused.value) for name in doubles)
    provider = create_provider("scripted-slow", PlanOptions(plan_path=str(plan)))
    reply = provider.complete(ModelRequest(system="s", task="t", tools=[], deadline=0.0))
    assert (reply.text, reply.model) == ("slowly", "scripted-slow")


def test_no_test_double_ships_in_the_package() -> None:
    package = PROJECT_ROOT / "src" / "sandbox_agent"
    assert not (package / "providers" / "slow.py").exists()
    shipped = [
        path
        for path in package.rglob("*.py")
        if "scripted-slow" in path.read_text(encoding="utf-8")
    ]
    assert shipped == []


def test_every_metered_kind_is_a_real_provider_and_no_other() -> None:
    for name, entry in PROVIDERS.items():
        assert issubclass(entry.options, MeteredOptions) == (not is_simulated(name))
