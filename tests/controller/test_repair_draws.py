"""How each ``repair`` candidate is asked for (``controller.repair_draws``): its reply cap,
room for the functions shown; and, with ``--focus rotate`` (not the default), the one
function each sampled first-round candidate asks for, in turn (docs/DECISIONS.md, "One
function per sampled candidate"), the prompt the same but for its last line. Scripted
candidates, the shipped FakeBackend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.controller import RunConfig, RunResult, run_task
from sandbox_agent.controller import repair_draws as draws
from sandbox_agent.controller.models import RepairOptions
from sandbox_agent.providers.base import ModelReply, ModelRequest
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.providers.scripted import ScriptedProvider
from sandbox_agent.repair.localise import Site
from sandbox_agent.sandbox.base import SandboxResult
from sandbox_agent.sandbox.fake import FakeBackend, completed

CART = """\
class Cart:
    def __init__(self, prices, discount=None):
        self.prices = list(prices)
        self.discount = discount if discount is not None else 0.5

    def subtotal(self):
        return sum(self.prices)

    def total(self):
        return self.subtotal() * (1 - self.discount)
"""
CART_TESTS = """\
import unittest

from shop.cart import Cart


class CartTests(unittest.TestCase):
    def test_total(self):
        cart = Cart([2, 3])
        self.assertEqual(cart.total(), 5)
"""
OUTPUT = b"""\
F
======================================================================
FAIL: test_total (tests.test_cart.CartTests.test_total)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/workspace/tests/test_cart.py", line 9, in test_total
    self.assertEqual(cart.total(), 5)
AssertionError: 2.5 != 5

----------------------------------------------------------------------
Ran 1 test in 0.001s

