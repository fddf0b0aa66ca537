"""The command line's own rules: one table of commands, usage errors are one line and exit 2."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_agent.cli import COMMANDS, EXIT_BROKEN_PIPE, build_parser


def test_every_contract_command_is_in_the_table() -> None:
    contract = {"run", "fixtures", "preflight", "eval", "serve", "stress", "verify", "reap"}
    assert contract <= set(COMMANDS)


def test_parser_builds_with_every_command() -> None:
    parser = build_parser()
    assert parser.prog == "sandbox-agent"


def test_unknown_command_is_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "no-such-command"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "--help" in done.stderr


def _heavy_imported_by(argv: list[str]) -> list[str]:
    code = (
        "import sys\nfrom sandbox_agent.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "heavy = {'pydantic', 'docker', 'fastapi', 'uvicorn', 'cryptography', 'httpx'}\n"
        "print('HEAVY:', *sorted({m.split('.')[0] for m in sys.modules} & heavy), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line = next(line for line in done.stderr.splitlines() if line.startswith("HEAVY:"))
    return line.split()[1:]


def test_the_top_level_help_imports_no_command() -> None:
    # It used to build every command's flags (eval, serve...): over a second of imports.
    assert _heavy_imported_by(["--help"]) == []
    assert _heavy_imported_by(["no-such-command"]) == []


def test_one_commands_help_pays_only_for_its_own_flags() -> None:
    assert _heavy_imported_by(["run", "--help"]) == ["pydantic"]  # the limits' defaults


def _closed_pipe_run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` with its standard output a pipe whose reader is already gone (``| head``)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "sandbox_agent", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("size", ["small", "large"])
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path, size: str) -> None:
    # `verify --json RUN_DIR | head` ended in a BrokenPipeError traceback (issue 30).
    # Small output breaks at the exit's flush, large output in the print itself.
    folder = tmp_path / ("x" * 200 if size == "large" else "run")
    folder.mkdir()
    argv = ["verify", "--json", str(folder)] if size == "small" else ["fixtures", "--json"]
    done = _closed_pipe_run(argv)
    assert "Traceback" not in done.stderr
    assert "Exception ignored" not in done.stderr
    assert done.returncode == EXIT_BROKEN_PIPE


# The commands whose flags live in modules this CLI does not own (run, serve and eval;
# issue 30, item 10): their help is checked by their owners' tests.
ELSEWHERE = frozenset({"run", "serve", "eval"})


def _command_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser but ``ELSEWHERE``'s, sub-actions (``cluster up``) included."""

    def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return {
            name: sub
            for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()
        }

    found: dict[str, argparse.ArgumentParser] = {}
    for name, sub in subparsers(build_parser()).items():
        if name in ELSEWHERE:
            continue
        found[name] = sub
        found.update({f"{name} {leaf}": inner for leaf, inner in subparsers(sub).items()})
    return found


def test_no_help_cites_a_file_that_is_not_in_the_repository() -> None:
    texts = [build_parser().format_help()]
    texts += [sub.format_help() for sub in _command_parsers().values()]
    text = " ".join(" ".join(texts).split())
    cited = set(re.findall(r"\b(?:docs/)?[A-Z][A-Z_]+\.md\b", text))
    root = Path(__file__).resolve().parents[2]
    missing = sorted(
        name
        for name in cited
        if not (root / name).is_file() and not (root / "docs" / name).is_file()
    )
    assert missing == [], f"help cites files that are not in the repository: {missing}"


def _default_shown(action: argparse.Action) -> bool:
    text = action.help or ""
    default = action.default
    if action.help == argparse.SUPPRESS or not action.option_strings:
        return True
    if isinstance(action, argparse._StoreTrueAction | argparse._HelpAction):
        return True
    if default is None:
        # No value means "not given": the help must say what happens then, or that it
        # must be given.
        return "default" in text or "required" in text
    return "default" in text or str(default) in text


