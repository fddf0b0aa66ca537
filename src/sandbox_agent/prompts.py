"""Every text the model reads, in one place, by strategy (issue 29, item 3; issue 31).

Prompts are data: plain templates filled by the controller. Nothing here names a task,
a fixture or a benchmark (``tests/test_prompts.py`` holds that), so what is measured on
one task set is what any repository gets.

- ``REPAIR_*``: the controller-led ``repair`` strategy (``controller.repair_loop``).
- ``ANSWER_*``: a task that needs no code change (the visible tests already pass, or the
  task allows no edit): one plain-text answer, no tools.
- ``TOOLS_*``: the model-led ``tools`` strategy (``controller.loop``): the system prompt,
  the tools' one-line signatures and examples, the first message, the observations and
  the refusals the model reads. Templates are filled with ``str.format``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

REPAIR_SYSTEM = (
    "You fix bugs in Python code. You are shown a failing test run, the failing test "
    "(read-only) and the code it exercises. That code is wrong: your reply must change it "
    "so that the test passes. Reply with the complete corrected function in one ```python "
    "code block: keep its name and its parameters, and do not change the tests. Write no "
    "explanation outside the code block."
)

REPAIR_TASK = """\
Task: {task}

The tests fail:
```text
{failure}
```
{tests}
The code to fix:
{targets}
You may edit: {editable}. You may not edit tests, test configuration or dependency files.

