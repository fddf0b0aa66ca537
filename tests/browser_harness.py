"""Headless Chromium for page tests: Debian's ``/usr/bin/chromium`` driven by Playwright,
never a downloaded browser; skipped with a reason without it, a failure under CI."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EXPECT_TIMEOUT_MS = 30_000
"""How long an ``expect(...)`` waits for the page, unless the call says otherwise."""


def require_chromium() -> None:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: 'make browser' installs Debian's chromium"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched browser (``playwright.sync_api.Browser``), closed afterwards."""
    require_chromium()
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        # Playwright's ``expect`` gives up after 5 s: a loaded machine's browser can take
        # longer to show what is already true. A page that never shows it still fails.
        expect.set_options(timeout=EXPECT_TIMEOUT_MS)
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
