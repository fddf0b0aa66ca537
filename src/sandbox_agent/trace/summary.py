"""Summaries of what must never be copied into the trace: test output, exception text,
file contents. Counts and digests only, bounded in size.
"""

from __future__ import annotations

import hashlib
from typing import Any

MAX_TRACE_STRING_CHARS = 500
"""Longer strings (file text, patches, test output) are recorded as length and digest."""
MAX_TRACE_LIST_ITEMS = 50

# Bulk text from the repository or the workload (file text, test-output tails): digest only.
BULK_KEYS = frozenset(
    {"output", "text", "content", "stdout", "stderr", "tail", "traceback", "summary"}
)


def summarise_bytes(data: bytes | str) -> dict[str, Any]:
    """Size, line count and digest of some output, never the output itself."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    return {
        "bytes": len(raw),
        "lines": raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }


def summarise_exception(error: BaseException) -> dict[str, Any]:
    """The exception's type and the size of its text; the text is never copied."""
    return {"type": type(error).__name__, "message_chars": len(str(error))}


def summarise_value(value: Any, *, key: str = "") -> Any:
    """A JSON-like value with bulk text replaced by summaries and lists bounded."""
    if isinstance(value, bytes):
        return summarise_bytes(value)
    if isinstance(value, str):
        if key in BULK_KEYS or len(value) > MAX_TRACE_STRING_CHARS:
            return summarise_bytes(value)
        return value
    if isinstance(value, dict):
        return {str(k): summarise_value(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [summarise_value(item, key=key) for item in value[:MAX_TRACE_LIST_ITEMS]]
        if len(value) > MAX_TRACE_LIST_ITEMS:
            items.append({"omitted_items": len(value) - MAX_TRACE_LIST_ITEMS})
        return items
    return value
