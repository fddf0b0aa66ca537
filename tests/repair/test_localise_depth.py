"""Which frames of a deep traceback the repair strategy shows, and what they call.

The frames a failure passes through are printed outermost first; the bug is most often
where the exception was raised, or in what the failing code calls (a helper that
returned the wrong value), rather than in the entry point the test called.
"""

from __future__ import annotations

from sandbox_agent.repair.failures import frames, missing_attributes
from sandbox_agent.repair.localise import localise

CHAIN = """\
def api(x):
    return outer(x)


def outer(x):
    return middle(x)


def middle(x):
    return inner(x)


def inner(x):
    return {}[x]
"""

CHAIN_OUTPUT = """\
E
======================================================================
ERROR: test_api (tests.test_chain.T.test_api)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/workspace/tests/test_chain.py", line 6, in test_api
    api(1)
  File "/workspace/chain.py", line 2, in api
    return outer(x)
  File "/workspace/chain.py", line 6, in outer
    return middle(x)
  File "/workspace/chain.py", line 10, in middle
    return inner(x)
  File "/workspace/chain.py", line 14, in inner
    return {}[x]
KeyError: 1

----------------------------------------------------------------------
Ran 1 test in 0.001s

FAILED (errors=1)
"""

TWO_FAILURES = """\
======================================================================
ERROR: test_a (tests.test_chain.T.test_a)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/workspace/tests/test_chain.py", line 6, in test_a
    api(1)
  File "/workspace/chain.py", line 2, in api
    return outer(x)
  File "/workspace/chain.py", line 6, in outer
    return middle(x)
  File "/workspace/chain.py", line 10, in middle
    return inner(x)
KeyError: 1

======================================================================
ERROR: test_b (tests.test_chain.T.test_b)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/workspace/tests/test_chain.py", line 9, in test_b
    api(2)
  File "/workspace/chain.py", line 2, in api
    return outer(x)
  File "/workspace/chain.py", line 14, in inner
    return {}[x]
KeyError: 2
"""

PYTEST_CHAIN = """\
=================================== FAILURES ===================================
___________________________________ test_a ____________________________________
tests/test_chain.py:6: in test_a
    api(1)
chain.py:2: in api
    return outer(x)
chain.py:6: in outer
    return middle(x)
chain.py:10: in middle
    return inner(x)
E   KeyError: 1
___________________________________ test_b ____________________________________
tests/test_chain.py:9: in test_b
    api(2)
chain.py:14: in inner
    return {}[x]
E   KeyError: 2
"""

CURRY = """\
class Curry:
    def __init__(self, func):
        self.func = func

    def _should_curry(self, args):
        return len(args) < 2

    def __call__(self, *args):
        if self._should_curry(args):
            return self
        return normalise(self.func(*args))

    def unrelated(self):
        return 0


def normalise(value):
    return value


def unused():
    return 1
"""

CURRY_OUTPUT = """\
Traceback (most recent call last):
  File "/workspace/tests/test_curry.py", line 5, in test_call
    Curry(add)(1, 2)
  File "/workspace/curry.py", line 10, in __call__
    return self
AssertionError
"""

TESTS = """\
import unittest
from chain import api


class T(unittest.TestCase):
    def test_api(self):
        api(1)
"""


def _repo(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return files.get, (lambda path: path.startswith("tests/"))


def _targets(output: str, files: dict[str, str]) -> list[str]:
    read, protected = _repo(files)
    context = localise(frames(output), read, protected, missing=missing_attributes(output))
    return [site.qualname for site in context.targets]


def test_the_innermost_frames_come_first() -> None:
    files = {"chain.py": CHAIN, "tests/test_chain.py": TESTS}
    assert _targets(CHAIN_OUTPUT, files) == ["inner", "middle", "outer"]


def test_each_failure_lends_its_innermost_frame_before_any_lends_a_second() -> None:
    files = {"chain.py": CHAIN, "tests/test_chain.py": TESTS}
    assert _targets(TWO_FAILURES, files) == ["middle", "inner", "outer"]
    assert _targets(PYTEST_CHAIN, files) == ["middle", "inner", "outer"]


def test_the_functions_a_failing_frame_calls_join_it() -> None:
    files = {"curry.py": CURRY, "tests/test_curry.py": TESTS}
    assert _targets(CURRY_OUTPUT, files) == ["Curry.__call__", "Curry._should_curry", "normalise"]


def test_a_frame_in_a_test_file_is_shown_read_only_never_as_a_target() -> None:
    read, protected = _repo({"chain.py": CHAIN, "tests/test_chain.py": TESTS})
    context = localise(frames(CHAIN_OUTPUT), read, protected)
    assert [site.path for site in context.tests] == ["tests/test_chain.py"]
    assert all(not site.path.startswith("tests/") for site in context.targets)


OPERATIONS = """\
class Operation:
    def __init__(self, operation):
        self.location = operation["path"]
        self.operation = operation


class Add(Operation):
    def apply(self, document):
        document[self.pointer] = self.operation["value"]
        return document

    def describe(self):
        return "add"
"""

NO_ATTRIBUTE = """\
Traceback (most recent call last):
  File "/workspace/tests/test_ops.py", line 7, in test_add
    Add({"path": "a", "value": 1}).apply({})
  File "/workspace/ops.py", line 9, in apply
    document[self.pointer] = self.operation["value"]
AttributeError: 'Add' object has no attribute 'pointer'
"""


def test_a_missing_attribute_shows_where_the_class_should_have_set_it() -> None:
    files = {"ops.py": OPERATIONS, "tests/test_ops.py": TESTS}
    # no method sets ``pointer`` (the statement that did is the bug): the initialiser the
    # class inherits is where it belongs
    assert _targets(NO_ATTRIBUTE, files) == ["Add.apply", "Operation.__init__"]


def test_a_missing_attribute_shows_the_method_that_sets_it() -> None:
    setter = OPERATIONS.replace(
        '        return "add"\n',
        '        return "add"\n\n    def bind(self, p):\n        self.pointer = p\n',
    )
    files = {"ops.py": setter, "tests/test_ops.py": TESTS}
    assert _targets(NO_ATTRIBUTE, files) == ["Add.apply", "Add.bind"]
