"""The abstract sandbox backend: what the controller asks of any place that runs tests.

A run is four separable phases, so a caller can create, verify and start the next
container before it is needed (``prepare`` ahead of time, ``start`` later):

1. ``prepare``: create the container from one spec and verify it against that spec;
2. ``start``: last check of cancellation and deadline, then start;
3. ``wait``: read PID 1's frames (attestation, output, exit report) until exit;
4. ``remove``: remove the container and report the result, never hiding a failure.

``run`` composes them with the precedence of docs/SANDBOX.md ("Classification") and
its cleanup rules (a container is always removed, a failed removal reported).
Every backend (Docker with runc or runsc today; Kubernetes or a remote host later)
must pass ``tests/sandbox/conformance``.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sandbox_supervisor.remote import CALL_TIMEOUT_S, MAX_CALL_TIMEOUT_S
from sandbox_supervisor.runner_report import MAX_COUNT, MAX_TEST_ID_CHARS, MAX_TEST_IDS

Runtime = Literal["runc", "runsc"]
RUNTIMES: tuple[Runtime, ...] = ("runc", "runsc")

SandboxStatus = Literal[
    "completed",  # valid attestation and an exit report that agrees with the runtime
    "timeout",
    "cancelled",
    "output_limit",
    "oom_killed",
    "killed",  # the workload died by a signal it did not choose to handle
    "refused",  # anything that could not be verified: a sandbox error, never success
]

MiB = 1024 * 1024
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MEMORY_BYTES = 512 * MiB
DEFAULT_CPUS = 1.0
DEFAULT_PIDS = 128
DEFAULT_NOFILE = 256
DEFAULT_FSIZE_BYTES = 64 * MiB
DEFAULT_TMPFS_BYTES = 64 * MiB
DEFAULT_OUTPUT_BUDGET_BYTES = 1 * MiB


class SandboxLimits(BaseModel):
    """Resource limits of one sandbox run. Each has a named default and a CLI flag."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, le=3600)
    """Wall-clock limit, enforced by PID 1 inside and by the host outside."""
    memory_bytes: int = Field(DEFAULT_MEMORY_BYTES, ge=16 * MiB)
    """Memory limit; memory+swap is set to the same value (no swap)."""
    cpus: float = Field(DEFAULT_CPUS, gt=0, le=64)
    """CPU quota in cores."""
    pids: int = Field(DEFAULT_PIDS, ge=8, le=65536)
    """Maximum number of processes and threads in the container."""
    nofile: int = Field(DEFAULT_NOFILE, ge=32, le=65536)
    """RLIMIT_NOFILE, soft and hard."""
    fsize_bytes: int = Field(DEFAULT_FSIZE_BYTES, ge=MiB)
    """RLIMIT_FSIZE, soft and hard: the largest file the workload may write."""
    tmpfs_bytes: int = Field(DEFAULT_TMPFS_BYTES, ge=MiB)
    """Size of the ``/tmp`` tmpfs (mounted noexec,nosuid,nodev)."""
    output_budget_bytes: int = Field(DEFAULT_OUTPUT_BUDGET_BYTES, ge=0)
    """Exact total of workload output bytes relayed to the host (stdout and stderr together)."""


JUDGE_ARGV: tuple[str, ...] = ("/usr/bin/python3", "-I", "-B", "-m", "sandbox_supervisor.judge")
CANDIDATE_ARGV: tuple[str, ...] = (
    "/usr/bin/python3",
    "-I",
    "-B",
    "-m",
    "sandbox_supervisor.candidate",
)


DEFAULT_JUDGE_CALL_TIMEOUT_S = CALL_TIMEOUT_S
"""The longest one request from the judge to the candidate may take, a call into the code
under test included: the judge's own default (``sandbox_supervisor.remote``), 10 s."""
MAX_JUDGE_SOURCE_CHARS = 128 * 1024
"""A held-out module's text, at most: escaped in PID 1's config (up to 6 bytes a
character), it must fit ``protocol.MAX_CONFIG_BYTES`` (1 MiB) with room to spare."""


