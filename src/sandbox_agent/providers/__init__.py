"""Providers, chosen by name from one table (name -> factory and options kind, the
factory imported lazily).

Every factory has the signature ``create(options) -> Provider``, ``options`` being the
variant of the provider's kind (``providers.options``); ``options_for`` is the one place
that builds it from what a caller has (CLI flags, a service request, an evaluation).

Two kinds of provider are in the table: real models (``REAL_PROVIDERS``) and simulated
ones a user may run on purpose (``scripted`` replays a plan, ``injection`` and
``mock-adversarial`` attack the policy). The project's test doubles are not in the
package: the tests register them (``register_test_double``, and for the processes a test
starts, ``TEST_DOUBLES_ENV``); they work when named and no message lists them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, Self, cast

from pydantic import BaseModel, Field, model_validator

from sandbox_agent.errors import SetupError, UsageError
from sandbox_agent.providers.base import Provider
from sandbox_agent.providers.gate import KEY_ENV, OFFLINE_ENV
from sandbox_agent.providers.options import (
    AnthropicOptions,
    AnyOptions,
    InjectionOptions,
    LocalOptions,
    MeteredOptions,
    OpenAIOptions,
    PlanOptions,
    ProviderOptions,
    check_fields,
)

Factory = Callable[[Any], Provider]


class Entry(NamedTuple):
    """One provider: its factory (``"module:function"``, imported when first used, or
    the function itself for a registered test double) and its options' kind."""

    factory: str | Factory
    options: type[AnyOptions]


PROVIDERS: dict[str, Entry] = {
    "scripted": Entry("sandbox_agent.providers.scripted:create", PlanOptions),
    "injection": Entry("sandbox_agent.providers.injection:create", InjectionOptions),
    "mock-adversarial": Entry("sandbox_agent.providers.adversarial:create", PlanOptions),
    "anthropic": Entry("sandbox_agent.providers.anthropic:create", AnthropicOptions),
    "openai": Entry("sandbox_agent.providers.openai_compat:create", OpenAIOptions),
    "local": Entry("sandbox_agent.providers.local:create", LocalOptions),
}
SIMULATED_PROVIDERS = frozenset(
    name for name, entry in PROVIDERS.items() if not issubclass(entry.options, MeteredOptions)
)
REAL_PROVIDERS: dict[str, str] = {
    "local": "after 'make model' (no key, no network, no spend)",
    "anthropic": f"with {OFFLINE_ENV}=0 and {KEY_ENV['anthropic']} in the environment "
    "and --model NAME",
    "openai": f"with {OFFLINE_ENV}=0 and {KEY_ENV['openai']} in the environment "
    "and --model NAME (--base-url for any OpenAI-compatible server)",
}
"""Each real model's provider name, and how to turn it on (docs/MODELS.md)."""
USER_PROVIDERS: tuple[str, ...] = (
    *(name for name in PROVIDERS if name in SIMULATED_PROVIDERS),
    *REAL_PROVIDERS,
)
"""The providers a user is shown, simulated first (``scripted`` is the default)."""

TEST_DOUBLES_ENV = "SANDBOX_AGENT_TEST_DOUBLES"
"""Python files (``os.pathsep``-separated) that register test doubles when loaded: the
test suite sets it, so the processes it starts (the CLI, ``serve``, Ray nodes) know
the same doubles. Unset for a user: nothing is loaded."""
_doubles: dict[str, Entry] = {}
_loaded: set[str] = set()


def register_test_double(name: str, factory: Factory, options: type[AnyOptions]) -> None:
    """Make ``name`` a provider that works when named and is never listed to a user."""
    if name in PROVIDERS:
        raise ValueError(f"{name!r} is a provider of the package, not a test double")
    _doubles[name] = Entry(factory, options)


def registered_doubles() -> frozenset[str]:
    """The test doubles registered in this process (``TEST_DOUBLES_ENV`` loaded first)."""
    _load_doubles()
    return frozenset(_doubles)


def _load_doubles() -> None:
    """Load each file ``TEST_DOUBLES_ENV`` names, once.

    Raises:
        SetupError: a file named there cannot be loaded.
    """
    for entry in os.environ.get(TEST_DOUBLES_ENV, "").split(os.pathsep):
        if not entry or entry in _loaded:
            continue
        path = Path(entry)
        spec = None
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"sandbox_agent_double_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise SetupError(f"{TEST_DOUBLES_ENV} names {entry}, which is not a Python file")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded.add(entry)


def _entry(name: str) -> Entry | None:
    if name in PROVIDERS:
        return PROVIDERS[name]
    _load_doubles()
    return _doubles.get(name)


def is_provider(name: str) -> bool:
    """Whether ``name`` runs here: a provider of the table or a registered test double."""
    return _entry(name) is not None


