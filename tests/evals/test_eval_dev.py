"""``make eval-dev``: the development split's tasks, the variant's flags checked before
any run, the development task file made from a build, and the side-by-side comparison
(no model: the runs are ``test_eval_executor``'s doubles)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eval_local import _fake_runs, _part

from devtools import eval_dev
from devtools.eval_local import odd_subset
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.realrepos import taskfile


def test_the_development_rows_are_even_and_never_the_reported_ones() -> None:
    ids = [f"humanevalfix-{n}" for n in range(164)]
    even = eval_dev.even_subset(ids, 30)
    assert len(even) == 30
    assert all(int(i.rsplit("-", 1)[1]) % 2 == 0 for i in even)
    assert even == eval_dev.even_subset(ids, 30)  # a fixed draw
    assert not set(even) & set(odd_subset(ids, 82))


def test_tasks_are_taken_one_project_after_another() -> None:
    tasks = [(f"{p}-{n}", p) for p in ("a", "b", "c") for n in range(3)]
    assert eval_dev.round_robin(tasks, 4) == ["a-0", "a-1", "b-0", "c-0"]
    assert eval_dev.round_robin(tasks, 40) == [t for t, _ in tasks]
    dev = [(t.id, t.project) for t in taskfile.load(eval_dev.DEV_TASKS).tasks]
    projects = {project for _, project in dev}
    chosen = set(eval_dev.round_robin(dev, len(projects)))
    assert {project for task, project in dev if task in chosen} == projects


@pytest.mark.parametrize(
    ("variant", "error"),
    [
        ("", "--variant is empty"),
        ("--redraws 2 --tasks a", "--variant may not set --tasks: eval-dev chooses them"),
        ("--results-dir=x", "may not set --results-dir"),
        ("--repeats 3", "may not set --repeats"),
        ("--ray auto", "may not set --ray"),
        ("--no-such-flag 2", "not eval flags \\(give each flag whole\\): --no-such-flag 2"),
        ("--tas humanevalfix-1", "not eval flags \\(give each flag whole\\): --tas"),
        ("--redraws two", "invalid int value: 'two'"),
        ("--redraws 9", "redraws: Input should be less than or equal to 8"),
        ("--candidates 0", "candidates: Input should be greater than or equal to 1"),
    ],
)
def test_a_bad_variant_is_refused_before_any_run(variant: str, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        eval_dev.variant_flags(variant)


def test_a_variant_is_eval_flags() -> None:
    assert eval_dev.variant_flags("--redraws 2 --temperature 1.0") == [
        "--redraws", "2", "--temperature", "1.0",
    ]  # fmt: skip


def test_the_development_task_file_leaves_out_the_committed_functions(tmp_path: Path) -> None:
    committed = json.loads(taskfile.TASK_FILE.read_text(encoding="utf-8"))
    built = dict(committed)
    fresh = dict(committed["tasks"][0], id="realrepos-x-900", function="not_in_the_committed")
    built["tasks"] = [*committed["tasks"][:3], fresh]
    (tmp_path / "built.json").write_text(json.dumps(built))
    out = tmp_path / "dev-tasks.json"
    assert eval_dev.write_dev_tasks(tmp_path / "built.json", out) == (1, 3)
    split = taskfile.load(out)
    assert [t.id for t in split.tasks] == ["realrepos-dev-x-900"]
    assert "development" in str(split.generated["split"])


def test_the_comparison_says_what_each_arm_passed_and_what_the_variant_changed(
    tmp_path: Path,
) -> None:
    good, bad, ugly = _fake_runs(tmp_path, "good", "bad", "ugly")
    results = tmp_path / "results"
    identity = {"suite": "humanevalfix"}
    _part(results / "base", "humanevalfix", [good, bad, ugly], identity)
    shown = eval_dev.comparison(results, "--redraws 2")
    assert "| variant | not run |" in shown
    _part(results / "variant-redraws-2", "humanevalfix", [bad, ugly], identity)
    shown = eval_dev.comparison(results, "--redraws 2")
    assert "Variant: `--redraws 2` (`variant-redraws-2/`)" in shown
    assert "| base | 3 | 1 | FAILED 2, SUCCEEDED 1 |" in shown
    assert "| variant | 2 | 0 | FAILED 2 |" in shown
    # task-good ran in the base arm only: not "lost", left out
    assert (
        "Over the 2 tasks both arms ran: gained by the variant: none; lost: none. "
        "1 task(s) ran in one arm only: not compared." in shown
    )
    assert "## realrepos" not in shown  # a stage neither arm ran


def test_arms_that_ran_different_code_are_said_to(tmp_path: Path) -> None:
    good, bad = _fake_runs(tmp_path, "good", "bad")
    results = tmp_path / "results"
    for arm, commit in (("base", "aaa"), ("variant-redraws-2", "bbb")):
        _part(results / arm, "humanevalfix", [good, bad], {"suite": "humanevalfix"})
        code = [{"commit": commit, "dirty": False}]
        (results / arm / "humanevalfix" / "code.json").write_text(json.dumps(code))
    shown = eval_dev.comparison(results, "--redraws 2")
    assert "Code that ran: base aaa; variant bbb." in shown
    assert "**The arms ran different code**" in shown


def test_a_bad_stage_or_count_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_dev.main(["--variant", "--redraws 2", "--stages", "fixtures"]) == 2
    assert eval_dev.main(["--variant", "--redraws 2", "--humanevalfix", "0"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "eval-dev: --stages 'fixtures': give humanevalfix and/or realrepos",
        "eval-dev: --humanevalfix and --realrepos take a count of at least 1",
    ]


def test_each_variant_has_its_folder_beside_one_base() -> None:
    assert eval_dev.variant_folder(["--redraws", "2"]) == "variant-redraws-2"
    assert eval_dev.variant_folder(["--temperature=1.0", "--focus", "rotate"]) == (
        "variant-temperature-1.0-focus-rotate"
    )
