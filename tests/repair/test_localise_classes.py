"""Localisation through a package's re-exports, and into the classes a test imports
(issue 29): what a real project's tests import is mostly a class, from a package whose
``__init__`` re-exports it."""

from __future__ import annotations

import pytest

from sandbox_agent import prompts
from sandbox_agent.repair.failures import Frame
from sandbox_agent.repair.imports import MAX_REEXPORT_DEPTH
from sandbox_agent.repair.localise import MAX_TARGETS, Site, imported_targets, localise
from sandbox_agent.repair.splice import splice

CORE = '''\
"""Pages of a list."""


class Paginator:
    def __init__(self, items, per_page=10):
        self.items = list(items)
        self.per_page = per_page

    def __len__(self):
        return len(self.items)

    @property
    def page_count(self):
        return len(self.items) // self.per_page

    def page(self, number):
        start = (number - 1) * self.per_page
        return self.items[start : start + self.per_page]

    def pages(self):
        return [self.page(n) for n in range(1, self.page_count + 1)]


def helper():
    return 1
'''

TESTS = """\
import unittest

from paginator import Paginator


class PaginatorTests(unittest.TestCase):
    def setUp(self):
        self.paginator = Paginator(range(10), per_page=3)

    def test_page_count(self):
        self.assertEqual(self.paginator.page_count, 4)

    def test_page(self):
        self.assertEqual(self.paginator.page(2), [3, 4, 5])
"""
TEST_FRAMES = [Frame("tests/test_paginator.py", 11, "test_page_count")]


def _read(files: dict[str, str]):  # type: ignore[no-untyped-def]
    return files.get


def _protected(path: str) -> bool:
    return path.startswith("tests/") or path.rsplit("/", 1)[-1].startswith("test")


def _targets(files: dict[str, str], test: str = "tests/test_paginator.py") -> list[tuple[str, str]]:
    return imported_targets(files[test], files.get, _protected, test)


@pytest.mark.parametrize(
    "init",
    [
        "from .core import Paginator\n",
        "from paginator.core import Paginator\n",
        "from .core import *\n",
        "from .core import Paginator as Paginator\n\n__all__ = ['Paginator']\n",
        "try:\n    from ._fast import Paginator\n"
        "except ImportError:\n    from .core import Paginator\n",
    ],
)
def test_a_re_export_is_followed_to_the_defining_module(init: str) -> None:
    files = {
        "paginator/__init__.py": init,
        "paginator/core.py": CORE,
        "tests/test_paginator.py": TESTS,
    }
    assert _targets(files) == [("paginator/core.py", "Paginator")]


def test_relative_levels_resolve_against_the_module_package_and_src_layouts_are_found() -> None:
    files = {
        "src/shop/__init__.py": "from .views.api import Paginator\n",
        "src/shop/views/__init__.py": "",
        "src/shop/views/api.py": "from ..core import Paginator\n",
        "src/shop/core.py": CORE,
        "tests/test_shop.py": "from shop import Paginator as P\n",
    }
    assert _targets(files, "tests/test_shop.py") == [("src/shop/core.py", "Paginator")]


def test_following_is_bounded_stops_at_protected_modules_and_survives_a_cycle() -> None:
    chain = {f"m{n}.py": f"from m{n + 1} import f\n" for n in range(MAX_REEXPORT_DEPTH + 1)}
    chain[f"m{MAX_REEXPORT_DEPTH + 1}.py"] = "def f():\n    return 1\n"
    chain["tests/test_a.py"] = "from m0 import f\n"
    assert _targets(chain, "tests/test_a.py") == []
    short = {**chain, "tests/test_a.py": "from m1 import f\n"}
    assert _targets(short, "tests/test_a.py") == [(f"m{MAX_REEXPORT_DEPTH + 1}.py", "f")]
    cycle = {
        "a.py": "from b import f\n",
        "b.py": "from a import f\n",
        "tests/test_a.py": "from a import f\n",
    }
    assert _targets(cycle, "tests/test_a.py") == []
    hidden = {"a.py": "from tests.helpers import f\n", "tests/helpers.py": "def f(): pass\n"}
    assert _targets({**hidden, "tests/test_a.py": "from a import f\n"}, "tests/test_a.py") == []


def test_an_imported_class_offers_the_methods_the_failing_test_mentions() -> None:
    files = {"paginator/__init__.py": "from .core import Paginator\n", "paginator/core.py": CORE,
             "tests/test_paginator.py": TESTS}  # fmt: skip
    context = localise(TEST_FRAMES, files.get, _protected)
    assert [s.qualname for s in context.tests] == ["PaginatorTests.test_page_count"]
    # the attribute the failing test reads first (a property), then the constructor its
    # setUp calls; not `page`, which only a passing test mentions
    assert [(s.path, s.qualname) for s in context.targets] == [
        ("paginator/core.py", "Paginator.page_count"),
        ("paginator/core.py", "Paginator.__init__"),
    ]
    assert context.targets[0].source.startswith("    @property\n    def page_count(self):")


