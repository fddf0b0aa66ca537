"""The modules a silent suite is checked by, from the ids the original collected."""

from __future__ import annotations

from sandbox_agent.controller.repair_check import module_selectors


def test_unittest_ids_name_their_modules_once_in_order() -> None:
    ids = [
        "tests.test_core.CountTest.test_spaces",
        "tests.test_core.CountTest.test_tabs",
        "test_top.TopTest.test_ties",
        "tests.test_zz.ExitTest.test_exit",
    ]
    assert module_selectors("unittest", ids) == ["tests.test_core", "test_top", "tests.test_zz"]


def test_pytest_ids_name_their_files() -> None:
    ids = ["tests/test_core.py::test_a[1]", "tests/test_core.py::Cls::test_b", "test_x.py::test_c"]
    assert module_selectors("pytest", ids) == ["tests/test_core.py", "test_x.py"]


def test_a_module_no_selector_can_name_is_left_out() -> None:
    assert module_selectors("pytest", ["tests/test-core.py::test_a", "../x.py::t"]) == []
    assert module_selectors("unittest", ["lonely", "a.b", "pkg.9bad.Case.test"]) == []
    assert module_selectors("nose", ["tests.test_core.Case.test"]) == []
