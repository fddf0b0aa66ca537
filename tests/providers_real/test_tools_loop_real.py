"""The ``tools`` loop through a real provider (the ``openai`` SDK against a loopback
server, the ``json_schema`` protocol the local model uses) and ``run_task`` with the
FakeBackend: what a model is sent on its first turn and after a reply cut off at the
length limit (issue 29, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_model_servers import Answer, FakeModelServer, openai_completion
from real_provider_support import openai_options, paginator_run

from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.sandbox.fake import FakeBackend, completed
from sandbox_agent.trace import read_chain

FIRST_TURN_CHARS = 3000
"""The first turn of the paginator task, at most (system prompt and task; it was 4,137
characters with the tools' JSON schemas, docs/MODELS.md "The first turn's size")."""


def text_reply(content: str, finish_reason: str = "stop") -> Answer:
    return Answer(200, openai_completion({"content": content}, finish_reason=finish_reason))


def config(server: FakeModelServer, ledger: Path, tmp_path: Path) -> RunConfig:
    options = openai_options(f"{server.url}/v1", ledger, tool_protocol="json_schema")
    return paginator_run(options, tmp_path)


def test_a_cut_off_reply_is_said_to_be_cut_off_and_the_first_turn_is_small(
    server: FakeModelServer, online: Path, tmp_path: Path
) -> None:
    server.answers.extend(
        [
            text_reply('{"tool": "apply_patch", "args": {"edits": [{"path": "pag', "length"),
            text_reply('{"tool": "finish", "args": {"summary": "stopped"}}'),
        ]
    )
    result = run_task(config(server, online, tmp_path), sandbox=FakeBackend([completed()]))

    first, second = (received.body["messages"] for received in server.received)
    system, task = first[0]["content"], first[1]["content"]
    assert len(system) + len(task) < FIRST_TURN_CHARS
    assert "maxLength" not in system
    assert "tests/test_paginator.py (read-only)" in task  # the protected paths, up front
    said = second[-1]["content"]
    assert said.startswith("Refused (output.cut_off): Your reply was cut off")
    assert "README" not in said
    events = read_chain(Path(result.trace_path))
    (invalid,) = [e for e in events if e["event"] == "invalid_output"]
    assert invalid["denial"] == "output.cut_off"
    assert [e["truncated"] for e in events if e["event"] == "model_turn"] == [True, False]
    assert result.budget_used.invalid_outputs == 1


def test_an_invalid_reply_is_shown_an_example_of_the_tool_it_named(
    server: FakeModelServer, online: Path, tmp_path: Path
) -> None:
    server.answers.extend(
        [
            text_reply('{"name": "read_file", "arguments": {"path": "paginator/core.py"}}'),
            text_reply("I will now read the code."),
            text_reply('{"tool": "finish", "args": {"summary": "stopped"}}'),
        ]
    )
    run_task(config(server, online, tmp_path), sandbox=FakeBackend([completed()]))

    named = server.received[1].body["messages"][-1]["content"]
    assert '(not "name" and "arguments")' in named
    assert '{"tool": "read_file", "args": {"path": "pkg/module.py"' in named
    prose = server.received[2].body["messages"][-1]["content"]
    assert prose.startswith("Refused (output.not_json): Your reply is not one JSON object.")
    assert '{"tool": "list_files", "args": {}}' in prose  # no file the repository may lack
    assert "README" not in json.dumps(server.received[2].body["messages"][2:])