def test_a_class_no_failing_test_mentions_offers_its_methods_in_source_order() -> None:
    tests = "from paginator.core import Paginator\n\ndef test_it(p):\n    assert p\n"
    files = {"paginator/__init__.py": "", "paginator/core.py": CORE, "tests/test_p.py": tests}
    context = localise([Frame("tests/test_p.py", 4, "test_it")], files.get, _protected)
    assert [s.qualname for s in context.targets] == [
        "Paginator.__init__",
        "Paginator.__len__",
        "Paginator.page_count",
    ][:MAX_TARGETS]


def test_implied_methods_and_inherited_ones_count() -> None:
    base = (
        "class Base:\n    def __len__(self):\n        return 0\n\n"
        "    def first(self):\n        return None\n"
    )
    sub = "from .base import Base\n\nclass Stack(Base):\n    def push(self, x):\n        pass\n"
    tests = (
        "from stack import Stack\n\ndef test_it():\n    s = Stack()\n"
        "    assert s.first() == 1 and len(s) == 1\n"
    )
    files = {"stack/__init__.py": "from .sub import Stack\n", "stack/sub.py": sub,
             "stack/base.py": base, "tests/test_s.py": tests}  # fmt: skip
    context = localise([Frame("tests/test_s.py", 5, "test_it")], files.get, _protected)
    assert [(s.path, s.qualname) for s in context.targets] == [
        ("stack/base.py", "Base.first"),
        ("stack/base.py", "Base.__len__"),
    ]


def test_imported_functions_the_failing_test_uses_come_first() -> None:
    tests = "from calc import mean, total\n\ndef test_total():\n    assert total([1]) == 1\n"
    calc = "def mean(xs):\n    return 0\n\ndef total(xs):\n    return 0\n"
    files = {"calc.py": calc, "tests/test_calc.py": tests}
    context = localise([Frame("tests/test_calc.py", 4, "test_total")], files.get, _protected)
    assert [s.qualname for s in context.targets] == ["total", "mean"]


def test_a_module_import_offers_the_functions_used_through_it() -> None:
    tests = "import calc.stats as st\n\ndef test_total():\n    assert st.total([1]) == 1\n"
    calc = "def mean(xs):\n    return 0\n\ndef total(xs):\n    return 0\n"
    files = {"calc/__init__.py": "", "calc/stats.py": calc, "tests/test_calc.py": tests}
    context = localise([Frame("tests/test_calc.py", 4, "test_total")], files.get, _protected)
    assert [s.qualname for s in context.targets] == ["total"]


def test_a_method_is_spliced_back_by_its_qualname() -> None:
    files = {"paginator/__init__.py": "from .core import Paginator\n", "paginator/core.py": CORE,
             "tests/test_paginator.py": TESTS}  # fmt: skip
    targets = list(localise(TEST_FRAMES, files.get, _protected).targets)
    reply = (
        "```python\nclass Paginator:\n    @property\n    def page_count(self):\n"
        "        return -(-len(self.items) // self.per_page)\n```"
    )
    spliced = splice(CORE, targets, reply)
    assert spliced.functions == ("page_count",)
    assert "    @property\n    def page_count(self):\n        return -(-len(" in spliced.text
    assert spliced.text.count("@property") == 1
    assert "def __init__(self, items, per_page=10):" in spliced.text
    assert prompts.what_to_write(s.qualname for s in targets) == (
        "methods `Paginator.page_count` and `Paginator.__init__`"
    )


def test_methods_of_the_same_name_in_two_classes_are_told_apart() -> None:
    module = (
        "class A:\n    def size(self):\n        return 0\n\n\n"
        "class B:\n    def size(self):\n        return 0\n"
    )
    from sandbox_agent.repair.localise import function_named

    sites = [function_named("m.py", module, "A.size"), function_named("m.py", module, "B.size")]
    reply = (
        "```python\nclass A:\n    def size(self):\n        return 1\n\n"
        "class B:\n    def size(self):\n        return 2\n```"
    )
    spliced = splice(module, [s for s in sites if s is not None], reply)
    assert "class A:\n    def size(self):\n        return 1\n" in spliced.text
    assert "class B:\n    def size(self):\n        return 2\n" in spliced.text


def test_what_to_write_names_functions_and_methods() -> None:
    assert prompts.what_to_write(["f"]) == "function `f`"
    assert prompts.what_to_write(["A.m"]) == "method `A.m`"
    assert prompts.what_to_write(["f", "A.m"]) == "functions `f` and `A.m`"


