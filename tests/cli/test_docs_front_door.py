"""The README is a front door (issue 30, item 4) and docs/CLI.md documents every public
command: what a newcomer needs is there, what left the README is findable, and no link
leads nowhere."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from sandbox_agent.cli import COMMANDS, build_parser
from sandbox_agent.settings import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
CLI_DOC = PROJECT_ROOT / "docs" / "CLI.md"
SETUP_DOC = PROJECT_ROOT / "docs" / "SETUP.md"
EXPECT_HEADING = "## A real model: what to expect"
FRONT_DOOR_LINES = 155
"""The README's length without the section of measured numbers another change fills."""


def _without_expectations(text: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(EXPECT_HEADING)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[:start] + lines[end:]


def test_the_readme_is_short_and_keeps_its_placeholder() -> None:
    text = README.read_text(encoding="utf-8")
    assert EXPECT_HEADING in text.splitlines()
    assert len(_without_expectations(text)) <= FRONT_DOOR_LINES


@pytest.mark.parametrize(
    "needed",
    [
        "make demo",
        "make test",  # CI runs the README's test command (.ci/run)
        "make model",
        ".venv/bin/sandbox-agent",
        "uv tool install .",
        "pip install .",
        "--repo",
        "--provider local",
        "--strategy tools",
        "SANDBOX_AGENT_OFFLINE=0",
        "ANTHROPIC_API_KEY",
        "--model",
        "--price-per-mtok-in",
        "--quiet",
        "sandbox-agent view",
        "sandbox-agent verify",
        "sandbox-agent eval",
        "make eval-local",
        "no address but the index (and the file hosts its",
        "declarations parsed as data",
        "<!-- regression-evidence -->",
    ],
)
def test_the_readme_says_what_a_newcomer_needs(needed: str) -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert needed in text


def _cited(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    links = {m for m in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text) if "://" not in m}
    mentioned = set(re.findall(r"(?<![\w/.])docs/[\w/.-]*\w", text))
    return {str((path.parent / link).resolve()) for link in links} | {
        str(PROJECT_ROOT / name) for name in mentioned
    }


@pytest.mark.parametrize("page", [README, CLI_DOC, SETUP_DOC], ids=lambda p: p.name)
def test_every_link_and_docs_path_resolves(page: Path) -> None:
    missing = sorted(name for name in _cited(page) if not Path(name).exists())
    assert missing == []


def test_every_command_is_documented() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"sandbox-agent {name}" in text, name
        assert f"## `{name}`" in text, name


# run, serve and eval have more flags than a page should list (their --help shows each,
# with its default); every other command's flags are all on the page.
LISTED_IN_HELP_ONLY = frozenset({"run", "serve", "eval"})


def test_every_flag_of_the_other_commands_is_documented() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    parser = build_parser()
    missing = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            if name in LISTED_IN_HELP_ONLY:
                continue
            parsers = [sub] + [
                leaf
                for inner in sub._actions
                if isinstance(inner, argparse._SubParsersAction)
                for leaf in inner.choices.values()
            ]
            for each in parsers:
                for option in each._actions:
                    long = [s for s in option.option_strings if s.startswith("--")]
                    if long and long[0] != "--help" and long[0] not in text:
                        missing.append(f"{name} {long[0]}")
    assert missing == []


def test_what_left_the_readme_is_found_in_docs() -> None:
    setup = SETUP_DOC.read_text(encoding="utf-8")
    for moved in ("make test-soak", "| date | commit |", "make bench", "debootstrap"):
        assert moved in setup
    assert "## Where the README's sections went" in setup
    assert "docs/SETUP.md" in README.read_text(encoding="utf-8")
