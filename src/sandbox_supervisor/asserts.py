"""What a bare ``assert`` compared, for unittest's failure text (issue 29).

pytest rewrites ``assert`` statements to show their values; unittest prints a bare
``AssertionError``. For a failure whose ``AssertionError`` has no message, the line of
the innermost frame is parsed; when it is ``assert LEFT OP RIGHT`` (one comparison),
both sides are evaluated again in that frame and shown, cut short. This runs inside the
sandbox, in the workload's process, as the test did: it only adds text to the output
(which the host never trusts for a verdict) and changes no count.
"""

from __future__ import annotations

import ast
import linecache
from types import TracebackType

MAX_VALUE_CHARS = 200
_OPERATORS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}  # fmt: skip


def _short(value: object) -> str:
    try:
        text = repr(value)
    except Exception:  # a repr that raises is the workload's; say so, never fail
        return "<unrepresentable>"
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def explain(error: BaseException, traceback: TracebackType | None) -> str | None:
    """``assert f(2, 3) == 5: left is -1, right is 5`` for a bare failed comparison;
    None when there is nothing to add (a message, another statement, an error)."""
    if not isinstance(error, AssertionError) or error.args or traceback is None:
        return None
    while traceback.tb_next is not None:
        traceback = traceback.tb_next
    frame = traceback.tb_frame
    line = linecache.getline(frame.f_code.co_filename, traceback.tb_lineno).strip()
    try:
        statement = ast.parse(line).body[0]
    except (SyntaxError, ValueError, IndexError, RecursionError):
        return None
    if not isinstance(statement, ast.Assert) or statement.msg is not None:
        return None
    test = statement.test
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    operator = _OPERATORS.get(type(test.ops[0]))
    if operator is None:
        return None
    try:
        left, right = (
            eval(  # noqa: S307 - the test's own expression, in the test's own frame, in the sandbox
                compile(ast.Expression(side), "<assert>", "eval"), frame.f_globals, frame.f_locals
            )
            for side in (test.left, test.comparators[0])
        )
    except Exception:  # evaluating again failed: show the statement alone
        return f"assert {ast.unparse(test)}"
    return f"assert {ast.unparse(test)}: left is {_short(left)}, right is {_short(right)}"
