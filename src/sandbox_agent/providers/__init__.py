"""Providers, chosen by name from one table (name -> "module:factory", imported lazily).

Every factory has the signature ``create(options: ProviderOptions) -> Provider``.

Three kinds of provider share the table: real models (``REAL_PROVIDERS``), simulated ones
a user may run on purpose (``scripted`` replays a plan, ``injection`` and
``mock-adversarial`` attack the policy), and test doubles (``TEST_DOUBLES``), which work
when named but are never listed to a user.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from sandbox_agent.errors import UsageError
from sandbox_agent.providers.base import Provider, ProviderOptions
from sandbox_agent.providers.gate import KEY_ENV, OFFLINE_ENV

PROVIDERS: dict[str, str] = {
    "scripted": "sandbox_agent.providers.scripted:create",
    "scripted-slow": "sandbox_agent.providers.slow:create",
    "injection": "sandbox_agent.providers.injection:create",
    "mock-adversarial": "sandbox_agent.providers.adversarial:create",
    "anthropic": "sandbox_agent.providers.anthropic:create",
    "openai": "sandbox_agent.providers.openai_compat:create",
    "local": "sandbox_agent.providers.local:create",
}
SIMULATED_PROVIDERS = frozenset({"scripted", "scripted-slow", "injection", "mock-adversarial"})
TEST_DOUBLES = frozenset({"scripted-slow"})
"""Providers for the project's own tests and benchmarks: they run when named, and no
message or help lists them."""
REAL_PROVIDERS: dict[str, str] = {
    "local": "after 'make model' (no key, no network, no spend)",
    "anthropic": f"with {OFFLINE_ENV}=0 and {KEY_ENV['anthropic']} in the environment "
    "and --model NAME",
    "openai": f"with {OFFLINE_ENV}=0 and {KEY_ENV['openai']} in the environment "
    "and --model NAME (--base-url for any OpenAI-compatible server)",
}
"""Each real model's provider name, and how to turn it on (docs/MODELS.md)."""
USER_PROVIDERS: tuple[str, ...] = (
    *(name for name in PROVIDERS if name in SIMULATED_PROVIDERS and name not in TEST_DOUBLES),
    *REAL_PROVIDERS,
)
"""The providers a user is shown, simulated first (``scripted`` is the default)."""


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


def create_provider(name: str, options: ProviderOptions) -> Provider:
    """Build the provider called ``name``.

    Raises:
        UsageError: an unknown name (the message lists the valid ones, test doubles
            left out), a provider not installed in this version, or options the provider
            refuses.
    """
    if name not in PROVIDERS:
        simulated = [p for p in USER_PROVIDERS if p in SIMULATED_PROVIDERS]
        raise UsageError(
            f"unknown provider {name!r}; choose one of: {', '.join(simulated)} (simulated, "
            f"no model) or {', '.join(REAL_PROVIDERS)} (real models: {real_providers_hint()})"
        )
    module_name, _, factory_name = PROVIDERS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        raise UsageError(f"provider {name!r} is not available in this version") from None
    factory = cast(Callable[[ProviderOptions], Provider], getattr(module, factory_name))
    return factory(options)


__all__ = [
    "PROVIDERS",
    "REAL_PROVIDERS",
    "SIMULATED_PROVIDERS",
    "TEST_DOUBLES",
    "USER_PROVIDERS",
    "Provider",
    "ProviderOptions",
    "create_provider",
    "no_plan_message",
    "real_providers_hint",
]
