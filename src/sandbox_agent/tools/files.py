"""The three reading tools: ``list_files``, ``read_file``, ``search``. Each result is bounded."""

from __future__ import annotations

import time
from typing import Any

import re2

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied
from sandbox_agent.tools.contracts import ListFilesArgs, ReadFileArgs, SearchArgs
from sandbox_agent.tools.limits import ToolLimits
from sandbox_agent.workspace.safefs import SafeFS

RE2_MAX_MEM = 8 * 1024 * 1024
"""Memory RE2 may use for one compiled pattern; a larger program is a bad pattern."""
MAX_LINE_WORK = 1 << 27
"""Characters of one line times instructions of the program, at most. RE2 is linear in
the text, but when its DFA gives up (a pattern like ``a[ab]{999}c``) each character costs
one step per instruction (~10 ns): one 1 MiB line could hold a call for a minute, and
one C call cannot be interrupted. Longer lines are skipped (the result is truncated)."""

ToolResult = tuple[str, dict[str, Any]]
"""A one-line message and the bounded result payload."""


def decode_text(content: bytes, path: str) -> str:
    """UTF-8 text of a file, or ``path.not_text`` for binary (NUL bytes) or other encodings.

    Raises:
        ToolDenied: ``path.not_text``.
    """
    if b"\x00" in content:
        raise ToolDenied(denials.PATH_NOT_TEXT, f"'{path}' is binary; only text files are read")
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolDenied(denials.PATH_NOT_TEXT, f"'{path}' is not UTF-8 text") from None


def lines_of(text: str) -> list[str]:
    """Lines split on ``\n`` only, as editors and ``apply_patch`` see them."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def cut(line: str, limit: int) -> str:
    """``line`` cut to ``limit`` characters, with a marker saying how long it was."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]}... [line cut: {len(line)} characters]"


def list_files(fs: SafeFS, args: ListFilesArgs, limits: ToolLimits) -> ToolResult:
    """Regular files under ``args.path``, sorted, at most ``max_list_files``."""
    listed = fs.list_files(args.path, limits.max_list_files)
    more = " (truncated: list a sub-folder)" if listed.truncated else ""
    result = {"path": args.path, "files": listed.files, "truncated": listed.truncated}
    return f"{len(listed.files)} files{more}", result


def read_file(fs: SafeFS, args: ReadFileArgs, limits: ToolLimits) -> ToolResult:
    """A range of lines of a text file, bounded in lines, bytes and line length.

    Raises:
        ToolDenied: any ``path.*`` code, or ``args.invalid`` for an impossible range.
    """
    text = decode_text(fs.read_bytes(args.path, limits.max_read_file_bytes), args.path)
    lines = lines_of(text)
    total = len(lines)
    start = args.start_line or 1
    end = min(args.end_line or total, total)
    if args.end_line is not None and args.end_line < start:
        raise ToolDenied(denials.ARGS_INVALID, "end_line must not be before start_line")
    if start > max(total, 1):
        raise ToolDenied(
            denials.ARGS_INVALID,
            f"start_line {start} is past the end ('{args.path}' has {total} lines)",
        )
    shown: list[str] = []
    size = 0
    for line in lines[start - 1 : end]:
        piece = cut(line, limits.max_line_chars)
        piece_bytes = len(piece.encode("utf-8")) + 1
        if len(shown) == limits.max_read_lines or size + piece_bytes > limits.max_read_bytes:
            break
        shown.append(piece)
        size += piece_bytes
    last = start + len(shown) - 1
    truncated = last < end
    result: dict[str, Any] = {
        "path": args.path,
        "start_line": start,
        "end_line": last,
        "total_lines": total,
        "content": "\n".join(shown) + ("\n" if shown else ""),
        "truncated": truncated,
    }
    message = f"lines {start}-{last} of {total}"
    if truncated:
        message += f"; more from start_line {last + 1}"
    return message, result


def compile_pattern(pattern: str) -> Any:
    """An RE2 program for ``pattern`` (linear time: no backreferences, no lookaround).

    Raises:
        ToolDenied: ``search.bad_pattern``.
    """
    options = re2.Options()
    options.log_errors = False
    options.max_mem = RE2_MAX_MEM
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        detail = (
            error.args[0].decode("utf-8", "replace")
            if error.args and isinstance(error.args[0], bytes)
            else str(error)
        )
        raise ToolDenied(
            denials.SEARCH_BAD_PATTERN,
            f"not a valid RE2 pattern ({detail[:120]}); no backreferences or lookaround",
        ) from None


def search(fs: SafeFS, args: SearchArgs, limits: ToolLimits) -> ToolResult:
    """Lines matching ``args.pattern`` in the text files at or under ``args.path``.

    Bounded in matches, bytes scanned, time (``max_search_seconds``, checked between
    lines) and work per line (``MAX_LINE_WORK``); a bound reached marks it truncated.

    Raises:
        ToolDenied: ``search.bad_pattern`` or a ``path.*`` code for ``args.path``.
    """
    program = compile_pattern(args.pattern)
    longest_line = MAX_LINE_WORK // max(program.programsize, 1)
    deadline = time.monotonic() + limits.max_search_seconds
    matches: list[dict[str, Any]] = []
    scanned = 0
    stopped: str | None = None
    skipped_lines = 0
    for file in fs.iter_files(args.path, limits.max_search_file_bytes):
        scanned += len(file.content)
        if scanned > limits.max_search_total_bytes:
            stopped = "narrow the pattern or the path"
            break
        try:
            text = decode_text(file.content, file.path)
        except ToolDenied:
            continue
        for number, line in enumerate(lines_of(text), start=1):
            if time.monotonic() > deadline:
                stopped = f"time limit of {limits.max_search_seconds:g} s; narrow the path"
                break
            if len(line) > longest_line:
                skipped_lines += 1
                continue
            if program.search(line) is None:
                continue
            if len(matches) == limits.max_search_matches:
                stopped = "narrow the pattern or the path"
                break
            matches.append(
                {"path": file.path, "line": number, "text": cut(line, limits.max_match_chars)}
            )
        if stopped is not None:
            break
    notes = [f"truncated: {stopped}"] if stopped is not None else []
    if skipped_lines:
        notes.append(
            f"{skipped_lines} lines too long for this pattern skipped; use a simpler pattern"
        )
    more = f" ({'; '.join(notes)})" if notes else ""
    result = {
        "pattern": args.pattern,
        "path": args.path,
        "matches": matches,
        "truncated": stopped is not None or skipped_lines > 0,
    }
    return f"{len(matches)} matches{more}", result
