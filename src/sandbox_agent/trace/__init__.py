"""The run's JSONL trace: hash-chained, redacted, with bulk text summarised, never copied."""

from __future__ import annotations

from sandbox_agent.trace.redact import Redactor
from sandbox_agent.trace.summary import summarise_bytes, summarise_exception, summarise_value
from sandbox_agent.trace.writer import (
    GENESIS_SHA256,
    TRACE_FILE,
    TRACE_SCHEMA,
    TraceWriter,
    read_chain,
)

__all__ = [
    "GENESIS_SHA256",
    "TRACE_FILE",
    "TRACE_SCHEMA",
    "Redactor",
    "TraceWriter",
    "read_chain",
    "summarise_bytes",
    "summarise_exception",
    "summarise_value",
]