def test_a_new_method_of_the_class_goes_after_the_method_replaced() -> None:
    from sandbox_agent.repair.localise import function_named

    site = function_named("paginator/core.py", CORE, "Paginator.page_count")
    assert site is not None
    reply = (
        "```python\nclass Paginator:\n    def __len__(self):\n        return 0\n\n"
        "    @property\n    def page_count(self):\n        return self._ceil(len(self.items))\n\n"
        "    def _ceil(self, n):\n        return -(-n // self.per_page)\n```"
    )
    spliced = splice(CORE, [site], reply)
    assert spliced.functions == ("page_count", "_ceil")
    assert (
        "        return self._ceil(len(self.items))\n\n"
        "    def _ceil(self, n):\n        return -(-n // self.per_page)\n\n    def page(self"
    ) in spliced.text
    assert "return len(self.items)\n" in spliced.text  # __len__ was no target: kept


def test_a_method_written_back_as_the_prompt_showed_it_is_spliced_into_its_class() -> None:
    # The prompt shows a method under a header comment at column 0, indented as in its
    # class (prompts.fenced); a small model answers in the same shape. That did not parse
    # ("unexpected indent": textwrap.dedent counts the comment's margin), and a bare
    # ``def size`` could not tell two classes' ``size`` apart: the header names the class.
    from sandbox_agent.repair.localise import function_named

    module = (
        "class A:\n    def size(self):\n        return 0\n\n\n"
        "class B:\n    def size(self):\n        return 0\n"
    )
    sites = [function_named("m.py", module, name) for name in ("A.size", "B.size")]
    targets = [site for site in sites if site is not None]
    shown = prompts.fenced(targets[1].header(), targets[1].source)
    assert shown.startswith("```python\n# m.py, lines 7-8, in class B\n    def size(self):")
    reply = shown.replace("return 0", "return 2")
    spliced = splice(module, targets, "Here is the fix:\n" + reply)
    assert spliced.text == (
        "class A:\n    def size(self):\n        return 0\n\n\n"
        "class B:\n    def size(self):\n        return 2\n"
    )


def test_a_comment_at_the_margin_inside_a_method_does_not_stop_the_dedent() -> None:
    from sandbox_agent.repair.localise import function_named

    site = function_named("paginator/core.py", CORE, "Paginator.page_count")
    assert site is not None
    reply = (
        "```python\n    @property\n    def page_count(self):\n# round up\n"
        "        return -(-len(self.items) // self.per_page)\n```"
    )
    spliced = splice(CORE, [site], reply)
    assert "    def page_count(self):\n" in spliced.text
    assert "        return -(-len(self.items) // self.per_page)\n" in spliced.text


def _two_targets() -> list[Site]:
    from sandbox_agent.repair.localise import function_named

    sites = [
        function_named("paginator/core.py", CORE, name)
        for name in ("Paginator.page_count", "Paginator.__init__")
    ]
    return [site for site in sites if site is not None]


def test_a_reply_that_writes_back_every_function_shown_gives_the_one_it_changed() -> None:
    # A model often answers with every function it was shown, each under its header,
    # one of them changed: the last block alone (unchanged) was "the same as the code".
    targets = _two_targets()
    blocks = [prompts.fenced(site.header(), site.source) for site in targets]
    changed = blocks[0].replace(
        "return len(self.items) // self.per_page", "return -(-len(self.items) // self.per_page)"
    )
    assert changed != blocks[0]
    spliced = splice(CORE, targets, f"Fixed:\n{changed}\nand unchanged:\n{blocks[1]}")
    assert "        return -(-len(self.items) // self.per_page)\n" in spliced.text
    assert spliced.text.count("def __init__(self, items, per_page=10):") == 1
    assert spliced.functions == ("page_count",)  # both written back, one changed


def test_a_block_under_another_files_header_gives_way_to_one_for_this_file() -> None:
    targets = _two_targets()
    test_block = prompts.fenced(
        "tests/test_paginator.py, lines 8-9, in class Paginator (read-only)",
        "    def __init__(self, items, per_page=10):\n        pass\n",
    )
    mine = prompts.fenced(targets[0].header(), targets[0].source).replace(
        "return len(self.items) // self.per_page", "return 0"
    )
    spliced = splice(CORE, targets, test_block + mine)
    assert spliced.functions == ("page_count",)
    assert "        self.items = list(items)\n" in spliced.text  # not the test file's
    # alone, it is still the reply's code (a header written back a little differently)
    assert splice(CORE, targets, test_block).functions == ("__init__",)


def test_an_import_before_a_method_under_its_header_in_one_block_is_split_off() -> None:
    # The shape of a real reply (the 10-task set): ``import math`` at column 0, then the
    # method under its header, indented as in its class, in one block ("unexpected indent").
    targets = _two_targets()
    method = prompts.fenced(targets[0].header(), targets[0].source).replace(
        "return len(self.items) // self.per_page",
        "return math.ceil(len(self.items) / self.per_page)",
    )
    reply = method.replace("```python\n", "```python\nimport math\n\n", 1)
    spliced = splice(CORE, targets, reply)
    assert spliced.functions == ("page_count",)
    assert "        return math.ceil(len(self.items) / self.per_page)\n" in spliced.text
    assert "import math\n" in spliced.text
