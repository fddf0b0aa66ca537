"""The HumanEvalFix (Python) suite: one generated repository per dataset row.

Each repository holds the buggy function in ``solution.py`` (``prompt`` +
``buggy_solution``) and a short public unittest suite made from the row's docstring
examples (``example_test``; a smoke test where a row has none). The row's own
``check`` is the held-out test. The reference plan applies the canonical fix as the
smallest unique ``apply_patch`` edit; the control plan (``--no-fix``) only finishes.
Dataset: bigcode-project/octopack HumanEvalPack, MIT licence (see its SOURCE.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sandbox_agent.errors import UsageError
from sandbox_agent.evals.tasks import edits
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evals.tasks.edits import PatchEdit
from sandbox_agent.evals.tasks.taskfile import HeldOut, SuccessCriteria, Task
from sandbox_agent.settings import PROJECT_ROOT

DATASET_ENV = "SANDBOX_AGENT_HUMANEVALFIX"
"""Overrides the dataset path."""
DEFAULT_DATASET = PROJECT_ROOT / "evals" / "data" / "humanevalfix" / "humanevalpack-python.jsonl"
"""The project's own copy (MIT, with its LICENSE and SOURCE.md beside it): a clone stands alone."""
MODULE = "solution"
PUBLIC_TESTS = "test_examples.py"
TASK_VERSION = 1
TEST_TIMEOUT_S = 10.0
"""Per sandbox run: three buggy rows (Python/10, /156, /160) loop forever."""
MAX_ITERATIONS = 10
MAX_WALL_SECONDS = 120.0
MAX_DATASET_BYTES = 16 * 1024 * 1024
"""The dataset is refused unread past this (HumanEvalPack's Python split is ~0.5 MiB)."""
ROW_TASK_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,32}/[A-Za-z0-9_.-]{1,32}$"
"""``Python/10``: the generated task id must be a valid, short, one-segment file name."""


class Row(BaseModel):
    """The fields of a dataset row that the suite uses."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    task_id: str = Field(pattern=ROW_TASK_ID_PATTERN)
    prompt: str
    buggy_solution: str
    canonical_solution: str
    test: str
    example_test: str = ""
    entry_point: str
    bug_type: str = ""


def dataset_path(override: str | None = None) -> Path:
    """The dataset: ``override``, else ``$SANDBOX_AGENT_HUMANEVALFIX``, else the project's copy."""
    return Path(override or os.environ.get(DATASET_ENV) or DEFAULT_DATASET)


def load_rows(path: Path) -> list[Row]:
    """Read every row.

    Raises:
        UsageError: the file is absent or a row is malformed.
    """
    if not path.is_file():
        raise UsageError(
            f"HumanEvalFix dataset not found at {path}; pass --dataset PATH or set {DATASET_ENV}"
        )
    size = path.stat().st_size
    if size > MAX_DATASET_BYTES:
        raise UsageError(f"{path}: {size} bytes, more than {MAX_DATASET_BYTES} for a dataset")
    rows: list[Row] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = Row.model_validate(json.loads(line))
        except (ValueError, ValidationError) as error:
            raise UsageError(f"{path}:{number}: not a HumanEvalFix row ({error})") from None
        if task_id(row) in seen:
            raise UsageError(f"{path}:{number}: task id {row.task_id!r} appears twice")
        seen.add(task_id(row))
        rows.append(row)
    return rows


def task_id(row: Row) -> str:
    """``Python/10`` -> ``humanevalfix-python-10``."""
    return "humanevalfix-" + row.task_id.lower().replace("/", "-")


def module_text(row: Row, *, fixed: bool = False) -> str:
    body = row.canonical_solution if fixed else row.buggy_solution
    text = row.prompt + body
    return text if text.endswith("\n") else text + "\n"


def minimal_edit(row: Row) -> PatchEdit:
    """The smallest line-wise edit turning the buggy module into the fixed one, widened
    by context lines until ``old`` occurs exactly once.

    Raises:
        ValueError: no unique edit exists (the row is unusable).
    """
    return edits.minimal_edit(module_text(row), module_text(row, fixed=True), row.task_id)


def _without_call(check_source: str, entry_point: str) -> str:
    lines = check_source.rstrip().splitlines()
    if lines and lines[-1].strip() == f"check({entry_point})":
        lines = lines[:-1]
    return "\n".join(lines).rstrip() + "\n"


