"""Cluster benchmark (issue 19): what Ray adds per run, and how runs spread over nodes.

1. Dispatch overhead: the same scripted runs, one at a time, locally (``run_all``,
   ``--jobs 1``) and through a one-node cluster with one sandbox slot, interleaved;
   the per-run difference is what shipping the case, scheduling the task, streaming the
   messages and bringing the run folder back cost.
2. Throughput with 1, 2 and 3 nodes (two slots each), the provider ``scripted-slow``
   (1 s per turn, no CPU), so the machine's two cores are not what is measured: a head
   alone, then a worker added, then another, on one cluster.

Only the runs are timed (joining the cluster and asking each node to describe itself
are not). Scripted runs validate the harness; they are not model results.

    python -m benchmarks.cluster_bench [--runs N] [--repeats N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

OVERHEAD_TASKS = "paginator-fix,csvtable-fix,ratelimit-fix,hostile-injection,paginator-review"
THROUGHPUT_TASKS = OVERHEAD_TASKS + ",intervals-false-report"
THROUGHPUT_REPEATS = 2
"""12 runs: 6 waves on one node's 2 slots, 3 on 4 slots, 2 on 6 (the ideal is 3x)."""
THINKING_TURNS = 10
"""``list_files`` turns put before each reference plan: a run then spends ~16 s waiting
for its (simulated) model and ~2-4 s on sandboxes, as real-model runs mostly wait."""


def _cases(task_ids: list[str] | None, scratch: Path) -> list[Any]:
    from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases

    return build_cases("fixtures", SuiteOptions(task_ids=task_ids), scratch)


def _thinking(cases: list[Any], scratch: Path) -> list[Any]:
    """Each case with ``THINKING_TURNS`` harmless turns before its reference plan."""
    import json

    padded = []
    for case in cases:
        plan = json.loads(case.plan.read_text(encoding="utf-8"))
        plan["steps"] = [{"tool": "list_files", "args": {}}] * THINKING_TURNS + plan["steps"]
        path = scratch / f"{case.task.id}.plan.json"
        path.write_text(json.dumps(plan), encoding="utf-8")
        padded.append(case.model_copy(update={"plan": path}))
    return padded


def _local(cases: list[Any], options: Any) -> tuple[float, int, float]:
    from sandbox_agent.controller import run_task
    from sandbox_agent.evals.running.executor import run_all
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    began = time.monotonic()
    records = run_all(
        cases,
        options,
        backend_factory=lambda: DockerBackend(reap_on_first_use=False),
        run_task=run_task,
    )
    wall = time.monotonic() - began
    return wall, sum(record.passed for record in records), _own_time(records)


def _own_time(records: list[Any]) -> float:
    """Seconds the runs themselves took, as each measured it (agent, held-out, score)."""
    return float(sum(record.durations.total_s for record in records))


def _on_cluster(address: str, cases: list[Any], options: Any) -> tuple[float, int, float]:
    """Wall time of the runs alone (after joining and describing the nodes)."""
    from sandbox_agent.cluster.connect import connected
    from sandbox_agent.cluster.nodes import describe_nodes
    from sandbox_agent.errors import SetupError
    from sandbox_agent.evals.running.scheduler import ClusterOptions, Scheduler

    with connected(address) as target:
        nodes = describe_nodes(options.runtime)
        if all(node.problem for node in nodes):
            raise SetupError("; ".join(f"{node.name}: {node.problem}" for node in nodes))
        scheduler = Scheduler(
            cases=cases,
            options=options,
            cluster=ClusterOptions(address=address),
            address=target.address,
            nodes=nodes,
            progress=None,
            on_record=None,
        )
        began = time.monotonic()
        outcome = scheduler.all()
        wall = time.monotonic() - began
    return wall, sum(record.passed for record in outcome.records), _own_time(outcome.records)


def overhead(rounds: int) -> None:
    from sandbox_agent.cluster import local
    from sandbox_agent.evals.running.options import EvalOptions

    cluster = local.up(head_ip="127.0.0.32", worker_ips=(), slots=1)
    try:
        with tempfile.TemporaryDirectory(prefix="cluster-bench-") as scratch:
            cases = _cases(OVERHEAD_TASKS.split(","), Path(scratch) / "suite")
            options = EvalOptions(jobs=1, trace_dir=Path(scratch) / "traces")
            # Around each run: the wall time less the run's own time, one run at a time.
            around: dict[str, list[float]] = {"local": [], "ray": []}
            for _ in range(rounds):
                for where in ("local", "ray"):
                    if where == "local":
                        wall, passed, own = _local(cases, options)
                    else:
                        wall, passed, own = _on_cluster(cluster.address, cases, options)
                    around[where].append((wall - own) / len(cases))
                    print(
                        f"  {where}: {len(cases)} runs in {wall:.2f} s, their own time "
                        f"{own:.2f} s, {around[where][-1] * 1000:.0f} ms around each "
                        f"({passed} passed)"
                    )
    finally:
        local.down(cluster)
    best = {where: min(values) for where, values in around.items()}
    print(
        f"dispatch overhead per run (wall less the run's own time, best of {rounds}): "
        f"local {best['local'] * 1000:.0f} ms, through Ray {best['ray'] * 1000:.0f} ms "
        f"(1 node, 1 slot): Ray adds {(best['ray'] - best['local']) * 1000:.0f} ms"
    )


SLOW_DOUBLE = Path(__file__).resolve().parent.parent / "tests" / "doubles" / "slow_provider.py"
"""``scripted-slow`` is a test double, not in the package: registered here and, through
the environment, on every node this benchmark starts."""


def throughput(repeats: int) -> None:
    import os

    from sandbox_agent.cluster import local
    from sandbox_agent.evals.running.options import EvalOptions
    from sandbox_agent.providers import TEST_DOUBLES_ENV

    os.environ[TEST_DOUBLES_ENV] = str(SLOW_DOUBLE)
    cluster = local.up(head_ip="127.0.0.32", worker_ips=(), slots=2)
    walls: dict[int, float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="cluster-bench-") as scratch:
            cases = _cases(THROUGHPUT_TASKS.split(","), Path(scratch) / "suite")
            cases = _thinking(cases, Path(scratch))
            options = EvalOptions(
                provider="scripted-slow",
                repeats=repeats,
                trace_dir=Path(scratch) / "traces",
                # Room for the thinking turns on top of each task's own turn budget.
                max_iterations=THINKING_TURNS + 20,
            )
            runs = len(cases) * repeats
            for count, ip in ((1, None), (2, "127.0.0.33"), (3, "127.0.0.34")):
                if ip is not None:
                    local.start_node(cluster, ip, slots=2)
                wall, passed, _own = _on_cluster(cluster.address, cases, options)
                walls[count] = wall
                print(
                    f"  {count} node(s), {2 * count} slots: {runs} runs in {wall:.1f} s, "
                    f"{runs / wall * 60:.1f} runs/min ({passed} passed)"
                )
    finally:
        local.down(cluster)
    print(
        f"throughput, scripted-slow (1 s per turn, {THINKING_TURNS} turns before each plan): "
        f"2 nodes {walls[1] / walls[2]:.2f}x, "
        f"3 nodes {walls[1] / walls[3]:.2f}x over 1 node (goal: 2.5x with 3)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run both measurements and print one line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (overhead)")
    parser.add_argument("--repeats", type=int, default=THROUGHPUT_REPEATS)
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args(argv)
    print("cluster bench: a local Ray cluster on loopback (scripted plans: not model results)")
    if not args.skip_overhead:
        overhead(args.rounds)
    if not args.skip_throughput:
        throughput(args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