"""
"""The first request's text; ``REPAIR_ASK`` follows it (``REPAIR_TRIED`` instead, in a
later round under ``--feedback tried``: the text before is the same, so it is cached)."""

REPAIR_ASK = "Reply with the complete fixed {what}{only} in one ```python code block.\n"

REPAIR_TRIED = """These changes were tested already, and the tests still fail with each of them:
{tried}
With the first of them, the tests print:
```text
{failure}
```
Write a different fix: reply with the complete fixed {what}{only} in one ```python code block.
"""
"""A later round under ``--feedback tried``: the changes tested so far, most tests
passing first, instead of the best one replayed as the model's own reply (which a small
model wrote again, word for word, in 14 of 32 realrepos repair-round candidates)."""

REPAIR_TRIED_ONE = "```diff\n{diff}```\n(the tests: {result})\n"

REPAIR_FEEDBACK = """\
With that code, the tests still fail:
```text
{failure}
```
Reply with the complete corrected {what}{only} in one ```python code block.
"""

REPAIR_REFUSED = """\
That reply could not be used: {why}
Reply with the complete fixed {what}{only} in one ```python code block.
"""

REPAIR_ONLY_CHANGED = (
    " (only those you change, each whole: leave out the ones you keep as they are)"
)
"""Said after several functions' names: a reply that writes back every function shown,
unchanged but for one, was the commonest useless candidate when several were shown."""

ANSWER_SYSTEM = (
    "You are a careful software engineer answering a question about a Python repository. "
    "You cannot change any file. Answer in a few sentences of plain text."
)

ANSWER_TASK = """\
Task: {task}

{situation}

Files in the repository:
{files}
{excerpts}"""

ANSWER_TESTS_PASS = "The repository's visible tests pass as it stands ({tests_run} ran)."  # noqa: S105
ANSWER_NO_EDITS = "This task allows reading only: no file may be changed."
ANSWER_NO_TESTS = "No test ran in this repository, so no change could be checked: none is made."


# ---------------------------------------------------------------------- the tools strategy

TOOLS_SYSTEM = (
    "You are a coding agent working on a copy of a Python repository. Each turn, reply with "
    'exactly one JSON object {"tool": NAME, "args": {...}} calling one of the tools below, '
    "and nothing else. There is no shell; tests run only through run_tests. Work in small "
    "steps: read the code the task is about, change it with apply_patch, run every test "
    "with run_tests (no selector), and call finish when they pass. The controller runs the "
    "tests itself and decides whether the task succeeded."
)
"""The workflow sentence was added on the development split (docs/EVALS.md), after the
local model ran one invented test and finished."""

TOOLS_LIST = "Tools (a `?` marks an optional argument):\n{tools}"
TOOLS_LINE = "- {signature}: {purpose}\n  Example: {example}"

TOOLS_PURPOSES: Mapping[str, str] = {
    "list_files": "List the files under a folder (the whole repository without `path`).",
    "read_file": (
        "Read a text file, or a range of its lines. Lines come numbered; the numbers are "
        "not part of the file."
    ),
    "search": "Find the lines that match an RE2 regular expression, in a file or a folder.",
    "apply_patch": (
        "Replace the one occurrence of `old` with `new` in `path`; copy `old` exactly from "
        'the file, without the line numbers. `old: ""` creates a new file. All edits apply '
        "or none do."
    ),
    "run_tests": (
        "Run the repository's tests in a sandbox. Leave out `selector` to run them all; a "
        "selector is one test id, as the test output names it."
    ),
    "finish": "End the task with a short summary of what you did.",
}
"""One line per tool: the prompt's signatures and the native APIs' descriptions."""

TOOLS_EXAMPLES: Mapping[str, str] = {
    "list_files": '{"tool": "list_files", "args": {}}',
    "read_file": (
        '{"tool": "read_file", "args": {"path": "pkg/module.py", "start_line": 1, "end_line": 80}}'
    ),
    "search": '{"tool": "search", "args": {"pattern": "def load_", "path": "pkg"}}',
    "apply_patch": (
        '{"tool": "apply_patch", "args": {"edits": [{"path": "pkg/module.py", '
        '"old": "    return total / count\\n", "new": "    return total / max(count, 1)\\n"}]}}'
    ),
    "run_tests": '{"tool": "run_tests", "args": {}}',
    "finish": '{"tool": "finish", "args": {"summary": "Fixed the loop bound in load_rows."}}',
}
"""One complete, valid call per tool (``tests/test_prompts.py`` parses each)."""

TOOLS_TASK = "{task}\n\nFiles in the repository:\n{files}{cut}{read_only}"
TOOLS_NO_FILES = "(no files)"
TOOLS_FILES_CUT = "\n(only the first {count}; list_files shows a folder's)"
TOOLS_READ_ONLY_MARK = " (read-only)"
TOOLS_READ_ONLY = (
    "\n\nTests, test configuration and dependency files are read-only (marked above): "
    "test*.py, *_test.py, files in test folders, conftest.py, pytest.ini, tox.ini, "
    "setup.cfg, pyproject.toml, requirements files. apply_patch refuses to change or create "
    "them, and every refusal counts against the run. Fix the code, not the tests."
)
"""Said up front (issue 29): a model must not learn the protected paths by denials."""

TOOLS_LISTED = "{count} files in {where}{cut}:\n{files}"
TOOLS_LISTED_NONE = "No files in {where}."
TOOLS_LISTED_CUT = " (only the first {count}; list a sub-folder for more)"
TOOLS_READ = "{path}, lines {start}-{end} of {total}{more}:\n{lines}"
TOOLS_READ_MORE = "; read on from start_line {next}"
TOOLS_READ_EMPTY = "{path} is empty."
TOOLS_SEARCHED = "Search for {pattern}{where}: {summary}."
TOOLS_PATCHED = "Applied {edits} to {files}."
TOOLS_CREATED = " Created {files}."
TOOLS_TESTS_PASSED = "The tests passed: {tests_run} ran, none failed."
TOOLS_TESTS_FAILED = "The tests failed: {tests_run} ran, {failures} failed."
TOOLS_TESTS_UNFINISHED = "The tests did not run to an end: {reason}."
TOOLS_TEST_OUTPUT = "\n```text\n{output}\n```"
TOOLS_SELECTOR = "{text} (selector {selector})"
TOOLS_REFUSED = "Refused ({code}): {message}"
TOOLS_OLD_NUMBERED = (
    "\nYour `old` has read_file's line numbers in it: copy the text after each number and "
    "its tab, not the number."
)
TOOLS_OK = "Done."

TOOLS_REPEATED = (
    "You made this same call at turn {turn}, and nothing has changed since, so it was not "
    "run again. Its answer then: {gist} Do something else."
)
"""Greedy decoding repeats itself: the controller answers a repeat from memory."""
TOOLS_FINISH_HELD = (
    "Not finished yet: the tests still fail ({counts}).{output}\n"
    "Fix them, or call finish again to stop as things are."
)
"""The first ``finish`` while the visible tests fail (issue 29); a second one ends the run."""

TOOLS_NOT_JSON = (
    'Your reply is not one JSON object. Reply with exactly one JSON object {{"tool": NAME, '
    '"args": {{...}}}} and nothing else, for example {example}'
)
TOOLS_NOT_A_CALL = (
    'The object must have exactly the keys "tool" (a string) and "args" (an object){hint}, '
    "for example {example}"
)
TOOLS_NAME_HINT = ' (not "name" and "arguments")'
TOOLS_TOOL_NOT_TEXT = '"tool" must be a string, for example {example}'
TOOLS_DUPLICATE_KEY = "a key appears twice in one JSON object"
TOOLS_TOO_LARGE = "send at most {limit} characters"
TOOLS_CUT_OFF = (
    "Your reply was cut off at the reply's length limit, before the call was complete. "
    "Send a shorter call: for apply_patch, an `old` of a few lines that occurs once, and "
    "only the lines that change."
)
TOOLS_ELIDED = (
    "[An older observation ({chars} characters) was removed to fit the model's context "
    "window; call the tool again if you need it.]"
)
TOOLS_CUT_TAIL = (
    "\n[cut: the last {chars} characters of this observation did not fit the model's "
    "context window; ask for less, e.g. a range of lines]"
)


def fenced(header: str, code: str, language: str = "python") -> str:
    """``code`` in a fenced block, its header (``path, lines a-b``) as a comment line."""
    body = code if code.endswith("\n") else code + "\n"
    return f"```{language}\n# {header}\n{body}```\n"


def only_changed(names: Iterable[str]) -> str:
    """``REPAIR_ONLY_CHANGED`` when more than one function is shown, else nothing."""
    return REPAIR_ONLY_CHANGED if len(set(names)) > 1 else ""


def what_to_write(names: Iterable[str]) -> str:
    """``function `f```, ``functions `f` and `g```, ``method `Cart.total``` or ``methods
    `Cart.add` and `Cart.total``` (qualified names), for the last line of a prompt."""
    unique = list(dict.fromkeys(names))
    quoted = [f"`{name}`" for name in unique]
    kind = "method" if all("." in name for name in unique) else "function"
    if len(quoted) == 1:
        return f"{kind} {quoted[0]}"
    return f"{kind}s {', '.join(quoted[:-1])} and {quoted[-1]}"
