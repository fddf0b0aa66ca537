"""Shared by the real-provider tests: fake keys, and closing the providers a test opened.

A module of its own (not ``conftest``): ``from conftest import ...`` resolves to whichever
test folder's conftest was imported first, which depends on what pytest collects.
"""

from __future__ import annotations

from sandbox_agent.providers.base import Provider

# Key-shaped, so that a leak would look like the real thing in any text it reached.
FAKE_ANTHROPIC_KEY = "sk-ant-api03-" + "Zq7" * 14 + "-AAAA"
FAKE_OPENAI_KEY = "sk-proj-" + "Xv9" * 16

OPENED: list[Provider] = []


def opened(provider: Provider) -> Provider:
    """Keep ``provider`` to be closed after the test (its SDK client holds sockets)."""
    OPENED.append(provider)
    return provider
