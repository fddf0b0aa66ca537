"""The repair strategy's pure parts: failures read, functions found, replies spliced."""

from __future__ import annotations

import pytest

from sandbox_agent.repair.edits import edit_for
from sandbox_agent.repair.failures import Frame, failure_text, frames
from sandbox_agent.repair.localise import Site, function_at, function_named, localise
from sandbox_agent.repair.splice import Refused, splice

UNITTEST_OUTPUT = """\
F
======================================================================
FAIL: test_examples (test_examples.ExampleTests.test_examples)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/workspace/test_examples.py", line 12, in test_examples
    check(add)
  File "/workspace/test_examples.py", line 6, in check
    assert candidate(2, 3) == 5
AssertionError: assert candidate(2, 3) == 5: left is -1, right is 5

----------------------------------------------------------------------
Ran 1 test in 0.001s

FAILED (failures=1)
"""

PYTEST_OUTPUT = """\
F                                                                        [100%]
=================================== FAILURES ===================================
__________________________________ test_sum ___________________________________

    def test_sum():
>       assert total([1, 2]) == 3

tests/test_calc.py:4:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
calc/core.py:3: in total
    return sum(xs) - 1
E   assert 2 == 3
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_sum - assert 2 == 3
1 failed in 0.02s
"""

SOLUTION = '''\
"""A module."""

import math


def helper(x):
    return x


def add(a, b):
    """Add."""
    return a - b


class Box:
    def size(self):
        return 0
'''

TESTS = """\
import unittest

from solution import add


def check(candidate):
    assert candidate(2, 3) == 5


class ExampleTests(unittest.TestCase):
    def test_examples(self):
        check(add)
"""


def test_unittest_frames_and_failure_text() -> None:
    assert frames(UNITTEST_OUTPUT) == [
        Frame("test_examples.py", 12, "test_examples"),
        Frame("test_examples.py", 6, "check"),
    ]
    text = failure_text(UNITTEST_OUTPUT, 2000)
    assert text.startswith("FAIL: test_examples")
    assert "left is -1, right is 5" in text
    assert "Ran 1 test" not in text


def test_pytest_frames_and_a_cut_failure_text() -> None:
    assert Frame("calc/core.py", 3, "total") in frames(PYTEST_OUTPUT)
    assert Frame("tests/test_calc.py", 4, "") in frames(PYTEST_OUTPUT)
    cut = failure_text(PYTEST_OUTPUT * 20, 300)
    assert len(cut) <= 330
    assert "characters cut" in cut


def test_frames_outside_the_repository_are_left_out() -> None:
    output = '  File "/usr/lib/python3.11/unittest/case.py", line 57, in testPartExecutor\n'
    output += '  File "/deps/site/pkg/mod.py", line 3, in f\n  File "../x.py", line 1, in g\n'
    assert frames(output) == []


