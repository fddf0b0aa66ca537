"""The transcript is kept within the model's context: old observations elided, never the
system prompt, the task or the last turns; the rate comes from the server's own counts."""

from __future__ import annotations

import json

from sandbox_agent.controller.context import (
    INITIAL_TOKENS_PER_CHAR,
    KEEP_LAST_TURNS,
    ContextFitter,
    request_chars,
)
from sandbox_agent.providers.base import Exchange, ModelRequest

SYSTEM = "system prompt " * 10
TASK = "fix the bug " * 5


def request_with(observations: list[str]) -> ModelRequest:
    history = [
        Exchange(
            reply=json.dumps({"tool": "read_file", "args": {"path": f"f{i}.py"}}), observation=o
        )
        for i, o in enumerate(observations)
    ]
    return ModelRequest(system=SYSTEM, task=TASK, tools=[], history=history)


def test_a_request_that_fits_is_left_alone() -> None:
    request = request_with(["x" * 100, "y" * 100])
    fitter = ContextFitter(budget_tokens=10_000)
    assert fitter.fit(request) == request
    assert fitter.elided == 0


def test_old_observations_are_elided_with_a_marker_and_the_last_turns_kept() -> None:
    request = request_with(["a" * 3000 for _ in range(6)])
    fitter = ContextFitter(budget_tokens=3000)
    fitted = fitter.fit(request)

    assert fitted.system == request.system
    assert fitted.task == request.task
    assert fitter.estimate(fitted) <= fitter.budget_tokens
    kept = fitted.history[-KEEP_LAST_TURNS:]
    assert [e.observation for e in kept] == [e.observation for e in request.history[-2:]]
    elided = [e for e in fitted.history if e.observation.startswith("[An older observation")]
    assert elided == fitted.history[: fitter.elided]
    marker = elided[0].observation  # plain text, as every observation is
    assert "3000 characters" in marker
    assert "context window" in marker
    # The replies (the model's own calls) are never changed.
    assert [e.reply for e in fitted.history] == [e.reply for e in request.history]


def test_eliding_is_sticky_so_the_cached_prefix_stays_the_same() -> None:
    fitter = ContextFitter(budget_tokens=3000)
    observations = ["a" * 3000 for _ in range(6)]
    first = fitter.fit(request_with(observations))
    second = fitter.fit(request_with([*observations, "b" * 100]))
    assert (
        second.history[: len(first.history) - KEEP_LAST_TURNS]
        == first.history[: len(first.history) - KEEP_LAST_TURNS]
    )


def test_the_last_turns_are_cut_only_when_they_alone_do_not_fit() -> None:
    request = request_with(["z" * 50_000])
    fitter = ContextFitter(budget_tokens=2000)
    fitted = fitter.fit(request)
    (only,) = fitted.history
    assert only.observation.startswith("z" * 200)
    assert "[cut: the last" in only.observation
    assert fitter.estimate(fitted) <= fitter.budget_tokens


def test_the_rate_is_learnt_from_the_servers_count_and_only_grows() -> None:
    request = request_with(["q" * 4000])
    fitter = ContextFitter(budget_tokens=100_000)
    assert fitter.tokens_per_char == INITIAL_TOKENS_PER_CHAR
    chars = request_chars(request)
    fitter.observe(request, chars // 4)
    assert abs(fitter.tokens_per_char - 0.25) < 0.01
    fitter.observe(request, chars // 5)
    assert abs(fitter.tokens_per_char - 0.25) < 0.01
    fitter.observe(request, 0)  # no count reported: nothing learnt
    assert abs(fitter.tokens_per_char - 0.25) < 0.01
