"""The web page in headless Chromium (Debian's, driven by Playwright; never a downloaded one):
submit a run through the page, watch it finish, and read its view."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from service_harness import TOKEN, LiveServer

from sandbox_agent.service.fake_run import FakeRunFunction
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.settings import PROJECT_ROOT

pytestmark = pytest.mark.browser

SCREENSHOT = PROJECT_ROOT / "artifacts" / "service-run-view.png"


def test_submit_watch_and_inspect_a_run_in_the_page(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    browser_page: object,
) -> None:
    from playwright.sync_api import Page, expect

    page: Page = browser_page  # type: ignore[assignment]
    server = start_server(make_settings(), FakeRunFunction(seconds=1.5))
    problems: list[str] = []
    page.on("console", lambda message: message.type == "error" and problems.append(message.text))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("dialog", lambda dialog: problems.append(f"dialog: {dialog.message}"))

    page.goto(server.url + "/")
    expect(page.locator("#login")).to_be_visible()
    page.fill("#token-input", "wrong-token-0123456789")
    page.click("#login button")
    expect(page.locator("#login-error")).to_contain_text("refused")

    page.fill("#token-input", TOKEN)
    page.click("#login button")
    expect(page.locator("#fixture option")).to_have_count(2)
    page.select_option("#fixture", "paginator")
    page.fill("#task", "fix the page count <b>bold?</b>")
    page.click("#submit-button")

    expect(page.locator("#run-view")).to_be_visible()
    expect(page.locator("#events li").first).to_be_visible(timeout=10_000)
    expect(page.locator("#run-status")).to_have_text("SUCCEEDED", timeout=15_000)
    expect(page.locator("#run-reason")).to_have_text("final tests passed")

    timeline = page.locator("#timeline li")
    expect(timeline).to_have_count(5)
    denied = page.locator("#timeline li.denied")
    expect(denied).to_have_count(1)
    expect(denied).to_contain_text("DENIED: path.protected")
    evidence = page.locator("#evidence tbody tr")
    expect(evidence).to_have_count(1)
    expect(evidence).to_contain_text("completed")
    expect(evidence.locator("td").nth(2)).to_have_text("true")
    expect(evidence.locator("td").nth(3)).to_have_text("runc")
    expect(page.locator("#diff .add")).to_have_text("+    return -(-total // size)\n")
    expect(page.locator("#diff .del")).to_have_text("-    return total // size\n")
    expect(page.locator("#run-facts")).to_contain_text("intact")
    # model output and the task are shown as text, never run as markup
    expect(page.locator("#run-facts")).to_contain_text('<img src=x onerror="window.__xss=1">')
    expect(page.locator("#run-facts")).to_contain_text("<b>bold?</b>")
    assert page.evaluate("window.__xss") is None
    assert page.locator("#run-facts img, #run-facts script, #run-facts b").count() == 0

    row = page.locator("#runs tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("SUCCEEDED")
    expect(row).to_contain_text("paginator")
    expect(row).to_contain_text("1 denials")

    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert problems == [x for x in problems if "401" in x], problems
