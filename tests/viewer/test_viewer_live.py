"""A run on disk that is still going (no result yet) grows in ``view`` as its trace grows,
under a visible state, and says when it has finished."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from viewer_harness import ViewServer, result_dict, screenshot, write_run

from browser_harness import chromium
from sandbox_agent.viewer.settings import ViewSettings

pytestmark = pytest.mark.browser

EVENTS: list[dict[str, Any]] = [
    {"event": "run_started", "time": "2026-12-01T10:00:00.000Z", "task": "fix it", "seq": 0},
    {"event": "model_turn", "iteration": 1, "reply": '{"tool": "list_files", "args": {}}'},
    {"event": "tool_call", "tool": "list_files", "arguments": {"path": ""}, "ok": True},
]
MORE: list[dict[str, Any]] = [
    {"event": "model_turn", "iteration": 2, "reply": '{"tool": "finish", "args": {}}'},
    {"event": "tool_call", "tool": "finish", "arguments": {"summary": "done"}, "ok": True},
    {"event": "run_finished", "status": "FAILED", "reason": "the final tests fail"},
]


def test_a_run_in_progress_grows_as_its_trace_grows(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    run = write_run(tmp_path / "going", EVENTS, None)
    with ViewServer(ViewSettings(root=tmp_path)) as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"{server.url}/#/runs/{quote('going', safe='')}")
        turns = page.locator("#transcript > li.item-turn")
        expect(turns).to_have_count(1, timeout=20_000)
        expect(page.locator("#live-state")).to_contain_text("no result yet")
        expect(page.locator("#run-reason")).to_contain_text("still going")
        expect(page.locator("#seal")).to_contain_text("not sealed yet")
        screenshot(page, "run-in-progress")
        with (run / "trace.jsonl").open("a", encoding="utf-8") as trace:
            trace.writelines(json.dumps(event) + "\n" for event in MORE)
        (run / "result.json").write_text(json.dumps(result_dict()), encoding="utf-8")
        expect(turns).to_have_count(2, timeout=20_000)
        expect(page.locator("#live-state")).to_have_text("finished: FAILED", timeout=20_000)
        expect(page.locator("#run-status")).to_have_text("FAILED")
        expect(page.locator("#transcript > li.item-end")).to_have_count(1)
        # Ended without a seal (written by hand here): said, never taken for verified.
        expect(page.locator("#seal .seal-headline")).to_contain_text("NOT VERIFIED")
