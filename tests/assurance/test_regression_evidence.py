"""The regression evidence's pieces, without old trees: what a case's outcome is taken to
be (a name the old code lacks is not applicable, never a failure), the verdicts, and the
page and README line it writes. The whole run is ``make regression-evidence``."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from devtools.assurance import outcome_plugin, regression, regression_render
from devtools.assurance.findings import Finding
from devtools.assurance.regression import judge
from devtools.assurance.regression_models import Evidence, FindingEvidence
from devtools.assurance.regression_run import PLUGIN_MODULE, CaseRun, run_tests

SUITE = {
    "test_a.py": """
        import pytest

        def test_passes():
            pass

        def test_fails():
            assert 1 == 2

        def test_on_a_missing_name():
            from json import no_such_name

        @pytest.mark.parametrize("n", [1, 2])
        def test_cases(n):
            assert n == 1

        @pytest.fixture
        def broken():
            raise RuntimeError("set-up")

        def test_set_up_fails(broken):
            pass

        @pytest.mark.xfail(strict=True, reason="an open finding")
        def test_open():
            assert False

        @pytest.mark.skip(reason="not here")
        def test_skipped():
            pass

        def test_not_wanted():
            pass
    """,
    "test_broken.py": "from sandbox_agent.no_such_module import thing\n\ndef test_x():\n    pass\n",
}


def _env_with_plugin(tmp_path: Path) -> dict[str, str]:
    plugin_dir = tmp_path / "plugin"
    plugin_dir.mkdir()
    shutil.copy2(outcome_plugin.__file__, plugin_dir / f"{PLUGIN_MODULE}.py")
    return {**os.environ, "PYTHONPATH": str(plugin_dir)}


def test_each_case_is_told_apart_and_a_missing_name_is_not_applicable(tmp_path: Path) -> None:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = _env_with_plugin(tmp_path)
    wanted = [
        f"test_a.py::{name}"
        for name in (
            "test_passes", "test_fails", "test_on_a_missing_name", "test_cases",
            "test_set_up_fails", "test_open", "test_skipped", "test_no_such_test",
        )
    ] + ["test_broken.py::test_x", "test_gone.py::test_y"]  # fmt: skip
    runs = run_tests(
        tmp_path, wanted, python=Path(sys.executable), env=env, scratch=tmp_path, source="fix abc"
    )
    seen = {run.test: (run.outcome, run.message) for run in runs}
    assert {test: outcome for test, (outcome, _) in seen.items()} == {
        "test_a.py::test_passes": "passed",
        "test_a.py::test_fails": "failed",
        "test_a.py::test_on_a_missing_name": "not_applicable",
        "test_a.py::test_cases[1]": "passed",
        "test_a.py::test_cases[2]": "failed",
        "test_a.py::test_set_up_fails": "not_applicable",
        "test_a.py::test_open": "xfailed",
        "test_a.py::test_skipped": "skipped",
        "test_a.py::test_no_such_test": "not_run",
        "test_broken.py::test_x": "not_applicable",
        "test_gone.py::test_y": "not_run",
    }
    assert seen["test_a.py::test_fails"][1].startswith("assert 1 == 2")
    assert "cannot import name 'no_such_name'" in seen["test_a.py::test_on_a_missing_name"][1]
    assert seen["test_a.py::test_set_up_fails"][1] == "set-up failed: RuntimeError: set-up"
    assert "No module named 'sandbox_agent.no_such_module'" in seen["test_broken.py::test_x"][1]
    assert {run.source for run in runs} == {"fix abc"}
    assert not any(str(tmp_path) in run.message for run in runs)  # paths as the tree's own


FIXED = Finding(id="SR-1", severity="low", title="t", fix="abcdef1", tests=("tests/a.py::t",))
OPEN = FIXED.model_copy(update={"fix": "open"})


def _runs(*outcomes: str) -> list[CaseRun]:
    return [
        CaseRun(test=f"tests/a.py::t[{i}]", outcome=outcome)  # type: ignore[arg-type]
        for i, outcome in enumerate(outcomes)
    ]


@pytest.mark.parametrize(
    ("before", "after", "verdict", "ok"),
    [
        (("failed", "failed"), ("passed", "passed"), "fails before, passes after", True),
        (("failed", "not_applicable"), ("passed", "passed"), "fails before (some", True),
        (("not_applicable",), ("passed",), "not applicable before the fix", True),
        (("failed", "passed"), ("passed", "passed"), "**PASSED BEFORE THE FIX**", False),
        (("failed",), ("failed",), "**does not pass after the fix**", False),
        (("skipped",), ("passed",), "**not run before the fix**", False),
        (("not_run",), ("passed",), "**not run before the fix**", False),
    ],
)
def test_a_fixed_findings_verdict(
    before: tuple[str, ...], after: tuple[str, ...], verdict: str, ok: bool
) -> None:
    said, holds = judge(FIXED, _runs(*before), _runs(*after))
    assert said.startswith(verdict)
    assert holds is ok


def test_an_open_findings_tests_must_fail_as_strict_xfails() -> None:
    assert judge(OPEN, [], _runs("xfailed", "xfailed")) == (
        "open: fails today (strict xfail)",
        True,
    )
    assert judge(OPEN, [], _runs("xfailed", "xpassed"))[1] is False
    assert judge(OPEN, [], _runs("passed"))[1] is False


def test_a_test_not_collected_before_stands_for_each_of_its_cases() -> None:
    whole = CaseRun(test="tests/a.py::t", outcome="not_applicable", message="ImportError")
    now = _runs("passed", "passed")
    assert [(run.test, run.outcome) for run in regression._per_case([whole], now)] == [
        ("tests/a.py::t[0]", "not_applicable"),
        ("tests/a.py::t[1]", "not_applicable"),
    ]


def test_other_test_bytes_stand_in_only_where_they_ran_against_the_old_code() -> None:
    today = [
        CaseRun(test="tests/a.py::t", outcome="not_applicable", message="no GO", source="current"),
        CaseRun(test="tests/a.py::u", outcome="not_applicable", message="no X", source="current"),
        CaseRun(test="tests/a.py::w", outcome="not_applicable", message="no Y", source="current"),
        CaseRun(test="tests/a.py::v", outcome="failed", source="current"),
    ]
    as_of_fix = [
        CaseRun(test="tests/a.py::t", outcome="failed", source="fix abcdef1"),
        CaseRun(test="tests/a.py::u", outcome="not_applicable", message="no X", source="fix"),
    ]
    merged = regression._merged(today, today[:3], as_of_fix, "fix abcdef1")
    assert [(run.test, run.outcome, run.source, run.message) for run in merged] == [
        ("tests/a.py::v", "failed", "current", ""),
        ("tests/a.py::t", "failed", "fix abcdef1", ""),
        ("tests/a.py::u", "not_applicable", "current", "no X"),
        ("tests/a.py::w", "not_applicable", "current", "no Y (test of fix abcdef1: no such test)"),
    ]


def _evidence() -> Evidence:
    rows = [
        FindingEvidence(
            finding=FIXED,
            before_commit="1234567",
            before=_runs("failed", "passed"),
            after=_runs("passed", "passed"),
            caveats=[],
            verdict="**PASSED BEFORE THE FIX**",
            ok=False,
        ),
        FindingEvidence(
            finding=OPEN.model_copy(update={"id": "SR-2"}),
            before_commit=None,
            before=[],
            after=_runs("xfailed"),
            caveats=[],
            verdict="open: fails today (strict xfail)",
            ok=True,
        ),
    ]
    return Evidence(
        generated="2026-12-02T10:00:00+00:00",
        commit="abcdef1",
        duration_s=1325.0,
        runtimes=["runc", "runsc"],
        rows=rows,
    )


def test_the_page_counts_and_shows_a_pass_before_the_fix_loudly() -> None:
    page = regression_render.render(_evidence())
    assert "in 22 min 5 s; its Docker tests ran on runc and runsc" in page
    assert (
        "Summary: 1 fixed findings, 2 test cases: 1 failed before the fix, 0 not applicable, "
        "1 passed before; 2/2 pass after. 1 open findings: 1/1 test cases fail today as "
        "strict xfails."
    ) in page
    assert "| SR-1 | low | `1234567` -> `abcdef1` | 2 | 1 | 0 | **1** | 2/2 |" in page
    assert "| SR-2 | low | open | 1 | - | - | - | 1 xfailed |" in page
    assert "- `tests/a.py::t[1]`: before: **passed**; after: passed" in page


def test_the_readme_line_is_replaced_between_its_markers_and_read_back() -> None:
    evidence = _evidence()
    readme = "# x\n\n<!-- regression-evidence -->\nold\n<!-- /regression-evidence -->\nrest\n"
    updated = regression_render.with_readme_line(readme, regression_render.readme_line(evidence))
    assert updated.endswith("<!-- /regression-evidence -->\nrest\n")
    assert "old" not in updated
    page = regression_render.render(evidence)
    assert regression_render.readme_facts(updated) == regression_render.page_facts(page)
    assert regression_render.page_facts(page) == ("2026-12-02", regression_render.summary(evidence))


def test_a_conftest_that_does_not_import_makes_its_tests_not_applicable(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "conftest.py").write_text("from sandbox_agent.no_such import x\n")
    (tmp_path / "sub" / "test_b.py").write_text("def test_b():\n    pass\n")
    runs = run_tests(
        tmp_path,
        ["sub/test_b.py::test_b"],
        python=Path(sys.executable),
        env=_env_with_plugin(tmp_path),
        scratch=tmp_path,
        source="current",
    )
    assert [(run.outcome, run.message) for run in runs] == [
        (
            "not_applicable",
            "not collected: a conftest.py does not import: "
            "ModuleNotFoundError: No module named 'sandbox_agent.no_such'",
        )
    ]


def test_todays_tests_import_a_moved_module_by_its_new_name_on_the_old_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 31 moved modules (sandbox/docker_backend.py -> sandbox/docker/docker_backend.py):
    # without the moves, today's tests were "not applicable" on every older tree and the
    # page fell back to tests that did not show the hole.
    from devtools.assurance.outcome_plugin import MovedModules

    old = tmp_path / "oldpkg_r31"
    old.mkdir()
    (old / "__init__.py").write_text("")
    (old / "backend.py").write_text("ANSWER = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = MovedModules({"oldpkg_r31.docker.backend": "oldpkg_r31.backend"})
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, finder])
    try:
        moved = importlib.import_module("oldpkg_r31.docker.backend")
        original = importlib.import_module("oldpkg_r31.backend")
        assert moved is original
        assert moved.ANSWER == 42
        assert original.__spec__ is not None
        assert original.__spec__.name == "oldpkg_r31.backend"  # its own spec kept
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("oldpkg_r31.docker.absent")
    finally:
        for name in [n for n in sys.modules if n.startswith("oldpkg_r31")]:
            del sys.modules[name]


def test_the_moves_are_read_from_git_renames() -> None:
    from devtools.assurance.regression import module_moves

    moves = module_moves("7c49b7c").moves  # before issue 31's moves
    assert (
        moves["sandbox_agent.sandbox.docker.docker_backend"]
        == "sandbox_agent.sandbox.docker_backend"
    )
    assert moves["devtools.assurance.findings"] == "sandbox_agent.assurance.findings"


def test_a_module_renamed_then_rewritten_is_followed_commit_by_commit() -> None:
    # evals/audit.py moved to evals/results/audit.py (f2da31e) after edits that left the
    # two ends under git's 50% similarity: one diff from c1df940 saw a delete and an add,
    # and today's test of SR-10 R7 was "not applicable" there.
    from devtools.assurance.regression import module_moves

    moves = module_moves("c1df940").moves
    assert moves["sandbox_agent.evals.results.audit"] == "sandbox_agent.evals.audit"


def test_a_test_double_taken_out_of_the_product_is_the_old_trees_own() -> None:
    # service/fake_run.py moved to tests/service/fake_run.py (6211d4a). Today's copy, laid
    # into the old tree with today's tests, imports today's modules: SR-12 D6's test was
    # "not applicable" on 5f0b8c8. The old tree's own double stands in for it, first.
    from devtools.assurance.regression import module_moves

    moved = module_moves("5f0b8c8")
    assert moved.moves["service.fake_run"] == "sandbox_agent.service.fake_run"
    assert "service.fake_run" in moved.first
    assert "sandbox_agent.evals.results.journal" not in moved.first


def test_a_first_move_wins_over_the_file_of_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from devtools.assurance.outcome_plugin import MovedModules

    files = {
        "oldpkg_d6/__init__.py": "",
        "oldpkg_d6/double.py": "WHO = 'old'\n",
        "dbl_d6/__init__.py": "",
        "dbl_d6/double.py": "WHO = 'today'\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = MovedModules({"dbl_d6.double": "oldpkg_d6.double"}, packages=False)
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    try:
        assert importlib.import_module("dbl_d6.double").WHO == "old"
        assert importlib.import_module("dbl_d6").__file__ == str(tmp_path / "dbl_d6/__init__.py")
    finally:
        for name in [n for n in sys.modules if n.startswith(("oldpkg_d6", "dbl_d6"))]:
            del sys.modules[name]
