"""Which methods of an imported class a failing test points at (issue 29).

A test that fails on ``self.assertEqual(cart.total, 4)`` names no frame in the code: the
names it reads are the clue. In order:

0. methods whose names the failing test (and its class's ``setUp``) reads as attributes
   (``cart.total``, ``cart.add(...)``; a ``@property`` counts);
1. methods its syntax calls without naming: ``__init__`` when it calls the class,
   ``__len__`` for ``len(cart)``, ``__getitem__`` for ``cart[0]``, ``__eq__`` for ``==``...;
2. the methods those call on ``self`` (``self._price()``, ``self.count``).

Methods come from the class, then from the bases it names that resolve to editable
classes (``repair.imports``), a method a subclass overrides once.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import NamedTuple

from sandbox_agent.repair.imports import MAX_REEXPORT_DEPTH, Definition, Resolver, dotted

SETUPS = ("setUp", "setUpClass", "asyncSetUp", "setup_method", "setup_class")
"""What runs before a test method of its class, and so is part of what it reads."""
BUILTIN_DUNDERS = {
    "len": "__len__",
    "iter": "__iter__",
    "next": "__next__",
    "str": "__str__",
    "repr": "__repr__",
    "bool": "__bool__",
    "hash": "__hash__",
    "reversed": "__reversed__",
    "abs": "__abs__",
    "format": "__format__",
}
OPERATOR_DUNDERS: dict[type[ast.AST], str] = {
    ast.Eq: "__eq__",
    ast.NotEq: "__ne__",
    ast.Lt: "__lt__",
    ast.LtE: "__le__",
    ast.Gt: "__gt__",
    ast.GtE: "__ge__",
    ast.In: "__contains__",
    ast.NotIn: "__contains__",
    ast.Add: "__add__",
    ast.Sub: "__sub__",
    ast.Mult: "__mul__",
    ast.Div: "__truediv__",
    ast.FloorDiv: "__floordiv__",
    ast.Mod: "__mod__",
}


FALLBACK = 4
"""The rank of every method of a class the failing test points at none of."""


class Mentions(NamedTuple):
    """What some code reads: attribute names, dotted references, calls, implied dunders."""

    attributes: frozenset[str]
    references: frozenset[str]
    called: frozenset[str]
    implied: frozenset[str]


def mentions(nodes: Iterable[ast.AST]) -> Mentions:
    attributes: set[str] = set()
    references: set[str] = set()
    called: set[str] = set()
    implied: set[str] = set()
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Attribute):
                attributes.add(node.attr)
            if isinstance(node, ast.Name | ast.Attribute) and (name := dotted(node)):
                references.add(name)
            if isinstance(node, ast.Call) and (name := dotted(node.func)):
                called.add(name)
                if name in BUILTIN_DUNDERS:
                    implied.add(BUILTIN_DUNDERS[name])
            elif isinstance(node, ast.Subscript):
                implied.add(
                    {ast.Store: "__setitem__", ast.Del: "__delitem__"}.get(
                        type(node.ctx), "__getitem__"
                    )
                )
            elif isinstance(node, ast.For | ast.comprehension):
                implied.add("__iter__")
            elif isinstance(node, ast.With):
                implied.update(("__enter__", "__exit__"))
            elif isinstance(node, ast.Compare):
                implied.update(
                    OPERATOR_DUNDERS[type(op)] for op in node.ops if type(op) in OPERATOR_DUNDERS
                )
            elif isinstance(node, ast.BinOp) and type(node.op) in OPERATOR_DUNDERS:
                implied.add(OPERATOR_DUNDERS[type(node.op)])
    return Mentions(
        frozenset(attributes), frozenset(references), frozenset(called), frozenset(implied)
    )


class Method(NamedTuple):
    path: str
    qualname: str
    """``Class.method``, the class being the one that defines it (a base, maybe)."""
    node: ast.FunctionDef | ast.AsyncFunctionDef

    @property
    def name(self) -> str:
        return self.node.name


def methods(cls: Definition, resolver: Resolver, depth: int = 0) -> list[Method]:
    """The class's methods in source order, then its bases' it does not override."""
    assert isinstance(cls.node, ast.ClassDef)  # noqa: S101 - callers pass classes
    own = [
        Method(cls.path, f"{cls.name}.{item.name}", item)
        for item in cls.node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    if depth < MAX_REEXPORT_DEPTH:
        for base in cls.node.bases:
            name = dotted(base)
            where = resolver.find(cls.path, name) if name and "." not in name else None
            if where is not None and isinstance(where.node, ast.ClassDef):
                own.extend(methods(where, resolver, depth + 1))
    first: dict[str, Method] = {}
    for method in own:  # a property's setter, an override: the first one stands
        first.setdefault(method.name, method)
    return list(first.values())


def ranked(
    cls: Definition, local: str, seen: Mentions, resolver: Resolver
) -> list[tuple[int, Method]]:
    """The class's methods the failing test points at, each with its rank (the module
    docstring); every method, in source order and ranked ``FALLBACK``, when it points
    at none."""
    every = methods(cls, resolver)
    implied = seen.implied | ({"__init__", "__new__"} if local in seen.called else set())
    picked: dict[str, tuple[int, Method]] = {}
    for rank, names in ((0, seen.attributes), (1, implied)):
        for method in every:
            if method.name in names:
                picked.setdefault(method.name, (rank, method))
    called = mentions(method.node for _, method in picked.values())
    for method in every:
        if f"self.{method.name}" in called.references:
            picked.setdefault(method.name, (2, method))
    if not picked:
        return [(FALLBACK, method) for method in every]
    order = {method.name: index for index, method in enumerate(every)}
    return sorted(picked.values(), key=lambda item: (item[0], order[item[1].name]))
