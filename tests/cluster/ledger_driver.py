"""Run by ``test_cluster.py``: metered requests from every node at once, through the one
ledger of the cluster (``sandbox-agent``'s own meter and ``ledger_path`` seam), until the
experiment budget refuses; prints what each task was granted as JSON.

    python ledger_driver.py ADDRESS LEDGER_FILE BUDGET_USD TASKS_PER_NODE
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

REQUEST_TOKENS = 100
"""At 1 USD per million tokens, in and out: 100 micro-dollars a request."""


def spend_until_refused(location: str, label: str, budget_usd: float, start_at: float) -> Any:
    """On a node: metered requests (reserve, a fake send, settle) until a budget refuses."""
    import ray

    from sandbox_agent.errors import BudgetExhausted
    from sandbox_agent.ledger.opening import open_ledger
    from sandbox_agent.ledger.prices import Price
    from sandbox_agent.ledger.store import SpendLimits
    from sandbox_agent.providers.meter import Meter, TokenCounts

    limits = SpendLimits(
        max_cost_usd=budget_usd,
        experiment_budget_usd=budget_usd,
        max_calls=1_000_000,
        max_tokens=10**12,
    )
    granted = 0
    while time.time() < start_at:  # every task begins at once
        time.sleep(0.01)
    while True:
        meter = Meter(
            ledger=open_ledger(location),
            limits=limits,
            price=Price(1.0, 1.0),
            model="fake-model",
            provider="openai",
            experiment="cluster-ledger-test",
            run_id=f"{label}-{granted}",
        )
        try:
            meter.call(
                lambda: "answer",
                input_tokens=REQUEST_TOKENS // 2,
                max_output_tokens=REQUEST_TOKENS // 2,
                classify=lambda error: None,
                usage_of=lambda answer: TokenCounts(REQUEST_TOKENS // 2, REQUEST_TOKENS // 2),
            )
        except BudgetExhausted as refused:
            node = ray.get_runtime_context().get_node_id()
            return {"node": node, "granted": granted, "refused": refused.budget}
        granted += 1


def main() -> None:
    address, ledger_file, budget, per_node = sys.argv[1:5]
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from sandbox_agent.cluster.connect import NAMESPACE, connected
    from sandbox_agent.ledger.actor import start_ledger_actor

    with connected(address):
        _actor, location = start_ledger_actor(ledger_file, NAMESPACE)
        task = ray.remote(num_cpus=0)(spend_until_refused)
        nodes = [node["NodeID"] for node in ray.nodes() if node["Alive"]]
        start_at = time.time() + 3.0
        refs = [
            task.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            ).remote(location, f"{node[:8]}-{index}", float(budget), start_at)
            for node in nodes
            for index in range(int(per_node))
        ]
        results = ray.get(refs, timeout=300)
    print(json.dumps({"location": location, "nodes": nodes, "results": results}))


if __name__ == "__main__":
    main()
