"""A linear-time redactor for secrets in anything the trace or the result records.

One RE2 alternation (no backtracking, so time is linear in the input) matches
API-key shapes, bearer tokens, PEM private keys and the exact values of the
environment variables whose names look secret.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import re2

REDACTED = "[REDACTED]"
SECRET_NAME_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
MIN_SECRET_VALUE_CHARS = 8
"""Shorter environment values (``1``, ``true``) are too common to redact safely."""
MAX_ENV_SECRETS = 200

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A character class: linear time in Python's ``re`` too."""

KEY_SHAPES: tuple[str, ...] = (
    r"sk-ant-[A-Za-z0-9_\-]{8,}",
    r"sk-[A-Za-z0-9_\-]{16,}",
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"xox[abposr]-[A-Za-z0-9\-]{8,}",
    r"(?i:bearer)\s+[A-Za-z0-9_\-\.=+/]{8,}",
    # A key cut short by an output budget is still a key: redact to the end of the text.
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY-----|\z)",
)


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of environment variables whose names look secret, longest first."""
    source = os.environ if environ is None else environ
    values = {
        value
        for name, value in source.items()
        if any(marker in name.upper() for marker in SECRET_NAME_MARKERS)
        and len(value) >= MIN_SECRET_VALUE_CHARS
    }
    return sorted(values, key=len, reverse=True)[:MAX_ENV_SECRETS]


class Redactor:
    """Replaces every secret-looking substring with ``[REDACTED]``."""

    def __init__(
        self, environ: Mapping[str, str] | None = None, extra_values: tuple[str, ...] = ()
    ) -> None:
        """Args:
        environ: where to find secret values; the process environment when None.
        extra_values: more exact values to redact (e.g. an API key read from a file).
        """
        literals = [re2.escape(value) for value in (*secret_env_values(environ), *extra_values)]
        options = re2.Options()
        options.max_mem = 64 << 20
        self._pattern = re2.compile("|".join((*literals, *KEY_SHAPES)), options)

    def text(self, value: str) -> str:
        """``value`` with every secret replaced (lone surrogates, which no UTF-8 text can
        hold, become U+FFFD first)."""
        try:
            return str(self._pattern.sub(REDACTED, value))
        except UnicodeEncodeError:
            clean = _LONE_SURROGATE.sub("\ufffd", value)
            return str(self._pattern.sub(REDACTED, clean))

    def value(self, value: Any) -> Any:
        """A JSON-like value (dicts, lists, strings, scalars) with every string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(key)): self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.value(item) for item in value]
        if value is None or isinstance(value, bool | int | float):
            return value
        # Anything else would reach the JSON text through ``default=str``: redact that text.
        return self.text(str(value))
