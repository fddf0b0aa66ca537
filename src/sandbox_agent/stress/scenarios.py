"""The workloads of a stress run, and what each may legitimately end as.

Each scenario is one argv for the runner image's ``python3`` (there is no shell), the
limits it runs under, an optional outside action (cancel, a signal to PID 1, a kill of
the container) and the set of sandbox statuses that are acceptable for it. A status
outside that set is an unexpected outcome; ``completed`` without a valid attestation and
a matching exit report is an unverified completion, whatever the scenario.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from sandbox_agent.sandbox.base import SandboxLimits, SandboxStatus

PYTHON = "/usr/bin/python3"
FLOOD_BUDGET_BYTES = 256 * 1024
BINARY_PAYLOAD = bytes(range(256)) * 16
"""4 KiB of every byte value, no trailing newline."""
SHORT_TIMEOUT_S = 1.0
"""The timeout scenario's limit; its workload sleeps far longer."""
RUN_TIMEOUT_S = 20.0
"""Every other scenario's limit: generous, so CPU load alone never turns them into timeouts."""
CANCEL_WINDOW_S = (0.05, 0.6)
"""Cancellation lands at a random point of this window after the run begins."""
KILL_WINDOW_S = (0.05, 0.5)
"""An outside kill lands at a random point of this window after the container is seen."""

Action = Literal["none", "cancel", "signal_pid1", "kill_host_pid", "kill_container"]


class Scenario(NamedTuple):
    name: str
    code: str
    """The ``python3 -c`` program."""
    acceptable: frozenset[SandboxStatus]
    action: Action = "none"
    limits: SandboxLimits = SandboxLimits(timeout_s=RUN_TIMEOUT_S)
    expected_exit: int | None = None
    """When set, a ``completed`` run must report this exit code."""
    expected_output: bytes | None = None
    """When set, a ``completed`` run must relay exactly these bytes."""
    unacted: frozenset[SandboxStatus] = frozenset()
    """Also acceptable when the outside action never landed (a harness miss, not the sandbox)."""


_SLEEP = "import time; time.sleep(1.0)"
_SLEEP_LONG = "import time; time.sleep(30)"
_ENDED_BY_OUTSIDE: frozenset[SandboxStatus] = frozenset({"killed", "refused"})

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("rapid_exit", "pass", frozenset({"completed"}), expected_exit=0),
    Scenario("exit_code", "import sys; sys.exit(7)", frozenset({"completed"}), expected_exit=7),
    Scenario(
        "binary_output",
        "import os; os.write(1, bytes(range(256)) * 16)",
        frozenset({"completed"}),
        expected_exit=0,
        expected_output=BINARY_PAYLOAD,
    ),
    Scenario(
        "unterminated_output",
        "import os; os.write(1, b'no newline at the end'); os.write(2, b'\\xff\\xfe')",
        frozenset({"completed"}),
        expected_exit=0,
        expected_output=b"no newline at the end\xff\xfe",
    ),
    Scenario(
        "flood",
        "import os\nwhile True: os.write(1, b'x' * 65536)",
        frozenset({"output_limit"}),
        limits=SandboxLimits(timeout_s=RUN_TIMEOUT_S, output_budget_bytes=FLOOD_BUDGET_BYTES),
    ),
    Scenario(
        "timeout",
        _SLEEP_LONG,
        frozenset({"timeout"}),
        limits=SandboxLimits(timeout_s=SHORT_TIMEOUT_S),
    ),
    Scenario("cancel", _SLEEP_LONG, frozenset({"cancelled"}), action="cancel"),
    # PID 1 installs no handlers, so a SIGTERM from outside is dropped under runc; under
    # gVisor it may kill PID 1. Either way the run must never pass as completed unverified.
    Scenario(
        "sigterm_pid1",
        _SLEEP,
        frozenset({"completed", *_ENDED_BY_OUTSIDE}),
        action="signal_pid1",
        expected_exit=0,
    ),
    Scenario(
        "kill_host_pid",
        _SLEEP_LONG,
        _ENDED_BY_OUTSIDE,
        action="kill_host_pid",
        unacted=frozenset({"timeout"}),
    ),
    Scenario(
        "kill_container",
        _SLEEP_LONG,
        _ENDED_BY_OUTSIDE,
        action="kill_container",
        unacted=frozenset({"timeout"}),
    ),
)
SCENARIO_NAMES = tuple(scenario.name for scenario in SCENARIOS)
