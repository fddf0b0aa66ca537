"""What the repair strategy's spectrum run costs: the suite with and without it, side by side.

For each realrepos project (its pristine tree, its dependency environment), the plain
suite (``run_tests RUNNER``) and the spectrum run (``run_tests RUNNER --spectrum``: a
call-only trace per test, ``sandbox_supervisor.spectrum``) alternate in fresh sandboxes,
``REPEATS`` times each. Printed per project: the median wall time of each and their
ratio. The spectrum run is made once per repair run whose tests fail, before the first
model call (docs/STRATEGIES.md, step 2).
"""

from __future__ import annotations

import statistics
import sys
import time

REPEATS = 3


def main(argv: list[str]) -> int:
    from sandbox_agent.deps import prepare_environment
    from sandbox_agent.evals.realrepos import fetch
    from sandbox_agent.evals.realrepos.taskfile import TASK_FILE, load
    from sandbox_agent.policy import runner_command, spectrum_command
    from sandbox_agent.sandbox.base import SandboxLimits, SandboxRequest
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    backend = DockerBackend()
    print("spectrum_bench: median wall seconds of the suite, plain and with the spectrum")
    ratios: list[float] = []
    for project in load(TASK_FILE).projects:
        tree = fetch.pristine_tree(project)
        environment = prepare_environment(tree)
        times: dict[str, list[float]] = {"plain": [], "spectrum": []}
        for _ in range(REPEATS):
            for name, command in (
                ("plain", runner_command(project.runner)),
                ("spectrum", spectrum_command(project.runner)),
            ):
                began = time.monotonic()
                result = backend.run(
                    SandboxRequest(
                        argv=command.argv,
                        workspace=tree,
                        workload_env=command.workload_env,
                        limits=SandboxLimits(timeout_s=300.0),
                        environment=None if environment is None else environment.mount(),
                    )
                )
                times[name].append(time.monotonic() - began)
                if result.status != "completed":
                    print(f"  {project.name} {name}: {result.status} ({result.reason})")
        plain, traced = statistics.median(times["plain"]), statistics.median(times["spectrum"])
        ratio = traced / plain
        ratios.append(ratio)
        print(f"  {project.name:<16} plain {plain:6.2f} s  spectrum {traced:6.2f} s  x{ratio:.2f}")
    print(f"  median ratio x{statistics.median(ratios):.2f} over {len(ratios)} projects")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
