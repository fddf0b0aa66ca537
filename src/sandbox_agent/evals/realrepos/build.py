"""Make ``evals/realrepos/tasks.json``: ``python -m sandbox_agent.evals.realrepos.build``.

For each pinned project: fetch and check its sdist, make its dependency environment,
run its whole suite in the sandbox (it must pass: the baseline). Then its candidate
changes (``mutate.mutations`` of its source modules), shuffled with the seed, are tried
one by one: the suite runs on the project with the change, in the sandbox; a change
is kept when some tests fail that pass at baseline, at most ``MAX_FAILING``, every
other test still runs (no import broken), and no other kept change is in the same
function. Reverting a kept change gives back the baseline's bytes, which pass.
Nothing of a project runs on the host. Deterministic for a seed (the suites are).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from sandbox_agent.deps import prepare_environment
from sandbox_agent.deps.environment import recorded_resolution
from sandbox_agent.evals.realrepos import fetch
from sandbox_agent.evals.realrepos.mutate import Mutation, mutations
from sandbox_agent.evals.realrepos.taskfile import (
    SUITE_VERSION,
    TASK_FILE,
    Edit,
    FailingTest,
    Project,
    RealTask,
    TaskFile,
)
from sandbox_agent.evals.tasks.edits import minimal_edit
from sandbox_agent.policy import runner_command
from sandbox_agent.sandbox.base import (
    EnvironmentMount,
    SandboxBackend,
    SandboxLimits,
    SandboxRequest,
)

SEED = 17
TASKS_PER_PROJECT = 5
MAX_TRIES_PER_PROJECT = 40
MAX_FAILING = 20
RUN_TIMEOUT_S = 120.0
"""The baseline's limit; a changed suite gets ``SLOWDOWN`` times the baseline's time (at
least ``MIN_TIMEOUT_S``): a change that makes a loop endless is dropped quickly."""
SLOWDOWN = 5.0
MIN_TIMEOUT_S = 30.0
_SHELL_DESELECT = '''"""Written by sandbox-agent's realrepos suite: tests no sandbox can pass."""

DESELECTED = {deselected!r}
"""{reason}"""


def pytest_collection_modifyitems(config, items):
    items[:] = [item for item in items if item.nodeid not in DESELECTED]
