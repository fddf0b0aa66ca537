"""The ``repair`` strategy's answer to a task that needs no change (the visible tests
pass, or the task allows no edit): one plain-text reply, no tools, nothing changed."""

from __future__ import annotations

from sandbox_agent import prompts
from sandbox_agent.controller import records
from sandbox_agent.controller.loop_common import LoopStop
from sandbox_agent.controller.steps import Steps
from sandbox_agent.providers.base import ModelRequest, Sampling
from sandbox_agent.tools.contracts import MAX_SUMMARY_CHARS, FinishArgs, ReadFileArgs

ANSWER_EXCERPT_LINES = 40
ANSWER_EXCERPT_FILES = 3
ANSWER_TOKENS = 400


def answer(steps: Steps, situation: str, seed: int) -> LoopStop:
    """Ask once, greedily, with the file list and the first lines of a few files; the
    reply is the run's summary (recorded, never believed)."""
    files, truncated = steps.toolbox.repository_files(records.MAX_FILES_WITH_TASK)
    task = prompts.ANSWER_TASK.format(
        task=steps.config.task,
        situation=situation,
        files="\n".join(files) + ("\n(more not listed)" if truncated else ""),
        excerpts=_excerpts(steps, files),
    )
    if (stop := steps.budget_stop()) is not None:
        return stop
    request = ModelRequest(
        system=prompts.ANSWER_SYSTEM,
        task=task,
        tools=[],
        deadline=steps.cancel.deadline,
        mode="text",
        sampling=Sampling(temperature=0.0, seed=seed),
        max_output_tokens=ANSWER_TOKENS,
    )
    reply = steps.complete(request)
    if isinstance(reply, LoopStop):
        return reply
    summary = " ".join(reply.text.split())[:MAX_SUMMARY_CHARS]
    steps.state.model_summary = summary
    if "finish" in steps.allowed:
        finished = steps.tool("finish", FinishArgs(summary=summary))
        if isinstance(finished, LoopStop):
            return finished
    return LoopStop("finished", "no change needed: " + situation.rstrip("."))


def _excerpts(steps: Steps, files: list[str]) -> str:
    """The first lines of a few files (the README first), read as the reads they are."""
    if "read_file" not in steps.allowed:
        return ""
    readmes = [f for f in files if f.lower().startswith("readme")]
    policy = steps.toolbox.policy
    sources = [f for f in files if f.endswith(".py") and policy.protected_reason(f) is None]
    shown = []
    for path in (readmes + sources)[:ANSWER_EXCERPT_FILES]:
        outcome = steps.tool("read_file", ReadFileArgs(path=path, end_line=ANSWER_EXCERPT_LINES))
        if isinstance(outcome, LoopStop) or not outcome.ok:
            continue
        content = str(outcome.result.get("content", ""))
        shown.append(prompts.fenced(f"{path}, first lines", content, "text"))
    return ("\nExcerpts:\n" + "".join(shown)) if shown else ""
