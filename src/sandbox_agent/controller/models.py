"""The controller's contracts: what a run is asked to do, and what it established.

``RunResult`` is the public ``--json`` result of docs/CONTRACT.md section 5 (fixed: fields
may be added, never renamed or dropped).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.deps.models import DepsOptions, Package
from sandbox_agent.providers import ChosenProvider
from sandbox_agent.providers.errors import ProviderError
from sandbox_agent.repair.splice import RefusalCode
from sandbox_agent.sandbox.base import Runtime, SandboxLimits
from sandbox_agent.tools.contracts import TOOL_NAMES, ToolName
from sandbox_agent.workspace.diff import DiffLimits

RunStatus = Literal[
    "SUCCEEDED",
    "FAILED",
    "POLICY_ABORTED",
    "BUDGET_EXHAUSTED",
    "TIMEOUT",
    "CANCELLED",
    "SANDBOX_ERROR",
]
RunnerChoice = Literal["auto", "unittest", "pytest"]

MAX_OUTPUT_TAIL_CHARS = 4000
"""``FinalTests.output_tail``, at most: room for the 2 KiB tail with every character
widened by redaction markers."""
DEFAULT_MAX_ITERATIONS = 20
DEFAULT_MAX_TOOL_CALLS = 30
DEFAULT_MAX_WALL_SECONDS = 300.0
DEFAULT_MAX_DENIALS = 3
DEFAULT_MAX_INVALID_OUTPUTS = 3


class Budgets(BaseModel):
    """Loop budgets, each with a default and a ``run`` flag."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_iterations: int = Field(DEFAULT_MAX_ITERATIONS, ge=1)
    """Model turns."""
    max_tool_calls: int = Field(DEFAULT_MAX_TOOL_CALLS, ge=1)
    """Tool calls executed or denied (invalid outputs are counted separately)."""
    max_wall_seconds: float = Field(DEFAULT_MAX_WALL_SECONDS, gt=0)
    """Wall clock of the whole run, final test run included."""
    max_denials: int = Field(DEFAULT_MAX_DENIALS, ge=0)
    """Policy denials tolerated; one more ends the run ``POLICY_ABORTED``."""
    max_invalid_outputs: int = Field(DEFAULT_MAX_INVALID_OUTPUTS, ge=0)
    """Unparseable or invalid model outputs tolerated; one more ends it ``BUDGET_EXHAUSTED``."""


DEFAULT_PRESTART = 2
"""At most two sandboxes made ahead (created, verified, started, attested): one for the
next test run, hidden behind the model's turn, and a second for a provider that knows
its plan holds two (docs/SANDBOX.md, "Pre-started sandboxes")."""
MAX_PRESTART = 4


Strategy = Literal["tools", "repair"]
STRATEGIES: tuple[Strategy, ...] = ("tools", "repair")
REPAIR_BY_DEFAULT: tuple[str, ...] = ("local",)
"""Providers whose default strategy is ``repair``: a small local model fixes far more
with the controller leading (docs/results, issue 29); every other provider defaults to
``tools``, the model-driven loop a strong hosted model drives well."""


def default_strategy(provider: str) -> Strategy:
    """The strategy a run of ``provider`` uses when none is asked for."""
    return "repair" if provider in REPAIR_BY_DEFAULT else "tools"


DEFAULT_CANDIDATES = 5
"""First-round candidates of ``repair``: one greedy, then sampled ones (issue 29: the
development split's best-of-5 was worth 7 rows over greedy alone)."""
DEFAULT_ROUNDS = 2
DEFAULT_ROUND_CANDIDATES = 2
DEFAULT_TEMPERATURE = 0.8
DEFAULT_SEED = 1234
DEFAULT_CANDIDATE_TOKENS = 2048
"""The most one candidate may write: room for several long functions written back
whole; one short function gets 1,024 (``repair_draws.reply_cap``)."""
DEFAULT_MODULE_CHECKS = 8
"""Test modules a silent suite is checked by, one sandbox run each per candidate."""
DEFAULT_REDRAWS = 0
"""Draws more of a slot whose reply repeats tested code; 0 until measured against the
same-day baseline (docs/DECISIONS.md, "A repeated candidate can be drawn again")."""
MAX_REDRAWS = 8
Feedback = Literal["replay", "tried"]
FEEDBACKS: tuple[Feedback, ...] = ("replay", "tried")
DEFAULT_FEEDBACK: Feedback = "replay"
"""What a later round is shown: ``replay``, the best failing candidate as the model's own
reply, then its failure; ``tried``, the changes tested so far as diffs, asking for a
different one. ``replay`` until measured (docs/DECISIONS.md, "A later round can show
what was tried")."""
Focus = Literal["rotate", "off"]
FOCUSES: tuple[Focus, ...] = ("rotate", "off")
DEFAULT_FOCUS: Focus = "off"
"""``rotate``: when several functions are shown, each sampled first-round candidate asks
for one of them in turn. Not the default: on realrepos' development split it fixed no
more (docs/DECISIONS.md, "One function per sampled candidate")."""


