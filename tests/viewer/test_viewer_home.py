"""The page's home over what ``view`` was given (issue 30): a single run folder opens that
run and a results folder its evaluation, even from the bare URL, never a list of one;
a folder of runs lists them, newest first. Runs written by hand, in headless Chromium;
no Docker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from viewer_harness import ViewServer, result_dict, write_run

from browser_harness import chromium
from sandbox_agent.viewer.settings import ViewSettings

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _run(folder: Path, day: str, run_id: str) -> Path:
    started = {"event": "run_started", "time": f"2026-12-{day}T10:00:00.000Z", "task": "Fix it"}
    return write_run(folder, [started], result_dict(run_id=run_id))


def _open(root: Path, hash_part: str = "") -> Iterator[tuple[Any, Any]]:
    from playwright.sync_api import expect

    with ViewServer(ViewSettings(root=root)) as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"{server.url}/{hash_part}")
        expect(page.locator("body[data-ready='true']")).to_be_attached()
        yield page, expect
        assert problems == []


def test_the_bare_url_of_a_run_folder_opens_the_run(tmp_path: Path) -> None:
    run = _run(tmp_path / "20261201T100000Z-one", "01", "the-only-run")
    for page, expect in _open(run):
        expect(page.locator("#run-view")).to_be_visible()
        expect(page.locator("#run-id")).to_have_text("the-only-run")
        assert page.evaluate("location.hash") == "#/runs/."
        expect(page.locator("#home")).to_be_hidden()


def test_the_bare_url_of_a_results_folder_opens_the_evaluation(tmp_path: Path) -> None:
    results = tmp_path / "20261201T100000Z"
    (results / "traces").mkdir(parents=True)
    report = json.loads((Path(__file__).parent / "data" / "report.json").read_text())
    (results / "report.json").write_text(json.dumps(report))
    for page, expect in _open(results):
        expect(page.locator("#eval-view")).to_be_visible()
        assert page.evaluate("location.hash") == "#/evals/."


def test_a_folder_of_runs_lists_them_newest_first(tmp_path: Path) -> None:
    _run(tmp_path / "20261201T100000Z-old", "01", "older-run")
    _run(tmp_path / "20261202T100000Z-new", "02", "newer-run")
    for page, expect in _open(tmp_path):
        links = page.locator("#runs a.run-link")
        expect(links).to_have_count(2)
        assert links.all_inner_texts() == ["newer-run", "older-run"]
        assert page.evaluate("location.hash") == ""
