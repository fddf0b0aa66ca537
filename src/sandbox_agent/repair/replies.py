"""A model's reply read as code: its fenced blocks, each split at the headers it holds
and dedented; the header a block starts with; a block parsed (``repair.splice`` then
splices the functions of the blocks that parse into the module)."""

from __future__ import annotations

import ast
import re
import textwrap
from typing import NamedTuple

from sandbox_agent.repair.imports import parse

CODE_BLOCK = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*?)```", re.DOTALL)
HEADER = re.compile(
    r"\A\s*#[ \t]*(?P<path>[^,\n]+), lines [0-9]+-[0-9]+"
    r"(?:, in class (?P<owner>[A-Za-z_][A-Za-z0-9_]*))?(?P<rest>[^\n]*)\n"
)
"""The header ``prompts.fenced`` shows a function under (``# path, lines a-b`` and
``, in class Cart`` for a method), which a model often writes back: a block under it is
for that file, and its bare ``def``s are that class's methods."""
OPEN_BLOCK = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*)\Z", re.DOTALL)
HEADER_LINE = re.compile(r"^[ \t]*#[ \t]*[^,\n]+, lines [0-9]+-[0-9]+")


def code_blocks(reply: str) -> list[str]:
    """The fenced code blocks of ``reply``, each split at the headers it holds, dedented;
    a reply of bare code is its own block."""
    blocks = [part for block in CODE_BLOCK.findall(reply) for part in at_headers(block)]
    if blocks:
        return blocks
    if "```" not in reply and parse(dedent(reply)) is not None:
        return [dedent(reply)]
    return []


def at_headers(block: str) -> list[str]:
    """``block`` split before each header line (``HEADER``), each part dedented on its
    own: a model writes several functions shown under their headers in one block, an
    import at column 0 before a method indented as in its class."""
    parts: list[list[str]] = [[]]
    for line in block.splitlines(keepends=True):
        if HEADER_LINE.match(line) and any(text.strip() for text in parts[-1]):
            parts.append([])
        parts[-1].append(line)
    return [dedent("".join(part)) for part in parts if any(text.strip() for text in part)]


def dedent(code: str) -> str:
    """``code`` without the margin its code lines share. Unlike ``textwrap.dedent``, a
    comment line does not count: the prompt shows a method indented as in its class under
    a header comment at column 0, and a model writes it back the same way. A comment left
    of the margin is moved to it."""
    lines = code.splitlines(keepends=True)
    margins = [
        indent_of(line) for line in lines if line.strip() and not line.lstrip().startswith("#")
    ]
    margin = min(margins, key=len, default="")
    while not all(other.startswith(margin) for other in margins):
        margin = margin[:-1]  # tabs and spaces mixed: only what every line shares
    if not margin:
        return textwrap.dedent(code)
    return "".join(
        line[len(margin) :] if line.startswith(margin) else line.lstrip(" \t") for line in lines
    )


class Header(NamedTuple):
    path: str
    owner: str | None


def header(code: str) -> Header | None:
    """The header comment ``code`` starts with (``HEADER``), if it has one."""
    found = HEADER.match(code)
    return Header(found["path"].strip(), found["owner"]) if found else None


def nearest(code: str, line: int) -> str:
    lines = code.splitlines()
    low, high = max(line - 3, 0), min(line + 1, len(lines))
    return "\n".join(f"{n + 1:4d} | {lines[n]}" for n in range(low, high))


CLASS_TYPE_PARAMS = re.compile(
    r"^(?P<head>[ \t]*class[ \t]+[A-Za-z_][A-Za-z0-9_]*)\[[^\]\n]*\](?=[ \t]*[(:])", re.MULTILINE
)
"""A class header with type parameters (``class Paginator[T]:``, Python 3.12's syntax),
which small models write and Python 3.11 does not parse."""


QUALIFIED_DEF = re.compile(
    r"\A(?P<kw>(?:async[ \t]+)?def[ \t]+)(?P<owner>[A-Za-z_][A-Za-z0-9_]*)\."
    r"(?=[A-Za-z_][A-Za-z0-9_]*[ \t]*\()"
)
"""A method written under its qualified name at column 0 (``def Cart.total(self):``),
as a small model writes the "method `Cart.total`" it is asked for: not Python, plain in
what it means."""


def parsed(code: str) -> tuple[str, ast.Module]:
    """``code`` parsed; when it does not parse, the same loosened: its class headers' type
    parameters dropped (a method is taken from the class's body, never its header), then
    its qualified ``def``s each put in a class of that name (``as_methods``).

    Raises:
        SyntaxError: none parses (the first error); UNPARSABLE's errors as they come.
    """
    try:
        return code, ast.parse(code)
    except SyntaxError as first:
        typeless = CLASS_TYPE_PARAMS.sub(r"\g<head>", code)
        for loose in dict.fromkeys([typeless, as_methods(typeless)]):
            if loose == code:
                continue
            try:
                return loose, ast.parse(loose)
            except SyntaxError:
                continue
        raise first from None


def as_methods(code: str) -> str:
    """``code`` with each ``def Owner.name(`` at column 0 (``QUALIFIED_DEF``) written as
    ``def name(`` in a ``class Owner:`` of its own, with its decorators and body."""
    out: list[str] = []
    inside = False
    for line in code.splitlines(keepends=True):
        if found := QUALIFIED_DEF.match(line):
            decorators: list[str] = []
            while out and out[-1].startswith("@"):
                decorators.insert(0, out.pop())
            out += [f"class {found['owner']}:\n", *("    " + d for d in decorators)]
            out.append("    " + found["kw"] + line[found.end() :])
            inside = True
        elif inside and (not line.strip() or line[0] in " \t#)"):  # ``) -> int:`` too
            out.append("    " + line if line.strip() else line)
        else:
            inside = False
            out.append(line)
    return "".join(out)


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]
