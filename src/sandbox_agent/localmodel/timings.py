"""The local model's speed in recorded runs, from llama-server's own per-request timings.

Each ``model_turn`` event of a ``--provider local`` run carries the server's ``timings``
(``prompt_n``: prompt tokens processed for this request, the rest came from the prompt
cache; ``prompt_ms``, ``predicted_n``, ``predicted_ms``). Read from traces, never from
memory, so ``make bench`` and the ``eval-local`` report compute the same figures.
"""

from __future__ import annotations

import datetime as dt
import itertools
import statistics
from collections.abc import Sequence
from typing import Any


def _seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def turn_rows(events: Sequence[dict[str, Any]]) -> list[dict[str, float]]:
    """One row per model turn that carried the server's timings."""
    rows = []
    for event in events:
        timings = event.get("timings") if event.get("event") == "model_turn" else None
        if not isinstance(timings, dict):
            continue
        prompt = float(event.get("usage", {}).get("input_tokens", 0) or 0)
        processed = float(timings.get("prompt_n", prompt) or 0)
        prompt_ms = float(timings.get("prompt_ms") or 0)
        generated = float(timings.get("predicted_n") or 0)
        predicted_ms = float(timings.get("predicted_ms") or 0)
        rows.append(
            {
                "prompt_tokens": prompt,
                "processed": processed,
                "reused": 1 - processed / prompt if prompt else 0.0,
                "prompt_tps": processed / prompt_ms * 1000 if prompt_ms else 0.0,
                "gen_tokens": generated,
                "gen_tps": generated / predicted_ms * 1000 if predicted_ms else 0.0,
                "latency_s": float(event.get("duration_ms", 0) or 0) / 1000,
            }
        )
    return rows


def sandbox_seconds(events: Sequence[dict[str, Any]]) -> float:
    """Time in the sandbox: ``run_tests`` calls and the final test run."""
    total = sum(
        float(e.get("duration_ms", 0.0) or 0) / 1000
        for e in events
        if e.get("event") == "tool_call" and e.get("tool") == "run_tests"
    )
    for before, event in itertools.pairwise(events):
        if event.get("event") == "final_tests" and "time" in event and "time" in before:
            total += _seconds(event["time"]) - _seconds(before["time"])
    return total


def speed_summary(rows: list[dict[str, float]]) -> dict[str, float]:
    """Medians over turns: prompt and generation tokens/s, latency, the cache's share."""
    if not rows:
        return {}
    return {
        "turns": len(rows),
        "prompt_tokens_per_s": round(statistics.median(r["prompt_tps"] for r in rows), 1),
        "generated_tokens_per_s": round(statistics.median(r["gen_tps"] for r in rows), 1),
        "turn_latency_s": round(statistics.median(r["latency_s"] for r in rows), 1),
        "prompt_reused_from_cache": round(statistics.median(r["reused"] for r in rows), 3),
    }