def test_every_option_of_these_commands_shows_its_default() -> None:
    lacking = [
        f"{name} {action.option_strings[0]}"
        for name, sub in _command_parsers().items()
        for action in sub._actions
        if not _default_shown(action)
    ]
    assert lacking == []


def test_the_real_model_flags_show_the_meters_defaults() -> None:
    from sandbox_agent.commands import realmodel
    from sandbox_agent.providers import options
    from sandbox_agent.providers.options import (
        DEFAULT_REQUEST_TIMEOUT_SECONDS,
        LOCAL_REQUEST_TIMEOUT_SECONDS,
    )

    assert realmodel.DEFAULT_MAX_COST_USD == options.DEFAULT_MAX_COST_USD
    assert realmodel.DEFAULT_EXPERIMENT_BUDGET_USD == options.DEFAULT_EXPERIMENT_BUDGET_USD
    assert realmodel.DEFAULT_MAX_CALLS == options.DEFAULT_MAX_CALLS
    assert realmodel.DEFAULT_MAX_TOKENS == options.DEFAULT_MAX_TOKENS
    assert options.OpenAIOptions().experiment == realmodel.DEFAULT_EXPERIMENT
    assert options.LocalOptions().experiment == realmodel.DEFAULT_EXPERIMENT
    parser = argparse.ArgumentParser()
    realmodel.add_real_model_arguments(parser)
    timeout = next(a for a in parser._actions if a.dest == "request_timeout")
    assert f"default {DEFAULT_REQUEST_TIMEOUT_SECONDS:g} s" in (timeout.help or "")
    assert f"local {LOCAL_REQUEST_TIMEOUT_SECONDS:g} s" in (timeout.help or "")
    for action in parser._actions:
        if action.option_strings and action.dest != "help":
            assert "default" in (action.help or "") or "required" in (action.help or ""), action


def _every_parser() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser and every sub-action's (``cluster up``, ...), none left out."""
    found: dict[str, argparse.ArgumentParser] = {}
    waiting = [("sandbox-agent", build_parser())]
    while waiting:
        prog, parser = waiting.pop()
        found[prog] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                waiting += [(f"{prog} {name}", sub) for name, sub in action.choices.items()]
    return found


def _help_problem(action: argparse.Action) -> str | None:
    """What an argument's ``--help`` line lacks: any help, or the default it has."""
    if action.help == argparse.SUPPRESS or isinstance(
        action, argparse._HelpAction | argparse._SubParsersAction
    ):
        return None
    text = action.help or ""
    if not text.strip():
        return "no help"
    default = action.default
    if default is None or default is False or default == argparse.SUPPRESS:
        return None  # nothing given means nothing, or the help says what happens
    if "(default" in text or "%(default)s" in text:
        return None
    return f"default {default!r} not shown"


def test_every_argument_of_every_command_has_help_showing_its_default() -> None:
    # Issue 30: run's --runtime and --runner had no help, eval's --provider and view's
    # limits did not say their values were defaults, model's action had no help.
    lacking = [
        f"{prog} {(action.option_strings or [action.dest])[0]}: {problem}"
        for prog, parser in _every_parser().items()
        for action in parser._actions
        if (problem := _help_problem(action)) is not None
    ]
    assert lacking == []
    assert {"sandbox-agent run", "sandbox-agent eval", "sandbox-agent serve"} <= set(
        _every_parser()
    )


def test_the_repair_flags_reach_the_repair_options_of_run_and_eval() -> None:
    from sandbox_agent.commands.strategy import repair_options_from

    for command in ("run", "eval"):
        parser = build_parser(command)
        extra = ["--task", "t", "--fixture", "paginator"] if command == "run" else []
        args = parser.parse_args([command, *extra, "--focus", "rotate", "--candidates", "3"])
        options = repair_options_from(args)
        assert (options.focus, options.candidates) == ("rotate", 3)
        assert repair_options_from(parser.parse_args([command, *extra])).focus == "off"
