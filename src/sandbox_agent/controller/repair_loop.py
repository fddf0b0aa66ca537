"""The ``repair`` strategy: the controller leads, the model writes functions (issue 29).

Reading order (every step a tool call in the trace, every candidate a verified run):

1. ``run_tests`` once. Passing already (or a task that allows no edit): one plain
   answer, no change (``_answer``).
2. Localise (``repair.localise``): the failing frames' functions in editable files, else
   what the failing tests import; ``read_file`` of each file shown.
3. Round 0: ``candidates`` replies to one prompt, the first greedy, then sampled with
   seeds ``seed + k``; each spliced into the original module (``repair.splice``),
   applied with ``apply_patch`` (the policy holds) and tested in its own sandbox, made
   ahead while the model writes. The first to pass the visible tests ends the search.
4. Rounds 1..R: from the best failing candidate and its concrete failure.
5. Nothing passed: the best tree seen stays (more tests passing than the original's),
   else the original. The controller's final run decides the status, never this loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sandbox_agent import prompts
from sandbox_agent.controller import records
from sandbox_agent.controller.loop import (
    MAX_REPLY_CHARS_IN_TRACE,
    LoopState,
    LoopStop,
    _context_fitter,
    _fit,
    _provider_failed,
    check_budgets,
)
from sandbox_agent.controller.models import CandidateOutcome, CandidateRecord, RunConfig
from sandbox_agent.errors import BudgetExhausted, InfrastructureError, ToolDenied
from sandbox_agent.providers.base import Exchange, ModelReply, ModelRequest, Provider, Sampling
from sandbox_agent.repair.failures import failure_text, frames
from sandbox_agent.repair.localise import Context, Site
from sandbox_agent.repair.splice import Refused, edit_for, splice
from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.tools.contracts import (
    MAX_SUMMARY_CHARS,
    ApplyPatchArgs,
    Edit,
    FinishArgs,
    ReadFileArgs,
    RunTestsArgs,
    ToolArgs,
    ToolCall,
    ToolName,
    ToolOutcome,
)
from sandbox_agent.tools.testrun import TestRun
from sandbox_agent.tools.toolbox import ToolBox
from sandbox_agent.trace import TraceWriter, summarise_exception

FAILURE_CHARS = 2500
"""Test output shown to the model, at most (the failing tests' part of it)."""
ANSWER_EXCERPT_LINES = 40
ANSWER_EXCERPT_FILES = 3
ANSWER_TOKENS = 400
INVALID_CODES = ("no_code", "cut_off", "syntax", "wrong_function")
WARMER = 0.2
WARMEST = 1.2
"""Refusals that are invalid outputs; a reply that changes nothing is a valid, useless one."""


@dataclass
class _Tried:
    """A candidate that reached the sandbox: its texts, its run, its reply."""

    record: CandidateRecord
    texts: dict[str, str]
    run: TestRun
    reply: str

    @property
    def score(self) -> tuple[int, int]:
        return (self.run.tests_run - self.run.failures, -self.run.failures)


@dataclass
class _Search:
    original: dict[str, str]
    current: dict[str, str]
    baseline: TestRun
    tried: list[_Tried] = field(default_factory=list)
    candidates: list[CandidateRecord] = field(default_factory=list)
    last_refusal: tuple[str, str] | None = None
    """The last unusable reply and why, for the next round's prompt."""
    repeats: int = 0
    """Candidates whose code was the original's or an earlier candidate's."""


def repair_prompt(task: str, output: str, context: Context) -> str:
    """The first request's text: the task, the failure, the tests (read-only), the
    functions to fix (with where they are), and what may be edited."""
    tests = "".join(prompts.fenced(f"{s.header()} (read-only)", s.source) for s in context.tests)
    return prompts.REPAIR_TASK.format(
        task=task,
        failure=failure_text(output, FAILURE_CHARS),
        tests=f"\nThe failing test (read-only):\n{tests}" if tests else "",
        targets="".join(prompts.fenced(s.header(), s.source) for s in context.targets),
        editable=", ".join(dict.fromkeys(s.path for s in context.targets)),
        what=prompts.what_to_write(s.name for s in context.targets),
    )


def repair_loop(
    config: RunConfig,
    *,
    provider: Provider,
    toolbox: ToolBox,
    trace: TraceWriter,
    state: LoopState,
    cancel: CancelToken,
) -> LoopStop:
    """Localise, sample whole-function candidates, test each; until one passes or the
    candidate, round or run budgets are spent (the module docstring has the steps)."""
    return _Repair(
        config, provider=provider, toolbox=toolbox, trace=trace, state=state, cancel=cancel
    ).run()


class _Repair:
    def __init__(
        self,
        config: RunConfig,
        *,
        provider: Provider,
        toolbox: ToolBox,
        trace: TraceWriter,
        state: LoopState,
        cancel: CancelToken,
    ) -> None:
        self.config = config
        self.options = config.repair
        self.provider = provider
        self.toolbox = toolbox
        self.trace = trace
        self.state = state
        self.cancel = cancel
        self.allowed = frozenset(config.allowed_tools)
        self.fitter = _context_fitter(provider)
        self.search: _Search | None = None

    # ------------------------------------------------------------------ the steps

    def run(self) -> LoopStop:
        try:
            return self._run()
        finally:
            if self.search is not None:
                self.state.candidates = list(self.search.candidates)

    def _run(self) -> LoopStop:
        if not {"run_tests", "apply_patch"} <= self.allowed:
            return self._answer(prompts.ANSWER_NO_EDITS)
        outcome = self._tool("run_tests", RunTestsArgs())
        if isinstance(outcome, LoopStop):
            return outcome
        if not outcome.ok:
            return LoopStop("finished", f"the visible tests could not be run: {outcome.message}")
        baseline = self.toolbox.test_runs[-1]
        if baseline.passed:
            return self._answer(prompts.ANSWER_TESTS_PASS.format(tests_run=baseline.tests_run))
        if baseline.status not in ("completed", "timeout"):
            why = f"the visible tests did not run to an end ({baseline.reason})"
            return LoopStop("finished", why)
        output = baseline.sandbox.output.decode("utf-8", errors="replace")
        if baseline.status == "timeout":  # no traceback says where: say what happened
            output = f"The tests did not finish: {baseline.reason}\n{output}"
        context = self._localise(output)
        if not context.targets:
            return LoopStop("finished", "no editable function was found from the failing tests")
        self.search = _Search(
            original={site.path: self._text(site.path) for site in context.targets},
            current={},
            baseline=baseline,
        )
        self.search.current = dict(self.search.original)
        shown = dict.fromkeys([s.path for s in context.targets + context.tests])
        for path in shown if "read_file" in self.allowed else ():
            # what the model is shown, recorded as the reads they are
            if isinstance(stop := self._tool("read_file", ReadFileArgs(path=path)), LoopStop):
                return self._settle(stop)
        task = repair_prompt(self.config.task, output, context)
        return self._search(task, list(context.targets))

    def _search(self, task: str, targets: list[Site]) -> LoopStop:
        assert self.search is not None  # noqa: S101 - set by _run
        options = self.options
        what = prompts.what_to_write(s.name for s in targets)
        history: list[Exchange] = []
        for round_ in range(options.rounds + 1):
            count = options.candidates if round_ == 0 else options.round_candidates
            if round_ > 0:
                history = self._feedback(what)
                if not history:
                    break
            for slot in range(count):
                sampling = self._sampling(slot)
                asked = self._ask(task, history, sampling)
                if isinstance(asked, LoopStop):
                    return self._settle(asked)
                tried = self._try(asked, targets, round_, sampling)
                if isinstance(tried, LoopStop):
                    return self._settle(tried)
                if tried is not None and tried.run.passed:
                    functions = ", ".join(tried.record.functions)
                    self.state.model_summary = (
                        f"rewrote {functions}: candidate {tried.record.index} passed the "
                        "visible tests"
                    )
                    return LoopStop(
                        "finished", f"candidate {tried.record.index} passed the visible tests"
                    )
        return self._settle(LoopStop("finished", "no candidate passed the visible tests"))

    # ------------------------------------------------------------------ candidates

    def _sampling(self, slot: int) -> Sampling:
        """Greedy first; then seeded samples. A sample that repeats earlier code (small
        models copy the code they are shown) warms the next one by ``WARMER`` up to
        ``WARMEST``: when samples collapse, diversity is what is missing."""
        if slot == 0:
            return Sampling(temperature=0.0, seed=self.options.seed)
        search = self.search
        index = len(search.candidates) if search else slot
        repeats = search.repeats if search else 0
        hottest = max(WARMEST, self.options.temperature)
        warmth = min(self.options.temperature + WARMER * repeats, hottest)
        return Sampling(temperature=round(warmth, 3), seed=self.options.seed + 1 + index)

    def _try(
        self, reply: ModelReply, targets: list[Site], round_: int, sampling: Sampling
    ) -> _Tried | LoopStop | None:
        """Splice, apply, test one reply; its record; None when it never reached a run."""
        search = self.search
        assert search is not None  # noqa: S101
        index = len(search.candidates) + 1
        base = {
            "index": index,
            "round": round_,
            "temperature": sampling.temperature,
            "seed": sampling.seed,
            "output_tokens": reply.usage.output_tokens,
        }
        try:
            texts, functions = self._splice(targets, reply)
        except Refused as refused:
            search.last_refusal = (reply.text, refused.message)
            search.repeats += refused.code == "no_change"
            if refused.code in INVALID_CODES:
                self._invalid(refused)
            self._record(CandidateRecord(**base, outcome="refused", reason=refused.message))
            return None
        same = next((t for t in search.tried if t.texts == texts), None)
        if same is not None:
            search.repeats += 1
            self._record(
                CandidateRecord(
                    **base,
                    outcome="failed",
                    reason=f"the same code as candidate {same.record.index}",
                    functions=functions,
                    tests_run=same.run.tests_run,
                    failures=same.run.failures,
                )
            )
            return None
        applied = self._apply(texts)
        if isinstance(applied, LoopStop):
            return applied
        if not applied.ok:
            self._record(
                CandidateRecord(
                    **base, outcome="denied", reason=applied.message, functions=functions
                )
            )
            return None
        tested = self._tool("run_tests", RunTestsArgs())
        if isinstance(tested, LoopStop):
            return tested
        run = self.toolbox.test_runs[-1]
        outcome: CandidateOutcome = "passed" if run.passed else "failed"
        record = CandidateRecord(
            **base,
            outcome=outcome,
            reason=run.reason,
            functions=functions,
            tests_run=run.tests_run,
            failures=run.failures,
        )
        tried = _Tried(record, texts, run, reply.text)
        search.tried.append(tried)
        self._record(record)
        return tried

    def _splice(self, targets: list[Site], reply: ModelReply) -> tuple[dict[str, str], list[str]]:
        search = self.search
        assert search is not None  # noqa: S101
        texts = dict(search.original)
        functions: list[str] = []
        first: Refused | None = None
        for path in dict.fromkeys(site.path for site in targets):
            mine = [site for site in targets if site.path == path]
            try:
                spliced = splice(search.original[path], mine, reply.text, truncated=reply.truncated)
            except Refused as refused:
                first = first or refused
                continue
            texts[path] = spliced.text
            functions.extend(spliced.functions)
        if not functions:
            assert first is not None  # noqa: S101 - every path was refused
            raise first
        return texts, functions

    def _apply(self, texts: dict[str, str]) -> ToolOutcome | LoopStop:
        search = self.search
        assert search is not None  # noqa: S101
        edits = [
            Edit(path=path, old=change.old, new=change.new)
            for path, text in texts.items()
            if text != search.current[path]
            for change in [edit_for(search.current[path], text)]
        ]
        if not edits:
            return ToolOutcome(tool="apply_patch", ok=True, message="nothing to change")
        outcome = self._tool("apply_patch", ApplyPatchArgs(edits=edits))
        if not isinstance(outcome, LoopStop) and outcome.ok:
            search.current.update(texts)
        return outcome

    def _feedback(self, what: str) -> list[Exchange]:
        """The next round's history: the best failing candidate and its failure, else the
        last unusable reply and why; empty when there is neither."""
        search = self.search
        assert search is not None  # noqa: S101
        if search.tried:
            best = max(search.tried, key=lambda tried: tried.score)
            output = best.run.sandbox.output.decode("utf-8", errors="replace")
            feedback = prompts.REPAIR_FEEDBACK.format(
                failure=failure_text(output, FAILURE_CHARS), what=what
            )
            return [Exchange(reply=best.reply, observation=feedback)]
        if search.last_refusal is not None:
            reply, why = search.last_refusal
            return [
                Exchange(reply=reply, observation=prompts.REPAIR_REFUSED.format(why=why, what=what))
            ]
        return []

    def _settle(self, stop: LoopStop) -> LoopStop:
        """Leave the best tree seen: a failing candidate that passes more tests than the
        original, else the original (the last candidate is not kept for being last)."""
        search = self.search
        if search is None or stop.end in ("cancelled", "timeout", "sandbox_error"):
            return stop
        baseline = search.baseline
        original_score = (baseline.tests_run - baseline.failures, -baseline.failures)
        better = [
            t
            for t in search.tried
            if t.score > original_score and t.run.sandbox.status == "completed"
        ]
        wanted = max(better, key=lambda t: t.score).texts if better else search.original
        if wanted != search.current:
            restored = self._apply(wanted)
            if isinstance(restored, LoopStop):
                return restored
        if better:
            best = max(better, key=lambda t: t.score)
            self.state.model_summary = (
                f"no candidate passed; kept candidate {best.record.index}, which passes "
                f"{best.score[0]} of {best.run.tests_run} visible tests"
            )
        return stop

    # ------------------------------------------------------------------ plumbing

    def _localise(self, output: str) -> Context:
        from sandbox_agent.repair.localise import localise

        files, _more = self.toolbox.repository_files(records.MAX_FILES_WITH_TASK)
        protected = self.toolbox.policy.protected_reason
        tests = tuple(f for f in files if f.endswith(".py") and protected(f) is not None)
        return localise(frames(output), self._read, lambda path: protected(path) is not None, tests)

    def _read(self, path: str) -> str | None:
        try:
            content = self.toolbox.workspace.fs.read_bytes(
                path, self.toolbox.tool_limits.max_patch_file_bytes
            )
            return content.decode("utf-8")
        except (ToolDenied, UnicodeDecodeError, OSError):
            return None

    def _text(self, path: str) -> str:
        text = self._read(path)
        assert text is not None  # noqa: S101 - localise read it a moment ago
        return text

    def _ask(self, task: str, history: list[Exchange], sampling: Sampling) -> ModelReply | LoopStop:
        """One model call, within the run's budgets; a sandbox is made ahead meanwhile."""
        if (stop := check_budgets(self.config, self.state, self.cancel)) is not None:
            return stop
        self.toolbox.prestart()
        request = ModelRequest(
            system=prompts.REPAIR_SYSTEM,
            task=task,
            tools=[],
            history=history,
            deadline=self.cancel.deadline,
            mode="text",
            sampling=sampling,
            max_output_tokens=self.options.candidate_tokens,
        )
        return self._complete(request)

    def _complete(self, request: ModelRequest) -> ModelReply | LoopStop:
        if self.fitter is not None:
            request = _fit(self.fitter, request, self.trace)
        began = time.monotonic()
        try:
            reply = self.provider.complete(request)
        except BudgetExhausted as error:
            return LoopStop("budget_exhausted", str(error))
        except InfrastructureError as error:
            return _provider_failed(error, self.config, self.state, self.trace, self.cancel)
        if self.fitter is not None:
            self.fitter.observe(request, reply.usage.input_tokens)
        used = self.state.used
        used.iterations += 1
        used.input_tokens += reply.usage.input_tokens
        used.output_tokens += reply.usage.output_tokens
        used.cost_usd += reply.usage.cost_usd
        self.state.model = reply.model or self.state.model
        sampling = request.sampling
        self.trace.emit(
            "model_turn",
            iteration=used.iterations,
            reply=self.trace.redact_text(reply.text)[:MAX_REPLY_CHARS_IN_TRACE],
            reply_chars=len(reply.text),
            duration_ms=round((time.monotonic() - began) * 1000, 3),
            usage=reply.usage.model_dump(),
            notes=list(reply.notes),
            budgets=used.model_dump(),
            mode=request.mode,
            truncated=reply.truncated,
            **({"sampling": sampling.model_dump()} if sampling is not None else {}),
            **({"timings": reply.timings} if reply.timings else {}),
        )
        return reply

    def _tool(self, tool: ToolName, args: ToolArgs) -> ToolOutcome | LoopStop:
        """One tool call made by the controller, counted and recorded as the model's are."""
        call = ToolCall(tool=tool, args=args)
        used = self.state.used
        used.tool_calls += 1
        try:
            outcome = self.toolbox.execute(call)
        except InfrastructureError as error:
            self.trace.emit("tool_error", tool=tool, error=summarise_exception(error))
            return LoopStop("sandbox_error", f"{tool} failed on our side: {error}"[:300])
        if outcome.denial is not None:
            from sandbox_agent.controller.parse import denial_kind

            if denial_kind(outcome.denial) == "policy":
                used.policy_denials += 1
        record = records.tool_call_record(outcome, redact=self.trace.redact_text)
        self.state.tool_calls.append(record)
        self.trace.emit(
            "tool_call",
            tool=tool,
            arguments=records.arguments_for_trace(args),
            ok=outcome.ok,
            denial=outcome.denial,
            outcome=record.result,
            duration_ms=record.duration_ms,
            budgets=used.model_dump(),
            by="controller",
        )
        return outcome

    def _invalid(self, refused: Refused) -> None:
        self.state.used.invalid_outputs += 1
        self.trace.emit(
            "invalid_output",
            denial=f"repair.{refused.code}",
            message=refused.message,
            budgets=self.state.used.model_dump(),
        )

    def _record(self, record: CandidateRecord) -> None:
        assert self.search is not None  # noqa: S101
        self.search.candidates.append(record)
        self.trace.emit("candidate", **record.model_dump())

    # ------------------------------------------------------------------ no change

    def _answer(self, situation: str) -> LoopStop:
        """One plain-text answer for a task that needs no change; the run changes nothing."""
        files, truncated = self.toolbox.repository_files(records.MAX_FILES_WITH_TASK)
        excerpts = self._excerpts(files)
        task = prompts.ANSWER_TASK.format(
            task=self.config.task,
            situation=situation,
            files="\n".join(files) + ("\n(more not listed)" if truncated else ""),
            excerpts=excerpts,
        )
        if (stop := check_budgets(self.config, self.state, self.cancel)) is not None:
            return stop
        request = ModelRequest(
            system=prompts.ANSWER_SYSTEM,
            task=task,
            tools=[],
            deadline=self.cancel.deadline,
            mode="text",
            sampling=Sampling(temperature=0.0, seed=self.options.seed),
            max_output_tokens=ANSWER_TOKENS,
        )
        reply = self._complete(request)
        if isinstance(reply, LoopStop):
            return reply
        summary = " ".join(reply.text.split())[:MAX_SUMMARY_CHARS]
        self.state.model_summary = summary
        if "finish" in self.allowed:
            self._tool("finish", FinishArgs(summary=summary))
        return LoopStop("finished", "no change needed: " + situation.rstrip("."))

    def _excerpts(self, files: list[str]) -> str:
        """The first lines of a few files (the README first), read as the reads they are."""
        readmes = [f for f in files if f.lower().startswith("readme")]
        sources = [
            f
            for f in files
            if f.endswith(".py") and self.toolbox.policy.protected_reason(f) is None
        ]
        shown = []
        for path in (readmes + sources)[:ANSWER_EXCERPT_FILES]:
            if "read_file" not in self.allowed:
                break
            outcome = self._tool(
                "read_file", ReadFileArgs(path=path, end_line=ANSWER_EXCERPT_LINES)
            )
            if isinstance(outcome, LoopStop) or not outcome.ok:
                continue
            shown.append(
                prompts.fenced(
                    f"{path}, first lines", str(outcome.result.get("content", "")), "text"
                )
            )
        return ("\nExcerpts:\n" + "".join(shown)) if shown else ""
