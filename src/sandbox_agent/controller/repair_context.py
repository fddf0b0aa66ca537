"""What the ``repair`` strategy shows the model: the failure localised in the workspace
(``repair.localise``), and the first request's text (``prompts.REPAIR_TASK``)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from sandbox_agent import prompts
from sandbox_agent.controller import records
from sandbox_agent.errors import InfrastructureError, ToolDenied
from sandbox_agent.repair.failures import failure_text, syntax_errors
from sandbox_agent.repair.localise import Context, Site, localise_output
from sandbox_agent.tools.testrun import TestRun
from sandbox_agent.tools.toolbox import ToolBox

FAILURE_CHARS = 2500
"""Test output shown to the model, at most (the failing tests' part of it)."""


def read_text(toolbox: ToolBox, path: str) -> str | None:
    """A workspace file's text (descriptor-relative, no links), or None."""
    try:
        content = toolbox.workspace.fs.read_bytes(path, toolbox.tool_limits.max_patch_file_bytes)
        return content.decode("utf-8")
    except (ToolDenied, UnicodeDecodeError, OSError):
        return None


def localise_run(toolbox: ToolBox, output: str, hint: str = "") -> Context:
    """The functions to fix and the tests to show, from a failing run's output and the
    output of a spectrum run (``spectrum_hint``); the test modules stand in for frames
    when the run left none (a timeout)."""
    files, _more = toolbox.repository_files(records.MAX_FILES_WITH_TASK)
    protected = toolbox.policy.protected_reason
    return localise_output(
        output,
        files,
        lambda path: read_text(toolbox, path),
        lambda path: protected(path) is not None,
        hint=hint,
    )


def spectrum_hint(toolbox: ToolBox) -> str:
    """The output of a ``--spectrum`` run of the workspace (``ToolBox.run_spectrum``), or
    "" when it cannot be had: a hint is never worth failing a run for (a backend that
    cannot be reached fails the next test run instead, with its own reason)."""
    try:
        return toolbox.run_spectrum()
    except (ToolDenied, InfrastructureError):
        return ""


def repair_prompt(task: str, output: str, context: Context, focus: Site | None = None) -> str:
    """The first request's text: the task, the failure, the tests (read-only), the
    functions to fix (with where they are), and what may be edited; the last line asks
    for the functions shown, or for ``focus`` alone (one of them: the text before that
    line is the same, so the server's prompt cache keeps it)."""
    asked = [s.qualname for s in ([focus] if focus is not None else context.targets)]
    return _task_body(task, output, context) + prompts.REPAIR_ASK.format(
        what=prompts.what_to_write(asked), only=prompts.only_changed(asked)
    )


def _task_body(task: str, output: str, context: Context) -> str:
    tests = "".join(prompts.fenced(f"{s.header()} (read-only)", s.source) for s in context.tests)
    return prompts.REPAIR_TASK.format(
        task=task,
        failure=failure_text(output, FAILURE_CHARS),
        tests=f"\nThe failing test (read-only):\n{tests}" if tests else "",
        targets="".join(prompts.fenced(s.header(), s.source) for s in context.targets),
        editable=", ".join(dict.fromkeys(s.path for s in context.targets)),
    )


TRIED_SHOWN = 3
"""Changes tested so far that a later round's prompt shows (``--feedback tried``)."""
TRIED_DIFF_CHARS = 1500
"""Of each change's diff, at most (a diff cut short says so)."""


def tried_prompt(
    task: str,
    output: str,
    context: Context,
    original: dict[str, str],
    tried: Sequence[tuple[dict[str, str], TestRun]],
) -> str:
    """A later round's text under ``--feedback tried``: the first request's, its last line
    replaced by the changes tested so far (``tried``: files' texts and their run, best
    first; each a unified diff against ``original``, at most ``TRIED_SHOWN``), the first
    one's failure, and the ask for a different fix."""
    shown = []
    for texts, run in tried[:TRIED_SHOWN]:
        diff = "".join(
            _diff(original[path], text, path)
            for path, text in texts.items()
            if text != original.get(path)
        )
        if len(diff) > TRIED_DIFF_CHARS:
            diff = diff[:TRIED_DIFF_CHARS] + "\n... (diff cut short)"
        if not diff.endswith("\n"):
            diff += "\n"
        shown.append(prompts.REPAIR_TRIED_ONE.format(diff=diff, result=run.reason))
    asked = [s.qualname for s in context.targets]
    best_output = tried[0][1].sandbox.output.decode("utf-8", errors="replace") if tried else ""
    return _task_body(task, output, context) + prompts.REPAIR_TRIED.format(
        tried="".join(shown),
        failure=failure_text(best_output, FAILURE_CHARS),
        what=prompts.what_to_write(asked),
        only=prompts.only_changed(asked),
    )


def does_not_compile(toolbox: ToolBox, output: str) -> str | None:
    """Why no function can be repaired when ``output`` says editable modules could not be
    compiled (``failures.syntax_errors``): none of theirs can be spliced. None otherwise."""
    protected = toolbox.policy.protected_reason
    broken = [item for item in syntax_errors(output) if protected(item[0]) is None]
    if not broken:
        return None
    named = ", ".join(f"{path} ({kind} at line {line})" for path, line, kind in broken)
    return (
        f"the repair strategy found no function to repair: {named} does not compile, and "
        "it rewrites functions of modules that do; fix the syntax, or try --strategy tools"
    )


def nothing_to_repair(context: Context) -> str:
    """Why the strategy stops before its first model call when localisation found no
    function, and what to do instead: said in the run's status reason."""
    if context.searched:
        found = (
            "no function or method was found among what "
            f"{', '.join(context.searched)} import{'s' if len(context.searched) == 1 else ''}"
            " from editable modules"
        )
    else:
        found = "no failing test module was found"
    why = f"no traceback frame reaches an editable file, and {found}"
    return (
        f"the repair strategy found no function to repair from the failing tests ({why}); "
        "try --strategy tools"
    )


def _diff(before: str, after: str, path: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}",
        f"b/{path}", n=2,
    )  # fmt: skip
    return "".join(lines)