def _repo(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return (files.get), (lambda path: path.startswith("test"))


def test_localise_follows_the_test_imports_when_no_frame_reaches_editable_code() -> None:
    read, protected = _repo({"solution.py": SOLUTION, "test_examples.py": TESTS})
    context = localise(frames(UNITTEST_OUTPUT), read, protected)
    assert [(s.path, s.qualname, s.start, s.end) for s in context.targets] == [
        ("solution.py", "add", 10, 12)
    ]
    assert [s.qualname for s in context.tests] == ["ExampleTests.test_examples", "check"]


def test_localise_takes_the_failing_frame_in_editable_code() -> None:
    core = "def other():\n    pass\n\ndef total(xs):\n    return sum(xs) - 1\n"
    read, protected = _repo({"calc/core.py": core, "tests/test_calc.py": "def test_sum(): pass\n"})
    frames_ = [Frame("tests/test_calc.py", 1, ""), Frame("calc/core.py", 5, "total")]
    context = localise(frames_, read, protected)
    assert [s.qualname for s in context.targets] == ["total"]


def test_function_at_knows_methods_and_decorators() -> None:
    text = "class A:\n    @staticmethod\n    def f():\n        return 1\n"
    site = function_at("m.py", text, 4)
    assert site is not None
    assert (site.qualname, site.start, site.end) == ("A.f", 2, 4)


def _sites(path: str, module: str, *qualnames: str) -> list[Site]:
    """The functions of ``module`` named, each found (a test's targets by name)."""
    found = [function_named(path, module, name) for name in qualnames]
    assert None not in found, qualnames
    return [site for site in found if site is not None]


def _targets():  # type: ignore[no-untyped-def]
    read, protected = _repo({"solution.py": SOLUTION, "test_examples.py": TESTS})
    return list(localise(frames(UNITTEST_OUTPUT), read, protected).targets)


def test_splice_replaces_the_function_by_name_and_adds_what_it_needs() -> None:
    reply = (
        "Here is the fix:\n```python\nimport operator\n\ndef add(a, b):\n"
        '    """Add."""\n    return operator.add(a, b)\n\ndef twice(x):\n    return 2 * x\n```\n'
    )
    spliced = splice(SOLUTION, _targets(), reply)
    assert "return operator.add(a, b)" in spliced.text
    assert "return a - b" not in spliced.text
    assert "import operator\n" in spliced.text.split("def helper")[0]
    assert "def twice(x):" in spliced.text
    assert spliced.functions == ("add", "twice")
    assert "class Box:" in spliced.text


def test_a_method_is_reindented() -> None:
    site = _sites("solution.py", SOLUTION, "Box.size")
    spliced = splice(SOLUTION, site, "```python\ndef size(self):\n    return 3\n```")
    assert "    def size(self):\n        return 3\n" in spliced.text


@pytest.mark.parametrize(
    ("reply", "code", "says"),
    [
        ("I think the bug is the minus sign.", "no_code", "no ```python"),
        ("```python\ndef add(a, b):\n    return a +", "cut_off", "cut off"),
        ("```python\ndef add(a, b)\n    return a + b\n```", "syntax", "   1 | def add(a, b)"),
        ("```python\ndef plus(a, b):\n    return a + b\n```", "wrong_function", "keep its name"),
        ('```python\ndef add(a, b):\n    """Add."""\n    return a - b\n```', "no_change", "same"),
    ],
)
def test_unusable_replies_are_refused_with_a_reason(reply: str, code: str, says: str) -> None:
    with pytest.raises(Refused) as refused:
        splice(SOLUTION, _targets(), reply)
    assert refused.value.code == code
    assert says in refused.value.message


def test_a_bare_code_reply_is_taken() -> None:
    spliced = splice(SOLUTION, _targets(), "def add(a, b):\n    return a + b\n")
    assert "return a + b" in spliced.text


def test_edit_for_is_the_smallest_unique_change() -> None:
    old = "a\nx\nb\nx\nc\n"
    new = "a\nx\nb\ny\nc\n"
    edit = edit_for(old, new)
    assert old.count(edit.old) == 1
    assert old.replace(edit.old, edit.new, 1) == new
    assert edit_for("a\n", "a\nb\n").old == "a\n"
    assert edit_for("same\n", "other\n") == ("same\n", "other\n")


def test_a_class_header_with_type_parameters_lends_its_methods() -> None:
    # Python 3.12's ``class C[T]:``, which a small model writes around the method it fixes
    # and 3.11 does not parse: the method is taken, the header never is
    module = (
        "from typing import Generic, TypeVar\n\nT = TypeVar('T')\n\n\n"
        "class Box(Generic[T]):\n    def size(self) -> int:\n        return 0\n"
    )
    site = _sites("box.py", module, "Box.size")
    reply = "```python\nclass Box[T]:\n    def size(self) -> int:\n        return 1\n```"
    spliced = splice(module, site, reply)
    assert "class Box(Generic[T]):\n    def size(self) -> int:\n        return 1\n" in spliced.text
    with pytest.raises(Refused) as refused:
        splice(module, site, "```python\nclass Box[T]:\n    def size(self) -> int\n```")
    assert refused.value.code == "syntax"


def test_a_method_written_under_its_qualified_name_is_that_class_s_method() -> None:
    # The prompt asks for "the complete fixed method `Box.size`" and a small model writes
    # ``def Box.size(self):`` (the development split's idna tasks, 4 of 5 candidates):
    # not Python, but what it means is plain; each such def goes to the class it names,
    # even when another class has a method of the same name
    module = (
        "class Box:\n    def size(self) -> int:\n        return 0\n\n\n"
        "class Bag:\n    def size(self) -> int:\n        return 0\n"
    )
    box, bag = _sites("c.py", module, "Box.size", "Bag.size")
    reply = "```python\ndef Bag.size(self) -> int:\n    return 2\n```"
    spliced = splice(module, [box, bag], reply)
    assert "class Bag:\n    def size(self) -> int:\n        return 2\n" in spliced.text
    assert "class Box:\n    def size(self) -> int:\n        return 0\n" in spliced.text
    both = "```python\ndef Box.size(self):\n    return 1\n\ndef Bag.size(self):\n    return 2\n```"
    spliced = splice(module, [box, bag], both)
    assert "class Box:\n    def size(self):\n        return 1\n" in spliced.text
    assert "class Bag:\n    def size(self):\n        return 2\n" in spliced.text
    with pytest.raises(Refused) as refused:  # still Python 3.11's syntax otherwise
        splice(module, [box], "```python\ndef Box.size(self)\n    return 1\n```")
    assert refused.value.code == "syntax"


def test_a_qualified_method_keeps_its_decorators_and_leaves_the_next_function_alone() -> None:
    module = (
        "class Box:\n    @property\n    def size(self):\n        return 0\n\n\n"
        "def f():\n    return 0\n"
    )
    box, f = _sites("c.py", module, "Box.size", "f")
    reply = (
        "```python\n@property\ndef Box.size(self):\n    # the fix\n    return 1\n\n"
        "def f():\n    return 2\n```"
    )
    spliced = splice(module, [box, f], reply)
    wrapped = "```python\ndef Box.size(\n    self,\n) -> int:\n    return 4\n```"
    assert "        return 4\n" in splice(module, [box], wrapped).text
    method = "    @property\n    def size(self):\n        # the fix\n        return 1\n"
    assert method in spliced.text
    assert "\ndef f():\n    return 2\n" in spliced.text