class RepairOptions(BaseModel):
    """The ``repair`` strategy's limits (``run``/``eval`` flags), each with a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    candidates: int = Field(DEFAULT_CANDIDATES, ge=1, le=64)
    """First-round candidates: the first greedy, the others sampled (``--candidates``)."""
    rounds: int = Field(DEFAULT_ROUNDS, ge=0, le=16)
    """Repair rounds after the first, each from the best failing candidate and its
    concrete failure (``--rounds``)."""
    round_candidates: int = Field(DEFAULT_ROUND_CANDIDATES, ge=1, le=64)
    """Candidates per repair round, all sampled (``--round-candidates``)."""
    temperature: float = Field(DEFAULT_TEMPERATURE, gt=0.0, le=2.0)
    """Temperature of the sampled candidates (``--temperature``)."""
    seed: int = Field(DEFAULT_SEED, ge=0, le=2**31 - 1_000)
    """Sampled candidate k of a run uses ``seed + k``: a run is repeatable, and runs with
    different seeds are independent samples (``--seed``)."""
    candidate_tokens: int = Field(DEFAULT_CANDIDATE_TOKENS, ge=64, le=32_768)
    """The most one candidate's reply may take (``--candidate-tokens``): its cap is room
    for the functions shown, at least 1,024, at most this."""
    module_checks: int = Field(DEFAULT_MODULE_CHECKS, ge=0, le=64)
    """When the visible suite completes without a report (a test module ends the runner),
    candidates are checked module by module if the original collected at most this many
    modules; 0: never (``--module-checks``; docs/STRATEGIES.md)."""
    redraws: int = Field(DEFAULT_REDRAWS, ge=0, le=MAX_REDRAWS)
    """A slot whose reply wrote the original's or an earlier candidate's code is asked
    again, sampled, up to this many more times; each draw is a candidate and a model turn
    (``--redraws``)."""
    feedback: Feedback = DEFAULT_FEEDBACK
    """What a later round is shown (``--feedback``): its best failing candidate replayed,
    or every change tested so far."""
    focus: Focus = DEFAULT_FOCUS
    """``rotate``: with several functions shown, the sampled first-round candidates ask
    for one each, in the order shown (``--focus``); ``off``: every candidate asks for all."""


class RunConfig(ChosenProvider):
    """One agent run: where the repository comes from, the task, the provider and its
    options (``ChosenProvider``), and the limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str = Field(min_length=1, max_length=20_000)
    fixture: str | None = None
    """A fixture name, resolved under ``fixtures_dir``; exclusive with ``repo``."""
    fixtures_dir: Path | None = None
    repo: Path | None = None
    """Any local folder; copied, never modified."""
    runtime: Runtime = "runc"
    runner: RunnerChoice = "auto"
    budgets: Budgets = Budgets()
    limits: SandboxLimits = SandboxLimits()
    prestart: int = Field(DEFAULT_PRESTART, ge=0, le=MAX_PRESTART)
    """Sandboxes kept ready ahead of the next whole-suite ``run_tests`` (0: start each cold)."""
    diff_limits: DiffLimits = DiffLimits()
    """Bounds on the final diff (time, size, difflib's work per file): past them a file is
    summarised, never diffed unboundedly (SR-8 C8-4)."""
    allowed_tools: tuple[ToolName, ...] = TOOL_NAMES
    """Per-task tool allowlist."""
    deps: DepsOptions = DepsOptions()
    """The repository's dependency environment: made from its declarations before the
    first model turn, mounted read-only in every sandbox (issue 17)."""
    trace_dir: Path | None = None
    """Parent of the run's folder; a default under the state folder when None."""
    run_id: str | None = None
    """Fixed by the caller (the service) or generated."""
    strategy: Strategy = "tools"
    """``tools``: the model drives the six tools; ``repair``: the controller gathers the
    context, samples whole-function candidates and checks each in a sandbox."""
    repair: RepairOptions = RepairOptions()
    allow_no_tests: bool = False
    """Run on a repository with no test file (``--allow-no-tests``): a task that needs no
    tests, which cannot end ``SUCCEEDED``; otherwise such a repository is refused before
    the first model call (``controller.test_files``)."""


