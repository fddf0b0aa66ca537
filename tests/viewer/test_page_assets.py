"""The page's files: nothing inline (the CSP would refuse it), nothing from elsewhere, no
HTML parsing of data, and the page's list of policy codes is the controller's."""

from __future__ import annotations

import re

from sandbox_agent.controller.parse import POLICY_CODES
from sandbox_agent.viewer.page import INDEX_FILE, STATIC_DIR

SCRIPTS = sorted(STATIC_DIR.glob("*.js"))


def test_the_page_has_nothing_inline_and_nothing_from_elsewhere() -> None:
    html = INDEX_FILE.read_text(encoding="utf-8")
    assert re.findall(r"<script\b[^>]*>", html) == ['<script type="module" src="/static/app.js">']
    assert "<style" not in html
    assert " style=" not in html
    assert not re.search(r"\bon[a-z]+=", html), "an inline event handler"
    for path in [INDEX_FILE, STATIC_DIR / "style.css", *SCRIPTS]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), path.name
        assert "@import" not in text, path.name


def test_data_never_becomes_markup() -> None:
    for path in SCRIPTS:
        text = path.read_text(encoding="utf-8")
        for sink in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ):
            assert sink not in text, f"{path.name} uses {sink}"


def test_the_page_knows_the_controllers_policy_codes() -> None:
    text = (STATIC_DIR / "transcript.js").read_text(encoding="utf-8")
    block = re.search(r"export const POLICY_CODES = \[(.*?)\];", text, re.DOTALL)
    assert block
    assert set(re.findall(r'"([a-z_.]+)"', block.group(1))) == set(POLICY_CODES)
