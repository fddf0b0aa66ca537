"""The command allowlist: a runner name maps to one fixed argv; the model picks only a selector.

The argv starts the trusted runner wrapper (docs/SANDBOX_PROTOCOL.md), which writes
the structured report on fd 3; ``-I`` keeps a ``sandbox_supervisor`` folder in the
repository from shadowing it. pytest runs with plugin autoload disabled and, through
the wrapper's ``-p no:cacheprovider``, no cache writes.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied
from sandbox_supervisor.launch import RUNNER_ARGV
from sandbox_supervisor.run_tests import COLLECT_ONLY
from sandbox_supervisor.spectrum import SPECTRUM_ARG

RunnerName = Literal["unittest", "pytest"]
RUNNER_NAMES: tuple[RunnerName, ...] = ("unittest", "pytest")

WRAPPER_ARGV: tuple[str, ...] = RUNNER_ARGV
"""PID 1 recognises exactly this prefix and runs the wrapper in its forked interpreter."""

COMMAND_ALLOWLIST: dict[str, tuple[str, ...]] = {
    "unittest": (*WRAPPER_ARGV, "unittest"),
    "pytest": (*WRAPPER_ARGV, "pytest"),
}
"""Runner name -> fixed argv (the selector, when given, is the one extra element)."""

RUNNER_ENV: dict[str, dict[str, str]] = {
    "unittest": {},
    "pytest": {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
}
"""Runner name -> extra workload environment."""

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
UNITTEST_SELECTOR = re.compile(rf"{_IDENT}(?:\.{_IDENT})*")
PYTEST_SELECTOR = re.compile(rf"(?:{_IDENT}/)*{_IDENT}\.py(?:::{_IDENT}(?:::{_IDENT})?)?")
"""``path/to/test_x.py[::Name[::name]]``: no ``..``, no absolute path, no option."""
SELECTORS: dict[str, re.Pattern[str]] = {"unittest": UNITTEST_SELECTOR, "pytest": PYTEST_SELECTOR}
SELECTOR_EXAMPLES = {
    "unittest": "tests.test_core.TestPage.test_first",
    "pytest": "tests/test_core.py::test_first",
}


class RunnerCommand(NamedTuple):
    """What one ``run_tests`` call runs: argv and the workload's extra environment."""

    argv: tuple[str, ...]
    workload_env: dict[str, str]


def runner_command(runner: str, selector: str | None = None) -> RunnerCommand:
    """The allowlisted command for ``runner``, with a validated ``selector`` appended.

    Raises:
        ToolDenied: ``command.not_allowlisted`` for an unknown runner,
            ``command.bad_selector`` for a selector its pattern does not match.
    """
    if runner not in COMMAND_ALLOWLIST:
        raise ToolDenied(
            denials.COMMAND_NOT_ALLOWLISTED,
            f"runner '{runner}' is not allowlisted; allowed: {', '.join(RUNNER_NAMES)}",
        )
    argv = COMMAND_ALLOWLIST[runner]
    if selector is not None and selector != "":
        if not SELECTORS[runner].fullmatch(selector):
            raise ToolDenied(
                denials.COMMAND_BAD_SELECTOR,
                f"selector must look like '{SELECTOR_EXAMPLES[runner]}' for {runner}; "
                "or omit it to run every test",
            )
        argv = (*argv, selector)
    return RunnerCommand(argv, dict(RUNNER_ENV[runner]))


def collect_command(runner: str) -> RunnerCommand:
    """The allowlisted runner in collect-only mode: the baseline of the original's test ids
    (SR-8 C8-1). Never a model's choice: the controller runs it itself.

    Raises:
        ToolDenied: ``command.not_allowlisted`` for an unknown runner.
    """
    command = runner_command(runner)
    return RunnerCommand((*command.argv, COLLECT_ONLY), command.workload_env)


def spectrum_command(runner: str) -> RunnerCommand:
    """The allowlisted runner over the whole suite, also printing which functions the
    failing tests ran (``sandbox_supervisor.spectrum``): the repair strategy's
    localisation hint. Never a model's choice: the controller runs it itself.

    Raises:
        ToolDenied: ``command.not_allowlisted`` for an unknown runner.
    """
    command = runner_command(runner)
    return RunnerCommand((*command.argv, SPECTRUM_ARG), command.workload_env)
