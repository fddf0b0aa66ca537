"""The ``repair`` strategy: the controller leads, the model writes functions (issue 29).

Reading order (every step a tool call in the trace, every candidate a verified run):

1. ``run_tests`` once. Passing already (or a task that allows no edit): one plain
   answer, no change (``_answer``).
2. Localise (``repair.localise``): the failing frames' functions in editable files, else
   what the failing tests import; ``read_file`` of each file shown.
3. Round 0: ``candidates`` replies to one prompt, the first greedy, then sampled with
   seeds ``seed + k`` (with ``--focus rotate``, each asking for one of the functions
   shown in turn: ``repair_draws``); each spliced into the original module (``repair.splice``),
   applied with ``apply_patch`` (the policy holds) and tested in its own sandbox, made
   ahead while the model writes. The first to pass the visible tests ends the search.
4. Rounds 1..R: from the best failing candidate and its concrete failure (``--feedback
   tried``: every change tested so far). A slot whose reply repeats tested code is asked
   again up to ``--redraws`` times.
5. Nothing passed: the best tree seen stays (more tests passing than the original's),
   else the original. The controller's final run decides the status, never this loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from sandbox_agent import prompts
from sandbox_agent.controller import repair_draws as draws
from sandbox_agent.controller.loop_common import LoopStop
from sandbox_agent.controller.models import CandidateOutcome, CandidateRecord
from sandbox_agent.controller.repair_answer import answer
from sandbox_agent.controller.repair_check import Check, module_check
from sandbox_agent.controller.repair_context import (
    FAILURE_CHARS,
    does_not_compile,
    localise_run,
    nothing_to_repair,
    read_text,
    repair_prompt,
    spectrum_hint,
    tried_prompt,
)
from sandbox_agent.controller.steps import Steps, Strategy
from sandbox_agent.providers.base import Exchange, ModelReply, ModelRequest, Sampling
from sandbox_agent.repair.edits import edit_for
from sandbox_agent.repair.failures import failure_text
from sandbox_agent.repair.localise import Context, Site
from sandbox_agent.repair.splice import Refused, splice_files
from sandbox_agent.tools.contracts import (
    ApplyPatchArgs,
    Edit,
    ReadFileArgs,
    RunTestsArgs,
    ToolOutcome,
)
from sandbox_agent.tools.testrun import NO_TEST_RAN, TestRun

SAME_CODE = "the same code as candidate"
"""How a repeated candidate's reason begins (then the earlier candidate's index)."""
INVALID_CODES = ("no_code", "cut_off", "syntax", "wrong_function")
"""Refusals that are invalid outputs; a reply that changes nothing is a valid, useless one."""


BUG_STOPS = frozenset({"completed", "timeout", "oom_killed", "output_limit", "killed"})
"""Ends of the visible tests' run that the code under test can cause, so a candidate can
mend: a failing report, and a limit it ran into (time, memory, output, a fatal signal:
HumanEvalFix row 123's endless loop appended until the memory ran out). ``refused`` and
``cancelled`` are the sandbox's or the caller's, not the code's: no model call then."""


@dataclass
class _Tried:
    """A candidate that reached the sandbox: its texts, its run, its reply."""

    record: CandidateRecord
    texts: dict[str, str]
    run: TestRun
    reply: str
    new_skips: int = 0
    """Tests it skipped that the original runs: not passing ones (SR-13 F1)."""

    @property
    def score(self) -> tuple[int, int]:
        failing = self.run.failures + self.new_skips
        return (self.run.tests_run - failing, -failing)


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


@Strategy
def repair_loop(steps: Steps) -> LoopStop:
    """Localise, sample whole-function candidates, test each; until one passes or the
    candidate, round or run budgets are spent (the module docstring has the steps)."""
    return _Repair(steps).run()


class _Repair:
    def __init__(self, steps: Steps) -> None:
        self.steps = steps
        self.config = steps.config
        self.options = steps.config.repair
        self.toolbox = steps.toolbox
        self.trace = steps.trace
        self.state = steps.state
        self.cancel = steps.cancel
        self.allowed = steps.allowed
        self.search: _Search | None = None
        self.check: Check | None = None

    # ------------------------------------------------------------------ the steps

    def run(self) -> LoopStop:
        try:
            return self._run()
        finally:
            if self.search is not None:
                self.state.candidates = list(self.search.candidates)

    def _run(self) -> LoopStop:
        if not {"run_tests", "apply_patch"} <= self.allowed:
            return answer(self.steps, prompts.ANSWER_NO_EDITS, self.options.seed)
        outcome = self.steps.tool("run_tests", RunTestsArgs())
        if isinstance(outcome, LoopStop):
            return outcome
        if not outcome.ok:
            return LoopStop("finished", f"the visible tests could not be run: {outcome.message}")
        check = module_check(self.steps, self.toolbox.test_runs[-1], self.options.module_checks)
        if isinstance(check, LoopStop):
            return check
        self.check, baseline = check, check.baseline
        if baseline.passed:
            passing = prompts.ANSWER_TESTS_PASS.format(tests_run=baseline.tests_run)
            return answer(self.steps, passing, self.options.seed)
        if baseline.status == "completed" and baseline.reason.startswith(NO_TEST_RAN):
            # nothing a candidate could be checked against: no model call is worth its cost,
            # unless the task allows a repository without tests (then it is read-only)
            if self.config.allow_no_tests:
                return answer(self.steps, prompts.ANSWER_NO_TESTS, self.options.seed)
            printed = baseline.sandbox.output.decode("utf-8", errors="replace")
            if broken := does_not_compile(self.toolbox, printed):
                return LoopStop("finished", broken, untried=True)
            return LoopStop("finished", f"the visible tests: {baseline.reason}")
        if baseline.status not in BUG_STOPS:
            why = f"the visible tests did not run to an end ({baseline.reason})"
            return LoopStop("finished", why)
        output = baseline.sandbox.output.decode("utf-8", errors="replace")
        if baseline.status != "completed":  # no traceback may say where: say what happened
            output = f"The tests did not finish: {baseline.reason}\n{output}"
        # the spectrum (which functions the failing tests ran) ranks what is shown; not for
        # a run that did not end (it would not end again) or a suite checked by module
        spectral = baseline.status == "completed" and not check.silent
        hint = spectrum_hint(self.toolbox) if spectral else ""
        context = localise_run(self.toolbox, output, hint)
        if not context.targets:
            why = does_not_compile(self.toolbox, output) or nothing_to_repair(context)
            return LoopStop("finished", why, untried=True)
        texts = {site.path: read_text(self.toolbox, site.path) for site in context.targets}
        original = {path: text for path, text in texts.items() if text is not None}
        if len(original) != len(texts):  # localise read them a moment ago
            why = "the repair strategy could not read a file to repair again"
            return LoopStop("finished", why, untried=True)
        self.search = _Search(original=original, current={}, baseline=baseline)
        self.search.current = dict(self.search.original)
        shown = dict.fromkeys([s.path for s in context.targets + context.tests])
        for path in shown if "read_file" in self.allowed else ():
            # what the model is shown, recorded as the reads they are
            if isinstance(stop := self.steps.tool("read_file", ReadFileArgs(path=path)), LoopStop):
                return self._settle(stop)
        return self._search(output, context)

    def _search(self, output: str, context: Context) -> LoopStop:
        assert self.search is not None  # noqa: S101 - set by _run
        options = self.options
        targets = list(context.targets)
        task = first = repair_prompt(self.config.task, output, context)
        cap = draws.reply_cap(options, targets)
        what = prompts.what_to_write(s.qualname for s in targets)
        only = prompts.only_changed(s.qualname for s in targets)
        history: list[Exchange] = []
        for round_ in range(options.rounds + 1):
            count = options.candidates if round_ == 0 else options.round_candidates
            if round_ > 0:
                fed = self._feedback(first, what, only, output, context)
                if fed is None:
                    break
                task, history = fed
            for slot, draw in self._draws(count):
                asked_so_far = len(self.search.candidates)
                sampling = draws.sampling(
                    options, round_, slot, asked_so_far, self.search.repeats, draw=draw
                )
                focus = draws.focus(options, targets, round_, slot)
                prompt = repair_prompt(self.config.task, output, context, focus) if focus else task
                asked = self._ask(prompt, history, sampling, cap)
                if isinstance(asked, LoopStop):
                    return self._settle(asked)
                tried = self._try(asked, targets, round_, sampling, focus)
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

    def _draws(self, count: int) -> Iterator[tuple[int, int]]:
        """A round's (slot, draw) pairs: each of ``count`` slots once, and again, up to
        ``--redraws`` more times, while its last reply repeated tested code."""
        search = self.search
        assert search is not None  # noqa: S101
        for slot in range(count):
            for draw in range(self.options.redraws + 1):
                yield slot, draw
                last = search.candidates[-1] if search.candidates else None
                if last is None or (last.repeat_of is None and last.refusal != "no_change"):
                    break

    # ------------------------------------------------------------------ candidates

    def _try(
        self,
        reply: ModelReply,
        targets: list[Site],
        round_: int,
        sampling: Sampling,
        focus: Site | None = None,
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
            "focus": focus.qualname if focus is not None else None,
        }
        try:
            texts, functions = splice_files(search.original, targets, reply.text, reply.truncated)
        except Refused as refused:
            search.last_refusal = (reply.text, refused.message)
            search.repeats += refused.code == "no_change"
            if refused.code in INVALID_CODES:
                self.steps.invalid(f"repair.{refused.code}", refused.message)
            refusal = CandidateRecord(
                **base, outcome="refused", reason=refused.message, refusal=refused.code
            )
            self._record(refusal)
            return None
        same = next((t for t in search.tried if t.texts == texts), None)
        if same is not None:
            search.repeats += 1
            self._record(
                CandidateRecord(
                    **base,
                    outcome="failed",
                    reason=f"{SAME_CODE} {same.record.index}",
                    repeat_of=same.record.index,
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
        assert self.check is not None  # noqa: S101 - set by _run
        checked = self.check.run()
        if isinstance(checked, LoopStop):
            return checked
        run = checked.run
        outcome: CandidateOutcome = "passed" if run.passed else "failed"
        record = CandidateRecord(
            **base,
            outcome=outcome,
            reason=run.reason,
            functions=functions,
            tests_run=run.tests_run,
            failures=run.failures,
        )
        tried = _Tried(record, texts, run, reply.text, checked.new_skips)
        search.tried.append(tried)
        self._record(record)
        return tried

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
        outcome = self.steps.tool("apply_patch", ApplyPatchArgs(edits=edits))
        if not isinstance(outcome, LoopStop) and outcome.ok:
            search.current.update(texts)
        return outcome

    def _feedback(
        self, task: str, what: str, only: str, output: str, context: Context
    ) -> tuple[str, list[Exchange]] | None:
        """A later round's prompt and history: the best failing candidate replayed with its
        failure (``--feedback tried``: the first prompt with every change tested so far
        instead, best first), else the last unusable reply and why; None for neither.
        ``task`` is the first round's prompt, which the replay keeps (the server's cache)."""
        search = self.search
        assert search is not None  # noqa: S101
        if search.tried:
            ranked = sorted(search.tried, key=lambda tried: tried.score, reverse=True)
            if self.options.feedback == "tried":
                shown = [(tried.texts, tried.run) for tried in ranked]
                return tried_prompt(self.config.task, output, context, search.original, shown), []
            best = ranked[0]
            printed = best.run.sandbox.output.decode("utf-8", errors="replace")
            failure = failure_text(printed, FAILURE_CHARS)
            feedback = prompts.REPAIR_FEEDBACK.format(failure=failure, what=what, only=only)
            return task, [Exchange(reply=best.reply, observation=feedback)]
        if search.last_refusal is not None:
            reply, why = search.last_refusal
            refused = prompts.REPAIR_REFUSED.format(why=why, what=what, only=only)
            return task, [Exchange(reply=reply, observation=refused)]
        return None

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

    def _ask(
        self, task: str, history: list[Exchange], sampling: Sampling, cap: int
    ) -> ModelReply | LoopStop:
        """One model call, within the run's budgets; a sandbox is made ahead meanwhile."""
        if (stop := self.steps.budget_stop()) is not None:
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
            max_output_tokens=cap,
        )
        return self.steps.complete(request)

    def _record(self, record: CandidateRecord) -> None:
        assert self.search is not None  # noqa: S101
        self.search.candidates.append(record)
        self.trace.emit("candidate", **record.model_dump())