'''
PYTEST_MARKER = (
    '"""Written by sandbox-agent\'s realrepos suite: pytest runs this project\'s tests."""\n'
)
_SIX_CONFTEST = _SHELL_DESELECT.format(
    deselected=("test_six.py::test_getoutput",),
    reason="Needs /bin/sh, which the runner image does not have (no shell in any sandbox).",
)


def _project(name: str, version: str, **fields: object) -> dict[str, object]:
    """A pin: ``path`` is the file's place under files.pythonhosted.org/packages/."""
    path = fields.pop("path")
    return {
        "name": name,
        "version": version,
        "url": f"https://files.pythonhosted.org/packages/{path}",
        "root": f"{name}-{version}",
        "conftest": None,
        **fields,
    }


PROJECTS = (
    _project(
        "jsonpatch", "1.33",
        path="42/78/18813351fe5d63acad16aec57f94ec2b70a09e53ca98145589e185423873/jsonpatch-1.33.tar.gz",
        sha256="9fcd4009c41e6d12348b4a0ff2563ba56a2923a7dfee731d004e212e1ee5030c",
        licence="BSD-3-Clause", runner="unittest", sources=("jsonpatch.py",),
    ),
    _project(
        "jsonpointer", "3.0.0",
        path="6a/0a/eebeb1fa92507ea94016a2a790b93c2ae41a7e18778f85471dc54475ed25/jsonpointer-3.0.0.tar.gz",
        sha256="2b2d729f2091522d61c3b31f82e11870f60b68f43fbc705cb76bf4b832af59ef",
        licence="BSD-3-Clause", runner="unittest", sources=("jsonpointer.py",),
    ),
    _project(
        "idna", "3.10",
        path="f1/70/7703c29685631f5a7590aa73f1f1d3fa9a380e654b86af429e0934a32f7d/idna-3.10.tar.gz",
        sha256="12f65c9b470abda6dc35cf8e63cc574b1c52b11df2c86030af0ac09b01b13ea9",
        licence="BSD-3-Clause", runner="unittest",
        sources=("idna/core.py", "idna/codec.py", "idna/intranges.py"),
    ),
    _project(
        "more-itertools", "10.5.0",
        path="51/78/65922308c4248e0eb08ebcbe67c95d48615cc6f27854b6f2e57143e9178f/more-itertools-10.5.0.tar.gz",
        sha256="5482bfef7849c25dc3c6dd53a6173ae4795da2a41a80faea6700d9f5846c5da6",
        licence="MIT", runner="unittest",
        sources=("more_itertools/more.py", "more_itertools/recipes.py"),
    ),
    _project(
        "six", "1.17.0",
        path="94/e7/b2c673351809dca68a0e064b6af791aa332cf192da575fd474ed7d6f16a2/six-1.17.0.tar.gz",
        sha256="ff70335d468e7eb6ec65b95b99d3a2836546063f63acc5171de367e834932a81",
        licence="MIT", runner="pytest", sources=("six.py",), conftest=_SIX_CONFTEST,
    ),
    _project(
        "inflection", "0.5.1",
        path="e1/7e/691d061b7329bc8d54edbf0ec22fbfb2afe61facb681f9aaa9bff7a27d04/inflection-0.5.1.tar.gz",
        sha256="1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
        licence="MIT", runner="pytest", sources=("inflection/__init__.py",),
        conftest=PYTEST_MARKER,
    ),
    _project(
        "toolz", "1.0.0",
        path="8a/0b/d80dfa675bf592f636d1ea0b835eab4ec8df6e9415d8cfd766df54456123/toolz-1.0.0.tar.gz",
        sha256="2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02",
        licence="BSD-3-Clause", runner="pytest",
        sources=("toolz/itertoolz.py", "toolz/dicttoolz.py", "toolz/functoolz.py"),
        conftest=PYTEST_MARKER,
    ),
    _project(
        "parse", "1.20.2",
        path="4f/78/d9b09ba24bb36ef8b83b71be547e118d46214735b6dfb39e4bfde0e9b9dd/parse-1.20.2.tar.gz",
        sha256="b41d604d16503c79d81af5165155c0b20f6c8d6c559efa66b4b695c3e5a0a0ce",
        licence="MIT", runner="pytest", sources=("parse.py",), conftest=PYTEST_MARKER,
    ),
)  # fmt: skip
"""The pins: sdists on PyPI by URL and sha256; licences allow redistributing metadata."""

_PYTEST_FAILED = re.compile(r"^(FAILED|ERROR) (\S+?)(?: - (.*))?$")
_UNITTEST_HEADER = re.compile(r"^(FAIL|ERROR): (\S+) \((\S+)\)")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Failure|Exit|Interrupt)\b")


def failing_tests(output: str, runner: str) -> list[FailingTest]:
    """The failed tests a runner printed, with one line each of why (for the report only:
    the verdict never comes from printed output)."""
    lines = output.splitlines()
    found: dict[str, str] = {}
    if runner == "pytest":
        for line in lines:
            if match := _PYTEST_FAILED.match(line.strip()):
                found.setdefault(match.group(2), (match.group(3) or match.group(1)).strip())
        return [FailingTest(id=key, message=value[:300]) for key, value in found.items()]
    for index, line in enumerate(lines):
        match = _UNITTEST_HEADER.match(line)
        if match is None or index == 0 or not lines[index - 1].startswith("====="):
            continue
        body: list[str] = []
        started = False  # a test's docstring may come between the header and the rule
        for following in lines[index + 1 :]:
            if following.startswith("-----") and not started:
                started = True
            elif following.startswith(("=====", "-----")):
                break
            elif started:
                body.append(following)
        messages = [b for b in body if _EXCEPTION_LINE.match(b)]
        last = next((b for b in reversed(body) if b.strip()), "")
        message = messages[-1] if messages else last
        found.setdefault(match.group(3), message.strip()[:300])
    return [FailingTest(id=key, message=value) for key, value in found.items()]


class SuiteRun(NamedTuple):
    tests: int
    failed: int
    """Failed or errored."""
    status: str
    output: str


class _Runner:
    """The project's whole suite in a fresh sandbox, on a given tree."""

    def __init__(
        self, backend: SandboxBackend, project: Project, environment: EnvironmentMount | None
    ) -> None:
        self.backend = backend
        self.project = project
        self.command = runner_command(project.runner)
        self.environment = environment
        self.timeout_s = RUN_TIMEOUT_S

    def run(self, tree: Path) -> SuiteRun:
        request = SandboxRequest(
            argv=self.command.argv,
            workspace=tree,
            workload_env=self.command.workload_env,
            limits=SandboxLimits(timeout_s=self.timeout_s),
            environment=self.environment,
        )
        result = self.backend.run(request)
        report = result.runner_report
        tests = report.tests_run if report else 0
        failed = (report.failures + report.errors) if report else 0
        return SuiteRun(tests, failed, result.status, result.output.decode("utf-8", "replace"))


def _baseline(runner: _Runner, tree: Path) -> int:
    started = time.monotonic()
    tests, failed, status, output = runner.run(tree)
    runner.timeout_s = max(MIN_TIMEOUT_S, SLOWDOWN * (time.monotonic() - started))
    if status != "completed" or failed or tests < 1:
        tail = "\n".join(output.splitlines()[-15:])
        raise SystemExit(f"{runner.project.name}: the baseline does not pass ({status}):\n{tail}")
    return tests


def _try(
    runner: _Runner, pristine: Path, path: str, mutation: Mutation, *, baseline: int, scratch: Path
) -> list[FailingTest] | None:
    tree = scratch / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(pristine, tree)
    source = (pristine / path).read_text(encoding="utf-8")
    (tree / path).write_text(mutation.apply(source), encoding="utf-8")
    tests, failed, status, output = runner.run(tree)
    if status != "completed" or not 1 <= failed <= MAX_FAILING or tests < baseline:
        return None
    failing = failing_tests(output, runner.project.runner)
    pytest = runner.project.runner == "pytest"
    broken = any("_FailedTest" in f.id or (pytest and "::" not in f.id) for f in failing)
    if not failing or broken:
        return None  # an import or collection broke: not a bug in one function's behaviour
    return failing


def build(seed: int, only: set[str] | None, backend: SandboxBackend) -> TaskFile:
    started = time.monotonic()
    projects: list[Project] = []
    tasks: list[RealTask] = []
    tried = 0
    for spec in PROJECTS:
        if only and spec["name"] not in only:
            continue
        project_started = time.monotonic()
        draft = Project.model_validate({**spec, "baseline_tests": 1})
        pristine = fetch.pristine_tree(draft)
        environment = prepare_environment(pristine)
        mount = None if environment is None else environment.mount()
        runner = _Runner(backend, draft, mount)
        baseline = _baseline(runner, pristine)
        project = draft.model_copy(
            update={
                "baseline_tests": baseline,
                "resolution": None if environment is None else recorded_resolution(pristine),
            }
        )
        projects.append(project)
        candidates = [
            (path, mutation)
            for path in project.sources
            for mutation in mutations((pristine / path).read_text(encoding="utf-8"))
        ]
        random.Random(f"{seed}:{project.name}").shuffle(candidates)  # noqa: S311 - a seeded order
        kept: list[RealTask] = []
        used_functions: set[tuple[str, str]] = set()
        with tempfile.TemporaryDirectory(prefix="sandbox-agent-realrepos-") as scratch:
            for count, (path, mutation) in enumerate(candidates):
                if len(kept) >= TASKS_PER_PROJECT or count >= MAX_TRIES_PER_PROJECT:
                    break
                if (path, mutation.function) in used_functions:
                    continue
                tried += 1
                failing = _try(
                    runner, pristine, path, mutation, baseline=baseline, scratch=Path(scratch)
                )
                print(
                    f"  {project.name} {path}:{mutation.line} {mutation.kind} "
                    f"{mutation.function}: {'kept' if failing else 'dropped'}",
                    file=sys.stderr,
                )
                if failing is None:
                    continue
                used_functions.add((path, mutation.function))
                source = (pristine / path).read_text(encoding="utf-8")
                edit = minimal_edit(source, mutation.apply(source), f"{project.name} {path}")
                kept.append(
                    RealTask(
                        id=f"realrepos-{project.name}-{len(kept) + 1:03d}",
                        project=project.name,
                        path=path,
                        function=mutation.function,
                        kind=mutation.kind,
                        line=mutation.line,
                        bug=Edit(old=edit.old, new=edit.new),
                        failing=tuple(failing),
                    )
                )
        tasks += kept
        print(
            f"{project.name}: baseline {baseline} tests, {len(kept)} tasks, "
            f"{time.monotonic() - project_started:.0f} s",
            file=sys.stderr,
        )
    return TaskFile(
        schema_version=1,
        suite_version=SUITE_VERSION,
        seed=seed,
        generated={
            "by": "python -m sandbox_agent.evals.realrepos.build",
            "seconds": round(time.monotonic() - started, 1),
            "candidates_tried": tried,
            "kept": len(tasks),
        },
        projects=tuple(projects),
        tasks=tuple(tasks),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox_agent.evals.realrepos.build")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--projects", default=None, help="comma-separated names (default all)")
    parser.add_argument("--out", type=Path, default=TASK_FILE)
    args = parser.parse_args(argv)
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    backend = DockerBackend()
    try:
        only = set(args.projects.split(",")) if args.projects else None
        task_file = build(args.seed, only, backend)
    finally:
        backend.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(task_file.model_dump(mode="json"), indent=1) + "\n")
    print(f"{args.out}: {len(task_file.tasks)} tasks over {len(task_file.projects)} projects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
