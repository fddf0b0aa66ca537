"""Shared by the real-provider tests: fake keys, the paginator run pointed at a fake
server, and closing the providers a test opened.

A module of its own (not ``conftest``): ``from conftest import ...`` resolves to whichever
test folder's conftest was imported first, which depends on what pytest collects.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sandbox_agent.controller import Budgets, RunConfig
from sandbox_agent.providers.base import Provider
from sandbox_agent.providers.options import OpenAIOptions, ProviderOptions

# Key-shaped, so that a leak would look like the real thing in any text it reached.
FAKE_ANTHROPIC_KEY = "sk-ant-api03-" + "Zq7" * 14 + "-AAAA"
FAKE_OPENAI_KEY = "sk-proj-" + "Xv9" * 16

OPENED: list[Provider] = []


def opened(provider: Provider) -> Provider:
    """Keep ``provider`` to be closed after the test (its SDK client holds sockets)."""
    OPENED.append(provider)
    return provider


def openai_options(base_url: str, ledger: Path, **more: Any) -> OpenAIOptions:
    """The ``openai`` provider at ``base_url`` (a fake server's ``/v1``), booking in ``ledger``."""
    return OpenAIOptions(model="gpt-4o-mini", base_url=base_url, ledger_path=str(ledger), **more)


def paginator_run(
    options: ProviderOptions, tmp_path: Path, *, provider: str = "openai", **budgets: float
) -> RunConfig:
    """The paginator fixture's task with ``provider`` and its ``options``; traces under
    ``tmp_path/runs``; ``budgets`` as ``Budgets`` fields (the defaults otherwise)."""
    return RunConfig(
        task="Page numbers start at 1; fix the paginator.",
        fixture="paginator",
        provider=provider,
        provider_options=options,
        budgets=Budgets(**budgets),
        trace_dir=tmp_path / "runs",
    )
