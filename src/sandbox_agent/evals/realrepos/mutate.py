"""Small procedural changes to one function, the way SWE-smith makes bugs.

Every site inside a function (or method) of a module, for five kinds of change:

- ``flip_comparison``: ``<`` to ``>=``, ``==`` to ``!=``, ``is`` to ``is not``, ``in``
  to ``not in``, and back;
- ``off_by_one``: an integer in arithmetic, an index, a slice, a comparison or
  ``range()`` becomes one more;
- ``swap_arguments``: the first two positional arguments of a call, when both are
  simple (names, attributes, constants, subscripts) and differ;
- ``remove_statement``: an expression, assignment or ``raise`` statement in a block of
  two or more becomes ``pass``;
- ``change_constant``: ``True``/``False`` flipped, another integer constant changed.

The module is only parsed (``ast``) and the change made as text at the node's exact
place, so the rest of the file keeps every byte. Order is the file's; the generator
shuffles with its seed.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from sandbox_agent.evals.realrepos.taskfile import MutationKind

_FLIPS: dict[type[ast.cmpop], str] = {
    ast.Lt: ">=",
    ast.LtE: ">",
    ast.Gt: "<=",
    ast.GtE: "<",
    ast.Eq: "!=",
    ast.NotEq: "==",
    ast.Is: "is not",
    ast.IsNot: "is",
    ast.In: "not in",
    ast.NotIn: "in",
}
_OPERATOR = re.compile(r"not\s+in\b|is\s+not\b|<=|>=|==|!=|<|>|\bin\b|\bis\b")
_SIMPLE = (ast.Name, ast.Attribute, ast.Constant, ast.Subscript)
_REMOVABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise)


class Mutation(NamedTuple):
    kind: MutationKind
    function: str
    """The qualified name of the function it is in (``Class.method``)."""
    line: int
    start: int
    """Character offsets of the replaced text in the module."""
    end: int
    replacement: str

    def apply(self, source: str) -> str:
        return source[: self.start] + self.replacement + source[self.end :]


class _Offsets:
    """ast's (line, UTF-8 byte column) -> a character offset in the text."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, column: int) -> int:
        text = self.lines[line - 1].encode("utf-8")[:column].decode("utf-8", errors="ignore")
        return self.starts[line - 1] + len(text)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.at(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.at(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )


def _docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


class _Finder(ast.NodeVisitor):
    def __init__(self, source: str) -> None:
        self.source = source
        self.offsets = _Offsets(source)
        self.scope: list[str] = []
        self.functions = 0
        self.found: list[Mutation] = []
        self.parents: dict[int, ast.AST] = {}

    def _add(self, kind: MutationKind, node: ast.AST, start: int, end: int, text: str) -> None:
        if self.functions and self.source[start:end] != text:
            self.found.append(
                Mutation(kind, ".".join(self.scope), node.lineno, start, end, text)  # type: ignore[attr-defined]
            )

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.parents[id(child)] = node
        super().generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.functions += 1
        for statement in node.body:
            self.parents[id(statement)] = node
            self.visit(statement)
        self._blocks(node)
        self.functions -= 1
        self.scope.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _blocks(self, function: ast.AST) -> None:
        for node in ast.walk(function):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if not isinstance(block, list) or len(block) < 2:
                    continue
                if isinstance(node, ast.ClassDef) or (
                    node is not function
                    and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                ):
                    continue
                for statement in block:
                    if isinstance(statement, _REMOVABLE) and not _docstring(statement):
                        start, end = self.offsets.span(statement)
                        self._add("remove_statement", statement, start, end, "pass")

    def visit_Compare(self, node: ast.Compare) -> None:
        if len(node.ops) == 1 and type(node.ops[0]) in _FLIPS:
            left_end = self.offsets.span(node.left)[1]
            right_start = self.offsets.span(node.comparators[0])[0]
            between = self.source[left_end:right_start]
            match = _OPERATOR.search(between)
            if match is not None:
                start, end = left_end + match.start(), left_end + match.end()
                self._add("flip_comparison", node, start, end, _FLIPS[type(node.ops[0])])
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        start, end = self.offsets.span(node)
        value = node.value
        if isinstance(value, bool):
            self._add("change_constant", node, start, end, str(not value))
        elif isinstance(value, int) and self.source[start:end].isdigit():
            parent = self.parents.get(id(node))
            counting = isinstance(parent, ast.BinOp | ast.Compare | ast.Subscript | ast.Slice) or (
                isinstance(parent, ast.Call)
                and isinstance(parent.func, ast.Name)
                and parent.func.id == "range"
            )
            if counting:
                self._add("off_by_one", node, start, end, str(value + 1))
            else:
                self._add(
                    "change_constant",
                    node,
                    start,
                    end,
                    str(1 - value if value in (0, 1) else 2 * value),
                )

    def visit_Call(self, node: ast.Call) -> None:
        args = node.args
        if (
            len(args) >= 2
            and isinstance(args[0], _SIMPLE)
            and isinstance(args[1], _SIMPLE)
            and not any(isinstance(arg, ast.Starred) for arg in args[:2])
        ):
            (a_start, a_end), (b_start, b_end) = (
                self.offsets.span(args[0]),
                self.offsets.span(args[1]),
            )
            first, second = self.source[a_start:a_end], self.source[b_start:b_end]
            if first != second:
                between = self.source[a_end:b_start]
                self._add("swap_arguments", node, a_start, b_end, second + between + first)
        self.generic_visit(node)


def mutations(source: str) -> list[Mutation]:
    """Every candidate change of ``source`` whose result still compiles, in file order.

    Raises:
        SyntaxError: ``source`` itself does not parse.
    """
    finder = _Finder(source)
    finder.visit(ast.parse(source))
    unique = sorted(set(finder.found), key=lambda m: (m.start, m.end, m.kind, m.replacement))
    kept = []
    for mutation in unique:
        try:
            compile(mutation.apply(source), "<mutated>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        kept.append(mutation)
    return kept