class FixtureIntegrity(BaseModel):
    model_config = ConfigDict(extra="forbid")

    intact: bool
    sha256_before: str
    sha256_after: str
    sha256_copy: str = ""
    """The digest of the copy the run was given, taken after copying (the original can
    change between its hash and its copy; ``Workspace.sha256_copy``)."""


class FinalTests(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: bool
    tests_run: int
    failures: int
    status: str
    """The sandbox status of that run (``completed``, ``timeout``, ``refused``, ...)."""
    reused: bool = False
    """True when the verdict is the model's last whole-suite ``run_tests``: it ran, attested,
    on exactly the bytes the workspace held at the end (same tree hash), so no second,
    identical sandbox run was made."""
    judge: Literal["in_process"] = "in_process"
    """Who judged the verdict: ``in_process``, the repository's own suite, counted by the
    trusted runner inside the very process that runs the code under test (which can
    therefore forge it: SR-2's residual, bounded by the protected tests and the
    tripwire). An evaluation's held-out check is judged ``out_of_process`` instead
    (``evals.heldout``; docs/EVALS.md)."""
    baseline_tests: int = 0
    """Test ids the original tree's suite collected at the start (SR-8 C8-1); the verdict
    passes only when the final run ran every one of them."""
    missing_tests: list[str] = Field(default_factory=list, max_length=20)
    """The first of those the final run did not run (``broken:<module>`` for a module of
    the original that could not be imported and none of whose tests ran)."""
    output_tail: str | None = Field(None, max_length=MAX_OUTPUT_TAIL_CHARS)
    """The last lines of that run's output, as a ``run_tests`` call shows them to the
    model (at most 20 lines of 200 characters, 2 KiB, control characters replaced), then
    redacted; None when it printed nothing (issue 30)."""


class RunEnvironment(BaseModel):
    """docs/CONTRACT.md section 5: a repository with dependencies adds ``environment``."""

    model_config = ConfigDict(extra="forbid")

    hash: str
    """The resolved set's sha256 (``sandbox_agent.deps``): same hash, same packages."""
    packages: list[Package]


class BudgetUsed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    iterations: int = 0
    tool_calls: int = 0
    policy_denials: int = 0
    invalid_outputs: int = 0
    wall_seconds: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class ToolCallRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    ok: bool
    denial: str | None
    duration_ms: float
    result: dict[str, Any] = Field(default_factory=dict)


CandidateOutcome = Literal["passed", "failed", "refused", "denied"]


class CandidateRecord(BaseModel):
    """One ``repair`` candidate: how it was sampled and what became of it."""

    model_config = ConfigDict(extra="forbid")

    index: int
    """1-based, in the order they were asked for."""
    round: int
    """0: the first round; 1..R: repair rounds."""
    temperature: float
    seed: int | None
    outcome: CandidateOutcome
    """``passed``/``failed``: the visible tests in a verified sandbox; ``refused``: the
    reply could not become code (no block, cut off, syntax, wrong function, no change);
    ``denied``: ``apply_patch`` refused it (a protected path)."""
    reason: str
    functions: list[str] = Field(default_factory=list)
    tests_run: int | None = None
    failures: int | None = None
    output_tokens: int = 0
    focus: str | None = None
    """The one function this candidate was asked for (``--focus rotate``); None: all
    the functions shown."""
    refusal: RefusalCode | None = None
    """``refused``: why, as a code (``no_change``: the code shown, written back as it was;
    the others are invalid outputs)."""
    repeat_of: int | None = None
    """The earlier candidate whose code this one repeats: not tested again."""


class RunResult(BaseModel):
    """The public result (``--json``). ``status`` is computed by the controller from evidence."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    status: RunStatus
    reason: str
    diff: str
    files_changed: list[str]
    final_tests: FinalTests | None
    budget_used: BudgetUsed
    fixture: FixtureIntegrity
    trace_path: str
    tool_calls: list[ToolCallRecord]
    run_dir: str = ""
    """The run's folder: its trace, result, diff and evidence (``verify RUN_DIR``)."""
    provider: str = ""
    model: str = ""
    runtime: Runtime = "runc"
    model_summary: str | None = None
    """What the model said when it finished: recorded, never believed."""
    environment: RunEnvironment | None = None
    """The dependency environment every sandbox of the run had; None: none declared."""
    node: str | None = None
    """``serve --ray``: the cluster node that ran the run (``ip/node id``); None locally."""
    strategy: Strategy = "tools"
    candidates: list[CandidateRecord] = Field(default_factory=list)
    """``repair``: every candidate tried, in order (empty for ``tools``)."""
    provider_error: ProviderError | None = None
    """A run that ended on a provider failure: what failed (``kind``, ``http_status``,
    ``type``, ``message``: bounded, redacted); None otherwise."""
