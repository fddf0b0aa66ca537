"""SR-6: the redactor and the trace writer against hostile strings (each test written first)."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox_agent.trace import Redactor, TraceWriter, read_chain
from sandbox_agent.trace.redact import REDACTED

SECRET = "tok-Q7vXw2pL9sRk4mZc"
ENV = {"DEPLOY_TOKEN": SECRET}


def test_f8_a_lone_surrogate_is_written_not_a_crash(tmp_path: Path) -> None:
    """SR-6 F8: RE2 encodes its input as UTF-8; a lone surrogate (a JSON ``\\ud800`` from a
    model or an endpoint) raised UnicodeEncodeError in ``emit`` and crashed the run."""
    trace = TraceWriter(tmp_path, "r", Redactor(ENV))
    trace.emit("model_turn", reply="\ud800" + SECRET + "\udfff")
    trace.close()
    (event,) = read_chain(tmp_path / "trace.jsonl")
    assert event["reply"] == f"\ufffd{REDACTED}\ufffd"


def test_f5_secrets_in_mapping_keys_and_odd_objects_are_redacted(tmp_path: Path) -> None:
    """SR-6 F5 (trace side): keys were copied as they were, and objects that are not
    JSON data went through ``json.dumps(default=str)`` unredacted."""
    trace = TraceWriter(tmp_path, "r", Redactor(ENV))
    trace.emit("tool_call", outcome={SECRET: 1}, odd={SECRET}, path=Path(SECRET))
    trace.close()
    text = (tmp_path / "trace.jsonl").read_text()
    assert SECRET not in text
    json.loads(text)  # still one JSON object per line


def test_secret_split_at_the_reply_cut_holds_in_the_loop_order() -> None:
    """Redact whole, then cut: nothing of the secret survives, even its prefix."""
    redactor = Redactor(ENV)
    text = "x" * 3990 + SECRET
    assert SECRET[:10] not in redactor.text(text)[:4000]


def test_holds_known_shapes_inside_json_escapes_and_urls() -> None:
    """What the redactor claims (shapes and exact values in the text as written) holds
    in JSON-escaped and URL text; it does not claim base64 or percent-encoded forms."""
    redactor = Redactor(ENV)
    key = "sk-ant-api03-" + "Ab9" * 10
    for text in (
        json.dumps({"k": key}),
        f"https://x.invalid/?token={SECRET}&a=1",
        f"Authorization: Bearer {SECRET}",
    ):
        out = redactor.text(text)
        assert key not in out
        assert SECRET not in out
