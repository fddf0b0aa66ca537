"""Text from a run, made safe to print: what a repository, a test or a model wrote can
hold escape sequences, carriage returns, line breaks and bidirectional overrides, which a
terminal obeys (a forged ``status: SUCCEEDED`` line). Every character of a control,
format, surrogate or line/paragraph-separator category becomes ``?``."""

from __future__ import annotations

import unicodedata

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def printable(text: str, keep: str = "\t") -> str:
    """``text`` with every unsafe character but those in ``keep`` replaced by ``?``."""
    return "".join(
        "?" if char not in keep and unicodedata.category(char) in UNSAFE_CATEGORIES else char
        for char in text
    )
