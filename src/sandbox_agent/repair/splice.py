"""A model's reply -> whole functions -> the module with them replaced -> one edit.

Small models write a whole function in a plain code block far more reliably than an
exact ``old`` text inside JSON (issue 29). The controller splices it in by name with
``ast``: the function of the same name is replaced (a method by its qualified name when
the reply writes its class, re-indented), new helper functions are added after it (new
methods of the class after the method), imports the module lacks are added after its
imports. A reply is refused, with a message that shows where, when it has no code,
is cut off, does not parse, defines none of the functions asked for, or changes
nothing. The change then goes through ``apply_patch`` like any edit (``repair.edits``).
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable
from typing import Literal, NamedTuple

from sandbox_agent.repair.imports import UNPARSABLE, parse
from sandbox_agent.repair.localise import Site
from sandbox_agent.repair.replies import (
    OPEN_BLOCK,
    code_blocks,
    header,
    indent_of,
    nearest,
    parsed,
)

RefusalCode = Literal["no_code", "cut_off", "syntax", "wrong_function", "no_change"]

UNCHANGED = "the code is the same as the code it would replace"
"""Why a reply that writes the code shown back as it was is refused (``no_change``)."""
UNPARSABLE_MODULE = "the module to change does not parse as it stands"
"""Why no reply can change a module that does not parse (``no_change`` too: no reply
could have done better, so it is not the model's invalid output)."""


class Refused(Exception):
    """The reply cannot become a candidate; ``message`` says why, for the model."""

    def __init__(self, code: RefusalCode, message: str) -> None:
        super().__init__(message)
        self.code: RefusalCode = code
        self.message = message


class Spliced(NamedTuple):
    text: str
    """The module with the reply's functions in it."""
    functions: tuple[str, ...]
    """The functions replaced or added, by name."""
    code: str
    """The code block the functions came from."""


def _top_defs(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.setdefault(item.name, item)
    return found


def _class_defs(
    tree: ast.Module, owner: str | None = None
) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The methods of the reply's top-level classes, by ``Class.method``; with ``owner``
    (the block's header class), its top-level functions as that class's methods too."""
    found = {
        f"{node.name}.{item.name}": item
        for node in reversed(tree.body)
        if isinstance(node, ast.ClassDef)
        for item in reversed(node.body)
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    if owner is not None:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.setdefault(f"{owner}.{node.name}", node)
    return found


def _new_methods(
    tree: ast.Module, module_tree: ast.Module, owner: str, names: set[str]
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The methods the reply's ``class owner`` adds: neither targets nor in the module's."""
    kept = [
        item.name
        for node in module_tree.body
        if isinstance(node, ast.ClassDef) and node.name == owner
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for item in node.body:
                if not isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                if item.name not in names and item.name not in kept:
                    found.setdefault(item.name, item)
    return list(found.values())


class Block(NamedTuple):
    """One usable code block of a reply."""

    code: str
    tree: ast.Module
    owner: str | None
    """The class its header names: its bare ``def``s are that class's methods."""

    @property
    def lines(self) -> list[str]:
        return self.code.splitlines(keepends=True)


def usable_blocks(
    reply: str, names: set[str], path: str = "", *, truncated: bool = False
) -> list[Block]:
    """The code blocks of ``reply`` that parse and define one of ``names``, in order (a
    model often writes back every function it was shown, each under its header, changing
    one). Blocks whose header names a file other than ``path`` count only when no other
    block does (a header written back a little differently must not lose the code).

    Raises:
        Refused: the reply has no such block (the code says which way the last fails).
    """
    blocks = code_blocks(reply)
    if not blocks:
        if truncated or OPEN_BLOCK.search(reply):
            raise Refused("cut_off", "the reply was cut off before its code block ended")
        raise Refused("no_code", "the reply has no ```python code block")
    here: list[Block] = []
    elsewhere: list[Block] = []
    imports: list[Block] = []
    problem: Refused | None = None
    for block_code in reversed(blocks):
        code = block_code
        try:
            code, tree = parsed(block_code)
        except SyntaxError as error:
            where = nearest(code, error.lineno or 1)
            problem = problem or Refused(
                "syntax", f"the code does not parse: {error.msg} at line {error.lineno}:\n{where}"
            )
            continue
        except UNPARSABLE as error:  # nested past the parser, a lone surrogate (SR-13 F2)
            problem = problem or Refused(
                "syntax", f"the code does not parse: {type(error).__name__}"
            )
            continue
        defined = _top_defs(tree)
        if tree.body and all(isinstance(node, ast.Import | ast.ImportFrom) for node in tree.body):
            imports.append(Block(code, tree, None))  # what the functions of the reply need
            continue
        if names & set(defined):
            shown = header(code)
            block = Block(code, tree, shown.owner if shown else None)
            other = shown is not None and bool(path) and shown.path != path
            (elsewhere if other else here).append(block)
            continue
        problem = problem or Refused(
            "wrong_function",
            f"the code defines {', '.join(sorted(defined)) or 'no function'}; "
            f"the function to fix is {', '.join(sorted(names))}: keep its name",
        )
    usable = here or elsewhere
    if usable:
        return [*imports, *usable][::-1]
    assert problem is not None  # noqa: S101 - at least one block was looked at
    raise problem


def _source(code_lines: list[str], node: ast.AST, indent: str) -> list[str]:
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)  # noqa: S101
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    lines = code_lines[start - 1 : node.end_lineno]
    body = textwrap.dedent("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    return [indent + line if line.strip() else line for line in body.splitlines(keepends=True)]


def _import_lines(tree: ast.Module, code_lines: list[str], module: str) -> list[str]:
    have = {" ".join(line.split()) for line in module.splitlines()}
    wanted: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom) and node.end_lineno == node.lineno:
            line = code_lines[node.lineno - 1].strip()
            if " ".join(line.split()) not in have:
                wanted.append(line + "\n")
    return wanted


def _after_imports(tree: ast.Module) -> int:
    """The 0-based line after the module's leading docstring and imports."""
    last = 0
    for index, node in enumerate(tree.body):
        is_doc = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if is_doc or isinstance(node, ast.Import | ast.ImportFrom):
            last = node.end_lineno or node.lineno
        else:
            break
    return last


Piece = tuple["ast.FunctionDef | ast.AsyncFunctionDef", list[str]]
"""A function of the reply and the lines of the block it is in."""


def _pieces(
    blocks: list[Block],
    found: Callable[[Block], dict[str, ast.FunctionDef | ast.AsyncFunctionDef]],
) -> dict[str, Piece]:
    """What ``found`` finds in each block, by name, a later block's over an earlier one's."""
    return {name: (node, block.lines) for block in blocks for name, node in found(block).items()}


def splice(module: str, targets: list[Site], reply: str, *, truncated: bool = False) -> Spliced:
    """``module`` with ``targets`` (functions of that module) replaced by the reply's: from
    every usable block (``usable_blocks``), a later block's function over an earlier one's.

    Raises:
        Refused: the reply cannot become a candidate for these targets.
    """
    names = {site.name for site in targets}
    path = targets[0].path if targets else ""
    blocks = usable_blocks(reply, names, path, truncated=truncated)
    module_tree = parse(module)
    if module_tree is None:
        raise Refused("no_change", UNPARSABLE_MODULE)
    lines = module.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    existing = {node.name for node in module_tree.body if isinstance(node, ast.FunctionDef)}
    defined = _pieces(blocks, lambda block: _top_defs(block.tree))
    in_classes = _pieces(blocks, lambda block: _class_defs(block.tree, block.owner))
    shared = {s.name for s in targets if sum(t.name == s.name for t in targets) > 1}
    replaced: list[str] = []
    matched = 0
    grown: set[str] = set()
    for site in sorted(targets, key=lambda s: s.start, reverse=True):
        # a method by its qualname first (``class A:`` then ``def size``); by its own
        # name only when no other target has that name
        piece = in_classes.get(site.qualname) or (
            defined.get(site.name) if site.name not in shared else None
        )
        if piece is None:
            continue
        indent = indent_of(lines[site.start - 1])
        new = _source(piece[1], piece[0], indent)
        matched += 1
        if new != lines[site.start - 1 : site.end]:  # written back unchanged: not counted
            replaced.append(site.name)
        if (owner := site.qualname.rpartition(".")[0]) and owner not in grown:
            grown.add(owner)  # its new methods go after its last method replaced
            extra = _pieces(
                blocks,
                lambda block: {
                    item.name: item for item in _new_methods(block.tree, module_tree, owner, names)
                },
            )
            for item, item_lines in extra.values():
                new += ["\n", *_source(item_lines, item, indent)]
            replaced.extend(extra)
        lines[site.start - 1 : site.end] = new
    if not matched:
        owners = " and ".join(sorted(s.qualname for s in targets if s.name in shared))
        raise Refused("wrong_function", f"write each of {owners} inside its class")
    last_target = max(
        (s for s in targets if s.name in replaced), key=lambda s: s.end, default=targets[-1]
    )
    helpers = _pieces(
        blocks,
        lambda block: {
            node.name: node
            for node in block.tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name not in names
            and node.name not in existing
        },
    )
    if helpers and "." not in last_target.qualname:
        shift = len("".join(lines).splitlines()) - len(module.splitlines())
        at = last_target.end + shift
        added = [
            line
            for node, node_lines in helpers.values()
            for line in ["\n", "\n", *_source(node_lines, node, "")]
        ]
        lines[at:at] = added
        replaced.extend(helpers)
    text = _with_imports(module, module_tree, lines, blocks)
    return Spliced(text, tuple(replaced), "".join(block.code for block in blocks))


def splice_files(
    original: dict[str, str], targets: list[Site], reply: str, truncated: bool = False
) -> tuple[dict[str, str], list[str]]:
    """Every file of ``original`` (path -> text) with its ``targets`` spliced from the
    reply (``splice``), and the functions changed; a file the reply names none of stays.

    Raises:
        Refused: no file took a function; another file's ``wrong_function`` yields to a
            file's own refusal (it says less).
    """
    texts = dict(original)
    functions: list[str] = []
    first: Refused | None = None
    for path in dict.fromkeys(site.path for site in targets):
        mine = [site for site in targets if site.path == path]
        try:
            spliced = splice(original[path], mine, reply, truncated=truncated)
        except Refused as refused:
            if first is None or first.code == "wrong_function":
                first = refused
            continue
        texts[path] = spliced.text
        functions.extend(spliced.functions)
    if not functions:
        assert first is not None  # noqa: S101 - every path was refused
        raise first
    return texts, functions


def _with_imports(
    module: str, module_tree: ast.Module, lines: list[str], blocks: list[Block]
) -> str:
    """``lines`` with the imports the blocks add, joined, checked to differ and parse.

    Raises:
        Refused: the result is the module as it was, or does not parse.
    """
    imports = list(
        dict.fromkeys(
            line for block in blocks for line in _import_lines(block.tree, block.lines, module)
        )
    )
    if imports:
        at = _after_imports(module_tree)
        lines[at:at] = imports
    text = "".join(lines)
    if text == module or (module.endswith("\n") is False and text == module + "\n"):
        raise Refused("no_change", UNCHANGED)
    if parse(text) is None:
        raise Refused("syntax", "the module does not parse with this code in it")
    return text
