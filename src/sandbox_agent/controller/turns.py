"""What the ``tools`` loop remembers between turns (issue 29): the calls it answered, the
visible tests' state, and when a model stuck repeating itself needs sampling.

- **Repeats.** A call is a repeat when the same tool with the same arguments was
  answered since the last applied edit (the tree is the same, so the answer would be),
  and that answer is still in the model's context (an observation the context fitter
  elided may be asked for again, as its marker says). A repeat is not run again: the
  model is told it did this already, with the earlier answer's first line. It is
  counted as the call it is (a repeated policy denial is a denial again).
- **Sampling.** A provider that samples greedily answers the same context the same way:
  after ``REPEATS_BEFORE_SAMPLING`` repeats in a row (identical calls, or identical
  invalid replies), the next turn is asked at ``REPEAT_TEMPERATURE`` with a seed of its
  own (the run's ``--seed`` plus the turn), until the model does something new.
- **The tests' state.** The last test run on the current tree, so that ``finish`` while
  the visible tests fail is answered once with the failures (``controller.loop``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sandbox_agent.controller.models import ToolCallRecord
from sandbox_agent.providers.base import Sampling
from sandbox_agent.tools.contracts import ToolCall
from sandbox_agent.tools.testrun import TestRun

REPEATS_BEFORE_SAMPLING = 2
"""Repeats in a row after which a greedy provider's next turn is sampled."""
REPEAT_TEMPERATURE = 0.7
"""Warm enough to leave a loop, cool enough to keep a constrained call sensible."""
GREEDY_PROVIDERS = frozenset({"local"})
"""Providers whose own sampling is greedy (``local``: temperature 0, one seed). Others
keep their own sampling: some APIs refuse a temperature for some models."""


@dataclass(frozen=True)
class Answered:
    """A call answered on the current tree."""

    turn: int
    """The model turn (iteration) that made it."""
    position: int
    """Its exchange's index in the history (elided when below the fitter's count)."""
    gist: str
    """The first line of what the model was told."""
    record: ToolCallRecord
    """Its record in the result; a repeat is recorded as a repeat of it."""


@dataclass
class TurnMemory:
    """Per-run memory of the ``tools`` loop; ``generation`` counts applied edits."""

    greedy: bool = False
    """The provider samples greedily: a repeat loop is broken by sampling."""
    seed: int = 0
    generation: int = 0
    answered: dict[str, Answered] = field(default_factory=dict)
    invalid_replies: set[str] = field(default_factory=set)
    repeats: int = 0
    """Repeats in a row: calls answered from memory, or invalid replies seen before."""
    tests: TestRun | None = None
    """The last test run on the current tree (None after an edit)."""
    finish_held: bool = False
    """A ``finish`` was answered with the failures once already."""

    @staticmethod
    def key(call: ToolCall) -> str:
        return json.dumps([call.tool, call.args.model_dump(mode="json")], sort_keys=True)

    def recall(self, call: ToolCall, elided: int) -> Answered | None:
        """The earlier answer to this very call on this tree, if the model still sees it."""
        found = self.answered.get(self.key(call))
        return None if found is None or found.position < elided else found

    def remember(self, call: ToolCall, answered: Answered) -> None:
        self.answered[self.key(call)] = answered
        self.repeats = 0

    def repeated(self) -> None:
        """A call answered from memory."""
        self.repeats += 1

    def invalid(self, reply: str) -> None:
        """An invalid reply: a repeat when the same text came before on this tree."""
        if reply in self.invalid_replies:
            self.repeats += 1
        else:
            self.invalid_replies.add(reply)
            self.repeats = 0

    def edited(self) -> None:
        """An edit was applied: every earlier answer may be stale now."""
        self.generation += 1
        self.answered.clear()
        self.invalid_replies.clear()
        self.tests = None

    def sampling(self, turn: int) -> Sampling | None:
        """How turn ``turn`` samples: the provider's own, unless a greedy model is stuck."""
        if not self.greedy or self.repeats < REPEATS_BEFORE_SAMPLING:
            return None
        return Sampling(temperature=REPEAT_TEMPERATURE, seed=(self.seed + turn) % 2**31)