class JudgeRequest(BaseModel):
    """A held-out check, judged out of process (issue 15; ``sandbox_supervisor.judge``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    module_name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    """The held-out unittest module's name, inside the judge."""
    source: str = Field(max_length=MAX_JUDGE_SOURCE_CHARS)
    """Its text: trusted evaluation data. It reaches the judge through PID 1's memory,
    never the workspace, so the code under test never sees the expected values."""
    candidate_argv: tuple[str, ...] = CANDIDATE_ARGV
    call_timeout_s: float = Field(DEFAULT_JUDGE_CALL_TIMEOUT_S, gt=0, le=MAX_CALL_TIMEOUT_S)
    """The deadline of each request to the candidate: a candidate that takes longer fails
    the check at once. The sandbox's ``timeout_s`` still bounds the whole check."""


class EnvironmentMount(BaseModel):
    """A repository's dependency environment, mounted read-only at ``/deps`` (issue 17)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host_path: Path
    """The environment's folder on the host (``manifest.json`` and ``site/``), read-only
    and named by its hash (``sandbox_agent.deps``)."""
    manifest_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of its ``manifest.json``: pinned in the spec, checked by PID 1."""


class SandboxRequest(BaseModel):
    """One command to run in a fresh sandbox over a read-only copy of the workspace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    argv: tuple[str, ...] = Field(min_length=1)
    """The workload's fixed argv (from the command allowlist), run with cwd ``/workspace``."""
    workspace: Path
    """Host folder mounted read-only at ``/workspace``."""
    runtime: Runtime = "runc"
    limits: SandboxLimits = SandboxLimits()
    workload_env: dict[str, str] = Field(default_factory=dict)
    """Extra variables PID 1 sets for the workload only (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``)."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Extra container labels (run id); the owner label is always added by the backend."""
    judge: JudgeRequest | None = None
    """A held-out check judged out of process: ``argv`` is then the judge's
    (``JUDGE_ARGV``), and the code under test runs in a separate candidate process."""
    environment: EnvironmentMount | None = None
    """The repository's dependency environment, or None (then nothing more is mounted)."""


TestId = Annotated[str, Field(min_length=1, max_length=MAX_TEST_ID_CHARS)]


