"""The opt-in gate: a real model runs only when the user asked for it three times over.

All of: ``--provider anthropic|openai``, ``SANDBOX_AGENT_OFFLINE=0`` in the environment,
and the provider's key in the process environment; then a ``--model`` whose cost can be
estimated (a model of the price table, or ``--price-per-mtok-in/out``). The key is never
taken from the command line, never written to the trace, and never put in an error
message.

Everything that is missing is named in one message, so a user finds it all in one
attempt, not one failed run per missing item (issue 30).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import NamedTuple
from urllib.parse import urlsplit

from sandbox_agent.errors import UsageError

OFFLINE_ENV = "SANDBOX_AGENT_OFFLINE"
KEY_ENV: dict[str, str] = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
"""Where each real provider's key must be: the process environment, nowhere else."""
EXAMPLE_MODEL: dict[str, str] = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4.1-mini"}
"""A model of the price table, named in the message when ``--model`` is missing."""
MIN_SECRET_CHARS = 8

Prices = tuple[float | None, float | None]
"""``--price-per-mtok-in`` and ``--price-per-mtok-out`` as given (None: not given)."""


class GatePass(NamedTuple):
    """What the gate let through. Keep ``api_key`` out of every log, trace and message."""

    provider: str
    model: str
    api_key: str


def check_gate(
    provider: str,
    model: str | None,
    *,
    base_url: str | None = None,
    prices: Prices | None = None,
    environ: Mapping[str, str] | None = None,
    argv: Sequence[str] | None = None,
) -> GatePass:
    """Let a real provider run, or say in one line everything that is missing.

    Args:
        provider: ``anthropic`` or ``openai``.
        model: the model name given with ``--model``.
        base_url: ``--base-url``, refused when it carries credentials.
        prices: the price flags as given; when not None, a model with no known price and
            no flags is one more missing item (the spend meter refuses it anyway, later).
        environ: the process environment (``os.environ`` when None).
        argv: the command line (``sys.argv`` when None), refused when it holds the key.

    Raises:
        UsageError: naming every missing or refused item, numbered, in one line (exit 2).
    """
    environ = os.environ if environ is None else environ
    argv = sys.argv if argv is None else argv
    key_env = KEY_ENV.get(provider)
    if key_env is None:
        raise UsageError(f"{provider!r} is not a real provider: use anthropic or openai")
    missing: list[str] = []
    if environ.get(OFFLINE_ENV) != "0":
        missing.append(
            f"real providers are off: set {OFFLINE_ENV}=0 in the environment to allow "
            f"--provider {provider} to reach the network"
        )
    api_key = environ.get(key_env, "").strip()
    if not api_key:
        hint = " (OPENAI_API_KEY=none for a local server without a key)"
        hint = hint if provider == "openai" else ""
        missing.append(f"{key_env} is not set: export it in the environment{hint}")
    # Short placeholders such as "none" for a local server are not secrets worth refusing.
    elif len(api_key) >= MIN_SECRET_CHARS and any(api_key in arg for arg in argv):
        missing.append(
            f"the value of {key_env} appears on the command line: keep keys in the "
            "environment only, and remove it from the command"
        )
    if not model:
        missing.append(
            f"--model is required with --provider {provider} (e.g. --model "
            f"{EXAMPLE_MODEL[provider]}; a model outside the price table also needs "
            "--price-per-mtok-in and --price-per-mtok-out)"
        )
    elif prices is not None:
        problem = _price_problem(model, prices)
        if problem is not None:
            missing.append(problem)
    if base_url is not None:
        problem = _base_url_problem(base_url, key_env)
        if problem is not None:
            missing.append(problem)
    if missing or not model:
        raise UsageError(_one_line(provider, missing))
    return GatePass(provider, model, api_key)


def _one_line(provider: str, missing: list[str]) -> str:
    if len(missing) == 1:
        return missing[0]
    items = "; ".join(f"({number}) {item}" for number, item in enumerate(missing, 1))
    return f"--provider {provider} needs {len(missing)} more things: {items}"


def _price_problem(model: str, prices: Prices) -> str | None:
    """Why ``model``'s cost cannot be estimated with these flags, or None."""
    from sandbox_agent.ledger.prices import price_for

    try:
        price_for(model, input_per_mtok=prices[0], output_per_mtok=prices[1])
    except UsageError as error:
        return str(error)
    return None


def _base_url_problem(base_url: str, key_env: str) -> str | None:
    try:
        parts = urlsplit(base_url)
        hostname = parts.hostname
    except ValueError:  # an unbalanced [ or a bad port
        hostname = None
    if hostname is None or parts.scheme not in ("http", "https"):
        return "--base-url must be an http(s) URL such as http://127.0.0.1:8000/v1"
    if parts.username or parts.password:
        return f"--base-url must not carry credentials: put the key in {key_env} instead"
    return None
