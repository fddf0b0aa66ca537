"""The opt-in gate: a real model runs only when the user asked for it three times over.

All of: ``--provider anthropic|openai``, ``SANDBOX_AGENT_OFFLINE=0`` in the environment,
and the provider's key in the process environment. The key is never taken from the
command line, never written to the trace, and never put in an error message.
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
MIN_SECRET_CHARS = 8


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
    environ: Mapping[str, str] | None = None,
    argv: Sequence[str] | None = None,
) -> GatePass:
    """Let a real provider run, or say in one line what is missing.

    Args:
        provider: ``anthropic`` or ``openai``.
        model: the model name given with ``--model``.
        base_url: ``--base-url``, refused when it carries credentials.
        environ: the process environment (``os.environ`` when None).
        argv: the command line (``sys.argv`` when None), refused when it holds the key.

    Raises:
        UsageError: naming the first missing or refused item (exit 2).
    """
    environ = os.environ if environ is None else environ
    argv = sys.argv if argv is None else argv
    key_env = KEY_ENV.get(provider)
    if key_env is None:
        raise UsageError(f"{provider!r} is not a real provider: use anthropic or openai")
    if environ.get(OFFLINE_ENV) != "0":
        raise UsageError(
            f"real providers are off: set {OFFLINE_ENV}=0 in the environment to allow "
            f"--provider {provider} to reach the network"
        )
    api_key = environ.get(key_env, "").strip()
    if not api_key:
        hint = " (OPENAI_API_KEY=none for a local server without a key)"
        hint = hint if provider == "openai" else ""
        raise UsageError(f"{key_env} is not set: export it in the environment{hint}")
    # Short placeholders such as "none" for a local server are not secrets worth refusing.
    if len(api_key) >= MIN_SECRET_CHARS and any(api_key in arg for arg in argv):
        raise UsageError(
            f"the value of {key_env} appears on the command line: keep keys in the "
            "environment only, and remove it from the command"
        )
    if not model:
        raise UsageError(f"--model is required with --provider {provider}")
    if base_url is not None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError("--base-url must be an http(s) URL such as http://127.0.0.1:8000/v1")
        if parts.username or parts.password:
            raise UsageError(
                f"--base-url must not carry credentials: put the key in {key_env} instead"
            )
    return GatePass(provider, model, api_key)
