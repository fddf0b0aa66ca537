"""Policy: protected paths, the tool and command allowlists.

The denial codes every layer refuses with are ``sandbox_agent.denials``, below this one.
"""

from sandbox_agent.policy.commands import (
    COMMAND_ALLOWLIST,
    RUNNER_NAMES,
    RunnerCommand,
    RunnerName,
    collect_command,
    runner_command,
    spectrum_command,
)
from sandbox_agent.policy.policy import Policy
from sandbox_agent.policy.protected import protected_reason
from sandbox_agent.policy.runner_detect import detect_runner

__all__ = [
    "COMMAND_ALLOWLIST",
    "RUNNER_NAMES",
    "Policy",
    "RunnerCommand",
    "RunnerName",
    "collect_command",
    "detect_runner",
    "protected_reason",
    "runner_command",
    "spectrum_command",
]
