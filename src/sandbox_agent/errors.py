"""The one exceptions module. Every error the project raises derives from one root.

Three kinds are kept apart, never caught as one another: loop control, errors the model may
see and recover from, and infrastructure failures that are never shown to the model
as if they were command output::

    SandboxAgentError
    ├── UsageError                 bad input from a user or a file; exit 2, one line on what to do
    │   └── DependencyError        the repository's dependency environment cannot be made
    ├── SetupError                 the host lacks something (Docker, the runner image); exit 2
    ├── LoopControl                ends the agent loop; not a failure of the system
    │   ├── BudgetExhausted        a budget (iterations, tool calls, wall clock, ...) ran out
    │   ├── PolicyAborted          the policy-denial budget ran out
    │   └── RunCancelled           the user or the API cancelled the run
    ├── ToolDenied                 a tool call refused by policy; the model sees code and message
    └── InfrastructureError        our side failed; never shown to the model as output
        ├── WorkspaceError         the private copy could not be made or read safely
        ├── SandboxError           a sandbox run could not be verified or carried out
        │   └── DockerUnavailable  the daemon does not answer
        ├── EvidenceError          a run's recorded evidence does not verify
        └── ModelServerGone        the local model server died during a run
"""

from __future__ import annotations


class SandboxAgentError(Exception):
    """Root of every error raised by sandbox-agent."""


class UsageError(SandboxAgentError):
    """Bad input from the user: the message is one line that says what to do."""


class DependencyError(UsageError):
    """A repository's dependency environment cannot be made (issue 17): one line naming
    the package or the cause, raised before any model turn.

    Attributes:
        kind: ``declaration``, ``no_wheel``, ``conflict``, ``too_large``, ``hash``,
            ``index_unreachable``, ``not_found``, ``timeout`` (``--deps-timeout`` or the
            run's wall clock) or ``tool`` (uv missing or failing).
    """

    MAX_CHARS = 500

    def __init__(self, kind: str, message: str) -> None:
        # One line, bounded, whatever a hostile declaration put in it (SR-12 retest R6).
        line = " ".join(message.split())
        if len(line) > self.MAX_CHARS:
            line = line[: self.MAX_CHARS - 3] + "..."
        super().__init__(line)
        self.kind = kind


class SetupError(SandboxAgentError):
    """The host lacks something the command needs; the message says how to get it."""


class LoopControl(SandboxAgentError):
    """Ends the agent loop. Raised and caught inside the controller only."""


class BudgetExhausted(LoopControl):
    """A budget ran out before the task finished."""

    def __init__(self, budget: str, limit: float) -> None:
        super().__init__(f"budget exhausted: {budget} (limit {limit:g})")
        self.budget = budget
        self.limit = limit


class PolicyAborted(LoopControl):
    """Too many tool calls were denied by policy."""


class RunCancelled(LoopControl):
    """The run was cancelled from outside (a signal or the API)."""


class ToolDenied(SandboxAgentError):
    """A tool call refused by policy. Its code is stable; its message tells the model what to do.

    Attributes:
        code: a stable, dotted denial code such as ``path.outside_workspace``.
        message: one line the model can act on.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class InfrastructureError(SandboxAgentError):
    """Our side failed. Never presented to the model as if it were tool output."""


class WorkspaceError(InfrastructureError):
    """The private workspace could not be created, read or hashed safely."""


class SandboxError(InfrastructureError):
    """A sandbox run could not be verified or carried out."""


class DockerUnavailable(SandboxError):
    """The Docker daemon does not answer."""


class EvidenceError(InfrastructureError):
    """A run's recorded evidence does not verify."""


class ModelServerGone(InfrastructureError):
    """The local model server died during a run.

    Attributes:
        diagnostics: bounded facts for the trace: its pid, log file and last log lines.
    """

    def __init__(self, message: str, *, diagnostics: dict[str, object]) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics
