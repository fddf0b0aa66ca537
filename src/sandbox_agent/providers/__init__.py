"""Providers, chosen by name from one table (name -> "module:factory", imported lazily).

Every factory has the signature ``create(options: ProviderOptions) -> Provider``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from sandbox_agent.errors import UsageError
from sandbox_agent.providers.base import Provider, ProviderOptions

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


def create_provider(name: str, options: ProviderOptions) -> Provider:
    """Build the provider called ``name``.

    Raises:
        UsageError: an unknown name (the message lists the valid ones), a provider not
            installed in this version, or options the provider refuses.
    """
    if name not in PROVIDERS:
        raise UsageError(f"unknown provider {name!r}; choose one of: {', '.join(PROVIDERS)}")
    module_name, _, factory_name = PROVIDERS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        raise UsageError(f"provider {name!r} is not available in this version") from None
    factory = cast(Callable[[ProviderOptions], Provider], getattr(module, factory_name))
    return factory(options)


__all__ = ["PROVIDERS", "SIMULATED_PROVIDERS", "Provider", "ProviderOptions", "create_provider"]
