"""Policy: protected paths, tool and command allowlists, denial codes.

Import order matters: ``denials`` has no dependencies, so the workspace layer can use it.
"""

from sandbox_agent.policy import denials
from sandbox_agent.policy.commands import (
    COMMAND_ALLOWLIST,
    RUNNER_NAMES,
    RunnerCommand,
    RunnerName,
    collect_command,
    runner_command,
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
    "denials",
    "detect_runner",
    "protected_reason",
    "runner_command",
]
