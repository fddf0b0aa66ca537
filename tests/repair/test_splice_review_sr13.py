"""SR-13 F2: a repair reply the parser cannot take crashed the controller.

``ast.parse`` raised ``RecursionError`` (a reply nested past its stack) or
``UnicodeEncodeError`` (a lone surrogate) out of the repair controller: a traceback, no
result, an unsealed run. This file imports only what the code before the fix had, so the
regression evidence runs it there.
"""

from __future__ import annotations

import pytest

from sandbox_agent.repair.localise import function_named
from sandbox_agent.repair.splice import Refused, splice


@pytest.mark.parametrize(
    "body",
    [
        "return " + "-" * 5000 + "a",  # RecursionError in ast.parse (SR-13 F2)
        "return a + b  # \ud800",  # a lone surrogate: UnicodeEncodeError in ast.parse
    ],
)
def test_sr13_f2_a_reply_the_parser_cannot_take_is_refused_not_raised(body: str) -> None:
    _assert_refused_as_syntax(body)


@pytest.mark.parametrize(
    "body", ["return " + "(" * 20000 + "a" + ")" * 20000, "return '\x00'", "return (a"]
)
def test_a_reply_past_the_parsers_limits_is_a_syntax_refusal(body: str) -> None:
    _assert_refused_as_syntax(body)


def _assert_refused_as_syntax(body: str) -> None:
    module = "def add(a, b):\n    return a - b\n"
    site = function_named("m.py", module, "add")
    assert site is not None
    reply = f"```python\ndef add(a, b):\n    {body}\n```"
    with pytest.raises(Refused) as refused:
        splice(module, [site], reply)
    assert refused.value.code == "syntax"
    assert "\n" not in refused.value.message.split(":", 1)[0]
