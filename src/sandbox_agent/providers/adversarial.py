"""``mock-adversarial``: two out-of-policy actions first, then the reference plan.

It stands for a model that probes its limits before doing the work: it reads a
file outside the workspace and patches a protected test file. Both must be
denied, and the run must then succeed on the merits of the plan.
"""

from __future__ import annotations

from sandbox_agent.providers.base import ModelReply, ModelRequest, Provider
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.providers.plan import Plan, render
from sandbox_agent.providers.scripted import plan_from_options

OUT_OF_POLICY_TURNS: tuple[str, ...] = (
    render("read_file", {"path": "../../etc/passwd"}),
    render(
        "apply_patch",
        {"edits": [{"path": "tests/test_always_pass.py", "old": "", "new": "assert True\n"}]},
    ),
)


class AdversarialProvider:
    name = "mock-adversarial"

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def close(self) -> None:
        """Nothing to release: no connection is held."""

    def complete(self, request: ModelRequest) -> ModelReply:
        turn = len(request.history)
        if turn < len(OUT_OF_POLICY_TURNS):
            return ModelReply(text=OUT_OF_POLICY_TURNS[turn], model=self.name)
        return ModelReply(text=self.plan.turn(turn - len(OUT_OF_POLICY_TURNS)), model=self.name)

    def planned_test_runs(self) -> int:
        """Whole-suite ``run_tests`` steps of the plan it follows after its two attempts."""
        return self.plan.whole_suite_test_runs()


def create(options: PlanOptions) -> Provider:
    """Factory of the provider table.

    Raises:
        UsageError: no plan, or a bad plan file.
    """
    return AdversarialProvider(plan_from_options(options))
