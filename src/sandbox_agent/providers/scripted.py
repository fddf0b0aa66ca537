"""``scripted``: replays a plan file, one step per turn (default: the reference plan).

In the ``tools`` strategy turn N is the request with N past exchanges; in ``text`` mode
(the ``repair`` strategy asks for candidates, several from one prompt) it is the Nth
text request, so a plan lists exactly the candidates a test expects, in order.
"""

from __future__ import annotations

from sandbox_agent.errors import UsageError
from sandbox_agent.providers.base import ModelReply, ModelRequest, Provider
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.providers.plan import Plan, load_plan


def plan_from_options(options: PlanOptions) -> Plan:
    """The ``--plan`` file, else the fixture's reference plan.

    Raises:
        UsageError: neither is there, or the file is not a valid plan.
    """
    path = options.plan_path or options.reference_plan_path
    if path is None:
        # The default provider: a user who named none learns which real models there are.
        from sandbox_agent.providers import no_plan_message

        raise UsageError(no_plan_message())
    return load_plan(path)


class ScriptedProvider:
    """Turn N is step N of the plan; past the end it finishes with "plan exhausted"."""

    name = "scripted"

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.text_requests = 0

    def close(self) -> None:
        """Nothing to release: no connection is held."""

    def complete(self, request: ModelRequest) -> ModelReply:
        if request.mode == "text":
            self.text_requests += 1
            return ModelReply(text=self.plan.turn(self.text_requests - 1), model=self.name)
        return ModelReply(text=self.plan.turn(len(request.history)), model=self.name)

    def planned_test_runs(self) -> int:
        """Whole-suite ``run_tests`` steps of the plan (raw steps are not parsed here)."""
        return self.plan.whole_suite_test_runs()


def create(options: PlanOptions) -> Provider:
    """Factory of the provider table.

    Raises:
        UsageError: no plan, or a bad plan file.
    """
    return ScriptedProvider(plan_from_options(options))
