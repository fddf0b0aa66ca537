"""The run page shows what failed and what the tests said (issue 30): a provider error
({kind, http_status, type, message}), its retries, a request stopped by a cancel, and
the failing tests' output (``final_tests.output_tail``). A run written by hand, in
headless Chromium; no Docker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from viewer_harness import ViewServer, result_dict, screenshot, write_run

from browser_harness import chromium
from sandbox_agent.viewer.settings import ViewSettings

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UNAUTHORISED = {
    "kind": "http_status",
    "http_status": 401,
    "type": "authentication_error",
    "message": "invalid x-api-key (check OPENAI_API_KEY)",
}
BUSY = {"kind": "http_status", "http_status": 500, "type": "server_error", "message": "busy"}
TAIL = "FAIL: test_first_page (tests.test_core.PageTest)\n<b>not bold</b>\nAssertionError: 10 != 0"
EVENTS: list[dict[str, Any] | str] = [
    {"event": "run_started", "time": "2026-12-01T10:00:00.000Z", "task": "Fix it",
     "provider": "openai", "source": "paginator"},
    {"event": "provider_retry", "attempt": 1, "retries": 4, "wait_seconds": 1.2,
     "provider_error": BUSY},
    {"event": "provider_error", "error": {"type": "ProviderFailed", "message_chars": 90},
     "provider_error": UNAUTHORISED},
    {"event": "request_stopped", "why": "cancelled", "message": "the request was stopped"},
    {"event": "final_tests", "passed": False, "tests_run": 3, "failures": 1,
     "status": "completed"},
    {"event": "run_finished", "status": "FAILED", "reason": "the provider failed"},
]  # fmt: skip


@pytest.fixture
def page(tmp_path: Path) -> Iterator[tuple[Any, str]]:
    result = result_dict(
        reason="the provider failed: HTTP 401 authentication_error: invalid x-api-key",
        provider_error=UNAUTHORISED,
        final_tests={"passed": False, "tests_run": 3, "failures": 1, "status": "completed",
                     "output_tail": TAIL},
    )  # fmt: skip
    write_run(tmp_path / "failed", EVENTS, result)
    with ViewServer(ViewSettings(root=tmp_path)) as server, chromium() as browser:
        opened = browser.new_page(viewport={"width": 1200, "height": 900})
        problems: list[str] = []
        opened.on("pageerror", lambda error: problems.append(str(error)))
        opened.goto(f"{server.url}/#/runs/{quote('failed', safe='')}")
        yield opened, server.url
        assert problems == []


def test_the_provider_error_its_retry_and_the_stopped_request_are_shown(
    page: tuple[Any, str],
) -> None:
    from playwright.sync_api import expect

    opened, _ = page
    facts = opened.locator("#verdict-facts")
    expect(facts).to_contain_text(
        "HTTP 401 authentication_error: invalid x-api-key (check OPENAI_API_KEY)"
    )
    transcript = opened.locator("#transcript")
    expect(transcript).to_contain_text(
        "The model provider failed: HTTP 401 authentication_error: invalid x-api-key"
    )
    expect(transcript).to_contain_text("HTTP 500 server_error: busy (retry 1 of 4, after 1.2 s)")
    expect(transcript).to_contain_text("the run was cancelled); it is not a provider failure")
    expect(transcript).not_to_contain_text("not kept in the trace")


def test_the_failing_tests_output_is_shown_as_text(page: tuple[Any, str]) -> None:
    from playwright.sync_api import expect

    opened, _ = page
    output = opened.locator("#verdict-facts details.test-output")
    expect(output).to_have_attribute("open", "")  # the tests failed: shown at once
    expect(output.locator("pre")).to_have_text(TAIL)  # as text: no <b> made bold
    expect(output.locator("b")).to_have_count(0)
    screenshot(opened, "run-provider-error-and-test-output", full_page=True)