FAILED (failures=1)
"""
FAILING = completed(exit_code=1, tests_run=1, failures=1, output=OUTPUT)
PASSING = completed(exit_code=0, tests_run=1)
ECHO_TOTAL = "```python\ndef total(self):\n    return self.subtotal() * (1 - self.discount)\n```"
FIXED_INIT = (
    "```python\ndef __init__(self, prices, discount=None):\n"
    "    self.prices = list(prices)\n"
    "    self.discount = discount if discount is not None else 0.0\n```"
)
ECHO_ALL = "```python\n" + CART + "```"


def _repo(tmp_path: Path, cart: str = CART) -> Path:
    repo = tmp_path / "repo"
    (repo / "shop").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "shop" / "__init__.py").write_text("")
    (repo / "shop" / "cart.py").write_text(cart)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_cart.py").write_text(CART_TESTS)
    return repo


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[ModelRequest]:
    """Every request the scripted model is asked, in order."""
    requests: list[ModelRequest] = []
    complete = ScriptedProvider.complete

    def recording(self: ScriptedProvider, request: ModelRequest) -> ModelReply:
        requests.append(request)
        return complete(self, request)

    monkeypatch.setattr(ScriptedProvider, "complete", recording)
    return requests


def run(
    tmp_path: Path,
    replies: list[str],
    results: list[SandboxResult],
    cart: str = CART,
    repo: Path | None = None,
    **repair: Any,
) -> RunResult:
    repair.setdefault("focus", "rotate")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"raw": reply} for reply in replies]}))
    return run_task(
        RunConfig(
            task="The total ignores that no discount was given. Fix it.",
            repo=repo or _repo(tmp_path, cart),
            provider="scripted",
            provider_options=PlanOptions(plan_path=str(plan)),
            strategy="repair",
            repair=RepairOptions(**repair),
            trace_dir=tmp_path / "runs",
            prestart=0,
        ),
        sandbox=FakeBackend(results),
    )


def _last_line(request: ModelRequest) -> str:
    return request.task.rstrip().splitlines()[-1]


def _before_last_line(request: ModelRequest) -> str:
    return request.task.rstrip().rsplit("\n", 1)[0]


def test_sampled_candidates_ask_for_one_function_each_in_the_order_shown(
    tmp_path: Path, asked: list[ModelRequest]
) -> None:
    result = run(tmp_path, [ECHO_ALL, ECHO_TOTAL, FIXED_INIT], [FAILING, PASSING], rounds=0)
    assert result.status == "SUCCEEDED", result.reason
    assert [(c.outcome, c.focus) for c in result.candidates] == [
        ("refused", None),
        ("refused", "Cart.total"),
        ("passed", "Cart.__init__"),
    ]
    greedy, first, second = asked
    assert _last_line(greedy).startswith("Reply with the complete fixed methods `Cart.total`, ")
    assert "(only those you change" in _last_line(greedy)
    assert (
        _last_line(first)
        == "Reply with the complete fixed method `Cart.total` in one ```python code block."
    )
    assert _last_line(second) == (
        "Reply with the complete fixed method `Cart.__init__` in one ```python code block."
    )
    # every function is still shown, and all but the last line is the greedy prompt's
    # (the server's prompt cache keeps it)
    assert _before_last_line(first) == _before_last_line(greedy) == _before_last_line(second)
    assert "def subtotal(self):" in first.task
    assert "+        self.discount = discount if discount is not None else 0.0" in result.diff


def test_the_rotation_wraps_and_later_rounds_ask_for_every_function(
    tmp_path: Path, asked: list[ModelRequest]
) -> None:
    replies = [ECHO_ALL] * 7
    result = run(tmp_path, replies, [FAILING, FAILING], candidates=5, rounds=1, round_candidates=2)
    assert result.status == "FAILED"
    focus = [c.focus for c in result.candidates]
    assert focus[0] is None
    assert focus[5:] == [None, None]
    assert focus[1] == focus[4]
    assert len(set(focus[1:4])) == 3
    assert {_last_line(request) for request in asked[5:]} == {_last_line(asked[0])}


def test_by_default_every_candidate_asks_for_every_function(
    tmp_path: Path, asked: list[ModelRequest]
) -> None:
    result = run(tmp_path, [ECHO_ALL, ECHO_TOTAL, FIXED_INIT], [FAILING, PASSING], focus="off")
    assert RepairOptions().focus == "off"
    assert result.status == "SUCCEEDED", result.reason
    assert [c.focus for c in result.candidates] == [None, None, None]
    assert len({request.task for request in asked}) == 1


def test_one_function_shown_is_asked_for_as_before() -> None:
    # HumanEvalFix rows show one function: their candidates are asked what they were
    def site(qualname: str) -> Site:
        return Site("shop/cart.py", qualname.rpartition(".")[2], qualname, 1, 2, "")

    options = RepairOptions(focus="rotate")
    one, three = [site("Cart.total")], [site(f"Cart.{n}") for n in ("total", "add", "drop")]
    assert [draws.focus(options, one, 0, slot) for slot in range(5)] == [None] * 5
    rotated = [draws.focus(options, three, 0, slot) for slot in range(6)]
    assert [s and s.name for s in rotated] == [None, "total", "add", "drop", "total", "add"]
    assert draws.focus(options, three, 1, 1) is None
    assert draws.focus(RepairOptions(focus="off"), three, 0, 1) is None


PRICING = "def rate(discount):\n    return 1 - discount * 2\n"
TWO_FILE_CART = CART.replace("(1 - self.discount)", "rate(self.discount)").replace(
    "class Cart:", "from shop.pricing import rate\n\n\nclass Cart:"
)
TWO_FILE_OUTPUT = b"""\
F
======================================================================
FAIL: test_total (tests.test_cart.CartTests.test_total)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/workspace/tests/test_cart.py", line 9, in test_total
    self.assertEqual(cart.total(), 5)
  File "/workspace/shop/cart.py", line 13, in total
    return self.subtotal() * rate(self.discount)
  File "/workspace/shop/pricing.py", line 2, in rate
    return 1 - discount * 2
ValueError: negative rate

----------------------------------------------------------------------
Ran 1 test in 0.001s

