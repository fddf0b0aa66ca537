"""How often the repair strategy's localisation shows the model the function a bug is in.

``python -m devtools.localise_recall [--tasks FILE] [--exclude FILE]``: for each task of a
realrepos task file (the committed one by default), the project's suite runs on the
buggy tree in the sandbox with the runner's spectrum (``run_tests RUNNER --spectrum``: the
run's output plus the spectrum line the repair strategy's localisation reads from its
own spectrum run); ``repair.localise`` reads that output with the policy a run would have;
the task's function is found among the targets shown, or not. No model is involved: it
measures one step of the strategy against the task file's ground truth, and prints each
task's targets and the recall (a nested function counts as shown when the function
holding it is).

Develop against a task file made with another seed (``python -m
sandbox_agent.evals.realrepos.build --seed 18 --out FILE``) and ``--exclude`` the
committed one, so that what is reported (the committed 39) is not what was tuned on.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from sandbox_agent.deps import prepare_environment
from sandbox_agent.evals.realrepos import fetch
from sandbox_agent.evals.realrepos.suite import buggy_text
from sandbox_agent.evals.realrepos.taskfile import TASK_FILE, RealTask, TaskFile, load
from sandbox_agent.policy import Policy, spectrum_command
from sandbox_agent.repair.localise import Context, localise_output
from sandbox_agent.sandbox.base import SandboxBackend, SandboxLimits, SandboxRequest

TIMEOUT_S = 120.0


def _files(tree: Path) -> list[str]:
    return sorted(
        str(path.relative_to(tree))
        for path in tree.rglob("*.py")
        if path.is_file() and not any(part.startswith(".") for part in path.parts)
    )


def context_for(
    backend: SandboxBackend, task_file: TaskFile, task: RealTask, pristine: Path, scratch: Path
) -> tuple[Context, str]:
    """What the repair strategy would show for ``task``, and the run's output."""
    project = task_file.project(task.project)
    tree = scratch / task.id
    shutil.copytree(pristine, tree)
    (tree / task.path).write_text(buggy_text(pristine, task), encoding="utf-8")
    environment = prepare_environment(pristine)
    command = spectrum_command(project.runner)
    result = backend.run(
        SandboxRequest(
            argv=command.argv,
            workspace=tree,
            workload_env=command.workload_env,
            limits=SandboxLimits(timeout_s=TIMEOUT_S),
            environment=None if environment is None else environment.mount(),
        )
    )
    output = result.output.decode("utf-8", errors="replace")
    protected = Policy.for_repo(tree, runner=project.runner).protected_reason

    def read(path: str) -> str | None:
        try:
            return (tree / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    files = _files(tree)
    context = localise_output(
        output, files, read, lambda path: protected(path) is not None, hint=output
    )
    return context, output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.localise_recall")
    parser.add_argument(
        "--tasks",
        type=Path,
        action="append",
        help="a realrepos task file (repeatable; default the committed one); a function "
        "already in an earlier file is skipped",
    )
    parser.add_argument(
        "--exclude",
        type=Path,
        default=None,
        help="skip tasks whose project, path and function are in this task file",
    )
    args = parser.parse_args(argv)
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    seen: set[tuple[str, str, str]] = set()
    if args.exclude is not None:
        seen = {(t.project, t.path, t.function) for t in load(args.exclude).tasks}
    backend = DockerBackend()
    hits = total = skipped = 0
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-recall-") as scratch:
        for number, path in enumerate(args.tasks or [TASK_FILE]):
            task_file = load(path)
            trees = {p.name: fetch.pristine_tree(p) for p in task_file.projects}
            for task in task_file.tasks:
                key = (task.project, task.path, task.function)
                if key in seen:
                    skipped += 1
                    continue
                seen.add(key)
                where = Path(scratch) / str(number)
                where.mkdir(exist_ok=True)
                context, _ = context_for(backend, task_file, task, trees[task.project], where)
                shown = [site.qualname for site in context.targets if site.path == task.path]
                # a nested function (``outer.inner``) is shown inside its outer one
                hit = any(task.function == q or task.function.startswith(f"{q}.") for q in shown)
                hits += hit
                total += 1
                targets = ", ".join(f"{s.path}:{s.qualname}" for s in context.targets) or "-"
                print(
                    f"{'hit ' if hit else 'miss'} {path.name} {task.id} {task.kind} "
                    f"{task.path}:{task.function} <- {targets}"
                )
    print(f"recall {hits}/{total} (skipped {skipped} already seen or excluded)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
