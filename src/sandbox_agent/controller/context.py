"""Keeping the transcript within the model's context window.

A run must never fail because its history outgrew the model's context. Before each
request the prompt's size is estimated from its characters, at the tokens-per-character
rate the server itself reported for the earlier requests of the run (a conservative
rate before the first answer). When the estimate passes the budget, the oldest
observations are replaced by a marker that says what was removed; the system prompt,
the task and the last ``KEEP_LAST_TURNS`` turns are never elided. Eliding goes down to
``REFILL_FRACTION`` of the budget at once, and an elided observation stays elided, so
the prompt's prefix (which the server caches) changes rarely. Only when the last turns
alone do not fit is the tail of their observations cut, with a marker too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sandbox_agent import prompts
from sandbox_agent.providers.base import Exchange, ModelRequest
from sandbox_agent.providers.chat_protocol import tools_in_prompt

KEEP_LAST_TURNS = 2
"""The most recent exchanges, always kept whole when they fit."""
INITIAL_TOKENS_PER_CHAR = 1 / 3
"""Before the server has reported a prompt's size: code and English run nearer 1/4."""
SAFETY_FACTOR = 1.10
"""Applied to the measured rate: the next prompt's text may tokenise a little worse."""
REFILL_FRACTION = 0.75
"""Elide down to this share of the budget, leaving room for the next few turns."""
TEMPLATE_TOKENS_PER_MESSAGE = 8
"""Chat-template tokens around each message (role markers, separators)."""
MIN_KEPT_CHARS = 200


def elided_marker(chars: int) -> str:
    """What the model sees instead of an older observation (plain text, as observations
    are); a repeat of the call it answered runs again (``controller.turns``)."""
    return prompts.TOOLS_ELIDED.format(chars=chars)


def cut_marker(chars: int) -> str:
    return prompts.TOOLS_CUT_TAIL.format(chars=chars)


def request_chars(request: ModelRequest) -> int:
    """Characters of everything a request sends as prompt text: the tools as the prompt
    describes them (``tools_in_prompt``; a native protocol's schemas are longer, and the
    rate measured from the server's counts takes them in, erring high)."""
    tools = len(tools_in_prompt(request.tools)) if request.tools else 0
    fixed = len(request.system) + len(request.task) + tools
    return fixed + sum(len(e.reply) + len(e.observation) for e in request.history)


@dataclass
class ContextFitter:
    """Per-run state: the measured rate, and how many old observations are elided."""

    budget_tokens: int
    """Tokens the prompt may take (context window less the reply's cap)."""
    tokens_per_char: float = INITIAL_TOKENS_PER_CHAR
    measured: bool = False
    elided: int = 0
    """Observations elided so far, counted from the first exchange."""
    events: list[dict[str, int]] = field(default_factory=list)

    def observe(self, request: ModelRequest, prompt_tokens: int) -> None:
        """Learn the rate from a request the server reported ``prompt_tokens`` for."""
        chars = request_chars(request)
        if prompt_tokens <= 0 or chars <= 0:
            return
        rate = prompt_tokens / chars
        self.tokens_per_char = rate if not self.measured else max(rate, self.tokens_per_char)
        self.measured = True

    def estimate(self, request: ModelRequest) -> int:
        """Estimated prompt tokens of ``request``."""
        rate = self.tokens_per_char * (SAFETY_FACTOR if self.measured else 1.0)
        messages = 2 + 2 * len(request.history)
        return math.ceil(request_chars(request) * rate) + messages * TEMPLATE_TOKENS_PER_MESSAGE

    def fit(self, request: ModelRequest) -> ModelRequest:
        """``request`` with its history elided (and, last, cut) to fit the budget."""
        history = list(request.history)
        fitted = self._with(request, history)
        if self.estimate(fitted) <= self.budget_tokens:
            return fitted
        target = self.budget_tokens * REFILL_FRACTION
        elidable = max(0, len(history) - KEEP_LAST_TURNS)
        while self.elided < elidable and self.estimate(fitted) > target:
            self.elided += 1
            fitted = self._with(request, history)
        if self.estimate(fitted) > self.budget_tokens:
            fitted = self._cut_last(request, fitted)
        self.events.append({"elided": self.elided, "estimate": self.estimate(fitted)})
        return fitted

    def _with(self, request: ModelRequest, history: list[Exchange]) -> ModelRequest:
        shown = [
            Exchange(reply=e.reply, observation=elided_marker(len(e.observation)))
            if i < self.elided and not _is_marker(e.observation)
            else e
            for i, e in enumerate(history)
        ]
        return request.model_copy(update={"history": shown})

    def _cut_last(self, request: ModelRequest, fitted: ModelRequest) -> ModelRequest:
        """Cut the tails of the kept turns' observations, longest first, to the budget."""
        history = list(fitted.history)
        over_tokens = self.estimate(fitted) - self.budget_tokens
        rate = self.tokens_per_char * (SAFETY_FACTOR if self.measured else 1.0)
        over_chars = math.ceil(over_tokens / rate) + 200
        recent = sorted(
            range(max(0, len(history) - KEEP_LAST_TURNS), len(history)),
            key=lambda i: -len(history[i].observation),
        )
        for index in recent:
            if over_chars <= 0:
                break
            text = history[index].observation
            keep = max(MIN_KEPT_CHARS, len(text) - over_chars)
            if keep >= len(text):
                continue
            history[index] = Exchange(
                reply=history[index].reply, observation=text[:keep] + cut_marker(len(text) - keep)
            )
            over_chars -= len(text) - keep
        return fitted.model_copy(update={"history": history})


def _is_marker(observation: str) -> bool:
    return observation.startswith(prompts.TOOLS_ELIDED.partition("{")[0])