class RunnerReport(BaseModel):
    """The structured verdict written by the trusted runner wrapper (not the workload's stdout)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runner: str
    tests_run: int = Field(ge=0, le=MAX_COUNT)
    failures: int = Field(ge=0, le=MAX_COUNT)
    errors: int = Field(ge=0, le=MAX_COUNT)
    skipped: int = Field(ge=0, le=MAX_COUNT, default=0)
    mode: Literal["run", "collect"] | None = None
    """``run``: ``ids`` are the tests that ran; ``collect``: those collected (nothing ran).
    None: a report without ids (a held-out check's judge)."""
    ids: tuple[TestId, ...] | None = Field(None, max_length=MAX_TEST_IDS)
    """The test ids (docs/SANDBOX_PROTOCOL.md); None when absent or more than fit."""
    broken: tuple[TestId, ...] = Field((), max_length=MAX_TEST_IDS)
    """What could not be collected: unittest module names, pytest collector node ids."""
    skipped_ids: tuple[TestId, ...] | None = Field(None, max_length=MAX_TEST_IDS)
    """Those of ``ids`` that were skipped (or, under pytest, expected to fail); None
    with ``ids`` (SR-13 F1: the baseline compares them with the original's)."""


class AttestationCheck(BaseModel):
    """One of PID 1's isolation checks, as its attestation record lists it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    ok: bool
    detail: str = ""


class Diagnostics(BaseModel):
    """Bounded, structured facts about a run, for refusals and for the record."""

    model_config = ConfigDict(extra="forbid")

    phase: str = "none"
    """The last phase reached: none, create, verify, start, attest, run, exit, remove."""
    container_id: str | None = None
    docker_state: str | None = None
    docker_exit_code: int | None = None
    oom_killed_flag: bool | None = None
    attestation: str = "missing"
    """``valid``, ``missing``, ``failed: <check names>`` or ``malformed: <why>``."""
    exit_report: str = "missing"
    """``valid``, ``missing``, ``mismatch: <why>`` or ``malformed: <why>``."""
    verification: str = "not run"
    """``ok`` or the first mismatching spec fields."""
    detail: str = ""
    """One bounded line (at most 500 characters) of extra context."""


class SandboxResult(BaseModel):
    """What one sandbox run established. ``status`` is computed by the host, from evidence."""

    model_config = ConfigDict(extra="forbid")

    status: SandboxStatus
    reason: str
    started: bool
    runtime: Runtime
    attested: bool = False
    exit_report_valid: bool = False
    exit_code: int | None = None
    prestarted: bool = False
    """Created, verified, started and attested ahead; this run sent the go and waited."""
    launch: Literal["exec", "fork"] | None = None
    """From the exit report: ``fork`` when the trusted runner ran in PID 1's forked interpreter."""
    """The workload's exit code (128+N for signal N), from an exit report Docker agrees with."""
    output: bytes = b""
    """The workload's output, at most the output budget."""
    output_truncated: bool = False
    runner_report: RunnerReport | None = None
    image_id: str | None = None
    spec_sha256: str | None = None
    attestation_sha256: str | None = None
    exit_report_sha256: str | None = None
    cleanup: str = "not needed"
    """``removed``, ``not needed`` or ``failed: <why>`` (then left to the reaper)."""
    attestation_checks: list[AttestationCheck] = Field(default_factory=list)
    """PID 1's checks as its attestation listed them, each bounded (none when no
    well-formed attestation arrived); whether they hold is ``attested``."""
    exit_report: dict[str, Any] | None = None
    """PID 1's exit report (signal, timeout, output bytes, duration, launch, OOM kills,
    runner report problem), when it was valid; its nonce is left out."""
    phase_ms: dict[str, float] = Field(default_factory=dict)
    diagnostics: Diagnostics = Field(default_factory=Diagnostics)


class CancelToken:
    """A cancellation flag and a deadline, checked before create, before start and while running."""

    def __init__(self, deadline: float | None = None, *, parent: CancelToken | None = None) -> None:
        """Args:
        deadline: a ``time.monotonic()`` instant after which nothing new may start, and
            a sandbox still running is killed (its run ends ``timeout``), or None.
        parent: a token whose cancellation cancels this one too (a background run's own
            token, which its owner can also cancel alone).
        """
        self._event = threading.Event()
        self.deadline = deadline
        self._parent = parent

    def cancel(self) -> None:
        """Ask every phase to stop; a running sandbox is killed within a second."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or (self._parent is not None and self._parent.cancelled)

    def deadline_passed(self) -> bool:
        if self._parent is not None and self._parent.deadline_passed():
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``, waking at once on cancellation; True if cancelled."""
        return self._event.wait(seconds)


class PreparedSandbox(BaseModel):
    """A created and verified container, not yet started."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    container_id: str
    request: SandboxRequest
    nonce: str
    spec_sha256: str
    image_id: str
    config: str = Field(repr=False)
    """PID 1's config (canonical JSON, the nonce in it), written on its stdin at start."""
    phase_ms: dict[str, float] = Field(default_factory=dict)


class SandboxBackend(ABC):
    """A place that runs one command in a fresh, verified, attested sandbox."""

    @abstractmethod
    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        """Run ``request`` in a fresh sandbox and always remove it.

        Never raises for anything the workload does; a run that cannot be verified
        comes back with ``status="refused"`` and diagnostics.

        Raises:
            DockerUnavailable: the backend cannot be reached at all.
        """

    @abstractmethod
    def reap(self) -> list[str]:
        """Remove every sandbox left by a crashed controller; return what was removed."""

    def prestart(self, request: SandboxRequest, count: int = 1) -> None:  # noqa: B027 - hint
        """Hint: ``count`` runs of exactly ``request`` are likely next; make their sandboxes
        ahead (those already waiting for ``request`` count).

        A backend may create, verify, start and attest them now, each holding its
        workload until a ``run(request)`` takes it; the default does nothing.
        """

    def discard_prestarted(self) -> list[str]:
        """Remove every sandbox made ahead and not used; the cleanup failures, if any."""
        return []

    def close(self) -> None:  # noqa: B027 - optional hook with a do-nothing default
        """Release connections. The default has nothing to release."""
