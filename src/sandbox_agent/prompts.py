"""Every text the model reads, in one place, by strategy (issue 29, item 3; issue 31).

Prompts are data: plain templates filled by the controller. Nothing here names a task,
a fixture or a benchmark (``tests/test_prompts.py`` holds that), so what is measured on
one task set is what any repository gets.

- ``REPAIR_*``: the controller-led ``repair`` strategy (``controller.repair_loop``).
- ``ANSWER_*``: a task that needs no code change (the visible tests already pass, or the
  task allows no edit): one plain-text answer, no tools.
"""

from __future__ import annotations

from collections.abc import Iterable

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

Reply with the complete fixed {what} in one ```python code block.
"""

REPAIR_FEEDBACK = """\
With that code, the tests still fail:
```text
{failure}
```
Reply with the complete corrected {what} in one ```python code block.
"""

REPAIR_REFUSED = """\
That reply could not be used: {why}
Reply with the complete fixed {what} in one ```python code block.
"""

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


def fenced(header: str, code: str, language: str = "python") -> str:
    """``code`` in a fenced block, its header (``path, lines a-b``) as a comment line."""
    body = code if code.endswith("\n") else code + "\n"
    return f"```{language}\n# {header}\n{body}```\n"


def what_to_write(names: Iterable[str]) -> str:
    """``function `f``` or ``functions `f` and `g```, for the last line of a prompt."""
    quoted = [f"`{name}`" for name in dict.fromkeys(names)]
    if len(quoted) == 1:
        return f"function {quoted[0]}"
    return f"functions {', '.join(quoted[:-1])} and {quoted[-1]}"