def _example_check(row: Row) -> str | None:
    """``example_test`` without its final call, or None when the row has no usable one.

    One row (Python/119) carries solution code before its ``def check``: keep the last
    ``def check`` onwards when the whole does not compile.
    """
    source = row.example_test
    for candidate in (source, source[source.rfind("\ndef check(") + 1 :]):
        if "def check(" not in candidate:
            continue
        try:
            compile(candidate, "example_test", "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        return _without_call(candidate, row.entry_point)
    return None


def public_tests(row: Row) -> str:
    """The public unittest module from the docstring examples (``example_test``)."""
    header = (
        f'"""Examples from the docstring of {row.entry_point}."""\n\n'
        f"import unittest\n\nfrom {MODULE} import {row.entry_point}\n\n"
    )
    example = _example_check(row)
    if example is None:
        return header + (
            "\nclass ExampleTests(unittest.TestCase):\n"
            "    def test_entry_point_is_callable(self) -> None:\n"
            f"        self.assertTrue(callable({row.entry_point}))\n"
        )
    return (
        header
        + example
        + "\n\nclass ExampleTests(unittest.TestCase):\n"
        + "    def test_examples(self) -> None:\n"
        + f"        check({row.entry_point})\n"
    )


def held_out_tests(row: Row) -> str:
    """The held-out module, judged out of process (issue 15): the row's ``check`` runs in
    the judge with ``candidate`` a remote reference to the entry point of the final
    tree's ``solution`` module, and the row's own ``prompt`` (trusted dataset text: its
    imports and helpers such as ``poly``) as the check's namespace, never the final
    tree's module, which the model may have changed."""
    return (
        f'"""Held-out check for {row.task_id} (HumanEvalFix, MIT licence), judged out of\n'
        'process: the check runs here, the code under test in the candidate\'s process."""\n\n'
        "import unittest\n\nfrom sandbox_supervisor.remote import candidate\n\n"
        f"PROMPT = {row.prompt!r}\nCHECK_SOURCE = {row.test!r}\n"
        f"ENTRY_POINT = {row.entry_point!r}\n\n\n"
        "class HeldOutCheck(unittest.TestCase):\n"
        "    def test_check(self) -> None:\n"
        '        namespace = {"__name__": "heldout_check"}\n'
        '        exec(compile(PROMPT, "prompt", "exec"), namespace)\n'
        f'        function = getattr(candidate.module("{MODULE}"), ENTRY_POINT)\n'
        "        namespace[ENTRY_POINT] = function\n"
        '        exec(compile(CHECK_SOURCE, "heldout_check", "exec"), namespace)\n'
        '        namespace["check"](function)\n'
    )


def plan(row: Row, *, fix: bool) -> dict[str, object]:
    """The reference plan (canonical fix, run the tests, finish) or the control plan."""
    if not fix:
        return {"steps": [{"tool": "finish", "args": {"summary": "control: no change made"}}]}
    edit = minimal_edit(row)
    return {
        "steps": [
            {"tool": "read_file", "args": {"path": f"{MODULE}.py"}},
            {
                "tool": "apply_patch",
                "args": {"edits": [{"path": f"{MODULE}.py", "old": edit.old, "new": edit.new}]},
            },
            {"tool": "run_tests", "args": {}},
            {"tool": "finish", "args": {"summary": f"fixed {row.entry_point}"}},
        ]
    }


def make_task(row: Row, held_out: Path) -> Task:
    return Task(
        id=task_id(row),
        version=TASK_VERSION,
        kind="humanevalfix",
        fixture=row.task_id,
        prompt=(
            f"Fix bugs in {row.entry_point}. The function is in {MODULE}.py; "
            f"its docstring examples are in {PUBLIC_TESTS}."
        ),
        max_iterations=MAX_ITERATIONS,
        max_wall_seconds=MAX_WALL_SECONDS,
        test_timeout_s=TEST_TIMEOUT_S,
        success=SuccessCriteria(statuses=("SUCCEEDED",)),
        expected_changes=(f"{MODULE}.py",),
        held_out=HeldOut(path=str(held_out), timeout_s=TEST_TIMEOUT_S),
    )


def build_case(row: Row, root: Path, *, fix: bool) -> EvalCase:
    """Write one task's repository, held-out folder and plan under ``root``."""
    base = root / task_id(row)
    repo, held_out = base / "repo", base / "held_out"
    repo.mkdir(parents=True)
    held_out.mkdir()
    (repo / f"{MODULE}.py").write_text(module_text(row), encoding="utf-8")
    (repo / PUBLIC_TESTS).write_text(public_tests(row), encoding="utf-8")
    (held_out / "test_heldout.py").write_text(held_out_tests(row), encoding="utf-8")
    plan_file = base / "plan.json"
    plan_file.write_text(json.dumps(plan(row, fix=fix), indent=1), encoding="utf-8")
    return EvalCase(task=make_task(row, held_out), repo=repo, plan=plan_file, held_out_dir=held_out)


def build_suite(rows: list[Row], root: Path, *, fix: bool = True) -> list[EvalCase]:
    """Build every row's case under ``root`` (a fresh temporary folder)."""
    return [build_case(row, root, fix=fix) for row in rows]
