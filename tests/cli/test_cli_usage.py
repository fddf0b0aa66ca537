"""The command line's own rules: one table of commands, usage errors are one line and exit 2."""

from __future__ import annotations

import subprocess
import sys

from sandbox_agent.cli import COMMANDS, build_parser


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