def is_simulated(name: str) -> bool:
    """Whether ``name`` is a provider that spends nothing and is no model (simulated
    providers and test doubles: options with no spend meter)."""
    entry = _entry(name)
    return entry is not None and not issubclass(entry.options, MeteredOptions)


def real_providers_hint() -> str:
    """One clause naming every real model provider and how to turn each on."""
    return "; ".join(f"--provider {name} {how}" for name, how in REAL_PROVIDERS.items())


def no_plan_message() -> str:
    """What ``scripted`` says when it has no plan: it is the default provider, so a user
    who named none learns which real models there are and how to turn each on."""
    return (
        "no model chosen: the default provider, scripted, only replays a plan file, and "
        f"this repository has no reference plan; to run a model use {real_providers_hint()}; "
        "or give --plan FILE to replay one"
    )


def _known(name: str) -> Entry:
    """The entry of ``name``.

    Raises:
        UsageError: an unknown name (the message lists the valid ones, test doubles
            left out).
    """
    entry = _entry(name)
    if entry is None:
        simulated = [p for p in USER_PROVIDERS if p in SIMULATED_PROVIDERS]
        raise UsageError(
            f"unknown provider {name!r}; choose one of: {', '.join(simulated)} (simulated, "
            f"no model) or {', '.join(REAL_PROVIDERS)} (real models: {real_providers_hint()})"
        )
    return entry


def options_kind(name: str) -> type[AnyOptions]:
    """The options model provider ``name`` takes.

    Raises:
        UsageError: an unknown name (listing the valid ones).
    """
    return _known(name).options


def options_for(provider: str, /, **fields: Any) -> ProviderOptions:
    """The options of ``provider``: its kind's model, from those of ``fields`` it has
    (None: not given, the model's default). The others are not this kind's and are left
    out, each still checked against its own constraint, so a bad value is refused
    whichever provider runs.

    Raises:
        UsageError: an unknown provider (listing the valid ones).
        TypeError: a field no kind has.
        pydantic.ValidationError: a value out of range (its field in ``loc``).
    """
    model = options_kind(provider)
    given = {name: value for name, value in fields.items() if value is not None}
    check_fields({name: value for name, value in given.items() if name not in model.model_fields})
    return model(**{name: value for name, value in given.items() if name in model.model_fields})


def check_options(provider: str, options: AnyOptions) -> None:
    """Refuse options of another kind than ``provider``'s.

    Raises:
        UsageError: an unknown provider, or options of another kind.
    """
    wanted = options_kind(provider)
    if type(options) is not wanted:
        raise UsageError(
            f"provider {provider!r} takes {wanted.__name__}, not {type(options).__name__}"
        )


class ChosenProvider(BaseModel):
    """A provider by name and its options (``RunConfig``, ``EvalOptions``): options of
    the provider's kind, its defaults when none are given.

    Raises (when made):
        UsageError: an unknown provider, or options of another kind.
    """

    provider: str = "scripted"
    provider_options: ProviderOptions = Field(default_factory=PlanOptions)
    """The variant of ``provider``'s kind (``providers.options``). When none is given,
    the validator below makes the provider's defaults; this default (``scripted``'s,
    the default provider's) is only what a type checker sees."""

    @model_validator(mode="before")
    @classmethod
    def _default_options(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("provider_options") is None:
            provider = data.get("provider", cls.model_fields["provider"].default)
            if isinstance(provider, str):
                return {**data, "provider_options": options_for(provider)}
        return data

    @model_validator(mode="after")
    def _options_of_the_provider(self) -> Self:
        check_options(self.provider, self.provider_options)
        return self


def create_provider(name: str, options: AnyOptions) -> Provider:
    """Build the provider called ``name``.

    Raises:
        UsageError: an unknown name (the message lists the valid ones, test doubles
            left out), a provider not installed in this version, options of another
            kind, or options the provider refuses.
    """
    check_options(name, options)
    factory = _known(name).factory
    if isinstance(factory, str):
        module_name, _, factory_name = factory.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            raise UsageError(f"provider {name!r} is not available in this version") from None
        factory = cast(Factory, getattr(module, factory_name))
    return factory(options)


__all__ = [
    "PROVIDERS",
    "REAL_PROVIDERS",
    "SIMULATED_PROVIDERS",
    "TEST_DOUBLES_ENV",
    "USER_PROVIDERS",
    "ChosenProvider",
    "Entry",
    "Provider",
    "ProviderOptions",
    "check_options",
    "create_provider",
    "is_provider",
    "is_simulated",
    "no_plan_message",
    "options_for",
    "options_kind",
    "real_providers_hint",
    "register_test_double",
    "registered_doubles",
]
