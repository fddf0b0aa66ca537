"""Fixtures for the real providers, driven through their SDKs against a loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_model_servers import FakeModelServer
from real_provider_support import FAKE_ANTHROPIC_KEY, FAKE_OPENAI_KEY, OPENED


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as fake:
        yield fake


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The gate opened (offline off, both keys in the environment); returns a ledger path."""
    monkeypatch.setenv("SANDBOX_AGENT_OFFLINE", "0")
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_OPENAI_KEY)
    for name in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return tmp_path / "ledger.sqlite3"


@pytest.fixture(autouse=True)
def _close_opened_providers() -> Iterator[None]:
    yield
    while OPENED:
        OPENED.pop().close()