FAILED (errors=1)
"""


def test_a_function_of_another_file_written_back_unchanged_is_no_invalid_output(
    tmp_path: Path,
) -> None:
    # Asked for one function of a second file (`--focus`), a reply that writes it back
    # unchanged was refused as "the code defines Cart.total; the function to fix is rate":
    # the first file's refusal, counted as an invalid output.
    repo = _repo(tmp_path)
    (repo / "shop" / "cart.py").write_text(TWO_FILE_CART)
    (repo / "shop" / "pricing.py").write_text(PRICING)
    failing = completed(exit_code=1, tests_run=1, errors=1, output=TWO_FILE_OUTPUT)
    echo_total = (
        "```python\ndef total(self):\n    return self.subtotal() * rate(self.discount)\n```"
    )
    result = run(tmp_path, [echo_total], [failing, failing], repo=repo, candidates=1, rounds=0)
    (candidate,) = result.candidates
    assert (candidate.outcome, candidate.reason) == (
        "refused",
        "the code is the same as the code it would replace",
    )
    assert result.budget_used.invalid_outputs == 0


def test_the_reply_cap_is_room_for_the_functions_shown_within_the_flag() -> None:
    def shown(*sizes: int) -> list[Site]:
        return [Site("m.py", f"f{i}", f"f{i}", 1, 2, "x" * n) for i, n in enumerate(sizes)]

    options = RepairOptions()
    assert options.candidate_tokens == 2048
    assert draws.reply_cap(options, shown(300)) == draws.MIN_REPLY_TOKENS == 1024
    assert draws.reply_cap(options, shown(1500, 1500, 1000)) == 1667  # 1.25 * 4000 / 3
    assert draws.reply_cap(options, shown(3000, 3000, 3000)) == 2048
    assert draws.reply_cap(RepairOptions(candidate_tokens=512), shown(9000)) == 512


def test_every_request_carries_the_reply_cap(tmp_path: Path, asked: list[ModelRequest]) -> None:
    run(tmp_path, [ECHO_ALL, ECHO_TOTAL, FIXED_INIT], [FAILING, PASSING], focus="off")
    assert [request.max_output_tokens for request in asked] == [1024, 1024, 1024]
    notes = "        A line of a long docstring.\n" * 150  # shown: under 6,000 characters
    long_cart = CART.replace(
        "    def subtotal(self):\n", f'    def subtotal(self):\n        """\n{notes}"""\n'
    )
    tmp = tmp_path / "long"
    tmp.mkdir()
    asked.clear()
    repo_run = run(tmp, [ECHO_ALL], [FAILING, FAILING], candidates=1, rounds=0, cart=long_cart)
    assert repo_run.candidates
    assert [request.max_output_tokens for request in asked] == [2048]


WRONG_INIT = (
    "```python\ndef __init__(self, prices, discount=None):\n"
    "    self.prices = list(prices)\n"
    "    self.discount = discount if discount is not None else 0.25\n```"
)


@pytest.mark.parametrize("feedback", ["replay", "tried"])
def test_a_later_round_replays_the_best_or_shows_every_change_tried(
    tmp_path: Path, asked: list[ModelRequest], feedback: str
) -> None:
    failing_more = completed(exit_code=1, tests_run=1, failures=1, output=OUTPUT)
    result = run(
        tmp_path,
        [WRONG_INIT, FIXED_INIT],
        [FAILING, failing_more, PASSING],
        candidates=1, rounds=1, round_candidates=1, focus="off", feedback=feedback,
    )  # fmt: skip
    assert result.status == "SUCCEEDED", result.reason
    first, later = asked
    if feedback == "replay":
        assert [h.reply for h in later.history] == [WRONG_INIT]
        assert later.task == first.task
        return
    assert later.history == []  # nothing replayed as the model's own words
    # the first prompt's text, but for its last line: the server's cache keeps it
    assert later.task.startswith(_before_last_line(first))
    assert "These changes were tested already" in later.task
    assert "-        self.discount = discount if discount is not None else 0.5\n" in later.task
    assert "+        self.discount = discount if discount is not None else 0.25\n" in later.task
    assert "(the tests: " in later.task
    assert _last_line(later).startswith("Write a different fix: reply with the complete fixed")
