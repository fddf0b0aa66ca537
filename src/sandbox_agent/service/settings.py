"""The service's settings: one model, every limit a named default (and a ``serve`` flag)."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandbox_agent.providers import PROVIDERS, SIMULATED_PROVIDERS, is_provider
from sandbox_agent.sandbox.base import Runtime
from sandbox_agent.settings import default_fixtures_dir, state_home

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_QUEUE = 32
DEFAULT_MAX_BODY_BYTES = 256 * 1024
DEFAULT_RATE_PER_SECOND = 1.0
DEFAULT_RATE_BURST = 20
DEFAULT_HEAD_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 30.0
DEFAULT_SEND_TIMEOUT_S = 30.0
DEFAULT_MAX_CONNECTIONS = 128
DEFAULT_DB_BUSY_TIMEOUT_S = 5.0
DEFAULT_STOP_TIMEOUT_S = 10.0
DEFAULT_PROVIDERS: tuple[str, ...] = ("scripted", "injection", "mock-adversarial")
"""Simulated providers only: a real model spends money, so it is opt-in (``--provider``)."""
REAL_PROVIDERS: tuple[str, ...] = tuple(
    name for name in PROVIDERS if name not in SIMULATED_PROVIDERS
)
"""The providers of a real model (``serve --provider local`` and the hosted ones)."""

# The operator's maxima of what one run request may ask for (``serve --max-run-*``). Each
# is at least the run's own default (a test says so), so a request that asks for nothing
# gets the run's defaults.
DEFAULT_MAX_RUN_ITERATIONS = 50
DEFAULT_MAX_RUN_TOOL_CALLS = 100
DEFAULT_MAX_RUN_WALL_SECONDS = 1800.0
DEFAULT_MAX_RUN_DENIALS = 10
DEFAULT_MAX_RUN_INVALID_OUTPUTS = 10
DEFAULT_MAX_RUN_CANDIDATES = 10
DEFAULT_MAX_RUN_ROUNDS = 4
DEFAULT_MAX_RUN_ROUND_CANDIDATES = 4
DEFAULT_MAX_RUN_CANDIDATE_TOKENS = 4096

MAXIMUM_FLAGS: dict[str, str] = {
    "max_run_iterations": "--max-run-iterations",
    "max_run_tool_calls": "--max-run-tool-calls",
    "max_run_wall_seconds": "--max-run-wall-seconds",
    "max_run_denials": "--max-run-denials",
    "max_run_invalid_outputs": "--max-run-invalid-outputs",
    "max_run_candidates": "--max-run-candidates",
    "max_run_rounds": "--max-run-rounds",
    "max_run_round_candidates": "--max-run-round-candidates",
    "max_run_candidate_tokens": "--max-run-candidate-tokens",
}
"""Each maximum's ``serve`` flag: a refusal names the one that would raise it."""


def default_max_concurrent() -> int:
    """One run per core."""
    return os.cpu_count() or 1


def service_home() -> Path:
    """The service's folder under the state folder (database, token, plans, traces)."""
    return state_home() / "service"


class ServiceSettings(BaseModel):
    """Everything ``create_app`` needs. Paths default under ``state_home()/service``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = DEFAULT_HOST
    """The address the server binds. When it is a loopback one, a request whose ``Host``
    header names anything else is refused (421): a guard against DNS rebinding."""
    db_path: Path = Field(default_factory=lambda: service_home() / "runs.sqlite3")
    """SQLite database of runs and their trace events."""
    token: str = Field(min_length=16)
    """The bearer token every endpoint but ``/health`` and the page shell requires."""
    fixtures_dir: Path = Field(default_factory=default_fixtures_dir)
    """Clients name a fixture; only sub-folders of this folder can be named."""
    work_dir: Path = Field(default_factory=service_home)
    """Inline plans are written under ``work_dir/plans``, traces under ``work_dir/runs``."""
    max_concurrent: int = Field(default_factory=default_max_concurrent, ge=1, le=256)
    """Runs executing at once."""
    max_queue: int = Field(DEFAULT_MAX_QUEUE, ge=0, le=100_000)
    """Runs waiting beyond ``max_concurrent``; one more is answered 429."""
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024)
    """Largest request body; a larger one is answered 413."""
    rate_per_second: float = Field(DEFAULT_RATE_PER_SECOND, gt=0)
    """Submissions per second refilled into each client's bucket."""
    rate_burst: int = Field(DEFAULT_RATE_BURST, ge=1)
    """Submissions a client may make at once (the bucket's size)."""
    head_timeout_s: float = Field(DEFAULT_HEAD_TIMEOUT_S, gt=0, le=3600)
    """Seconds a connection has to send a whole request head; then it is closed."""
    body_timeout_s: float = Field(DEFAULT_BODY_TIMEOUT_S, gt=0, le=3600)
    """Seconds a request's body has to arrive whole, counted from its head, whether the
    app reads it or not; then the connection is closed."""
    send_timeout_s: float = Field(DEFAULT_SEND_TIMEOUT_S, gt=0, le=3600)
    """Seconds a client may take none of an answer it is owed; then it is disconnected."""
    max_connections: int = Field(DEFAULT_MAX_CONNECTIONS, ge=1, le=100_000)
    """Connections open at once; one more is answered 503 and closed before it is read."""
    db_busy_timeout_s: float = Field(DEFAULT_DB_BUSY_TIMEOUT_S, gt=0, le=600)
    """Seconds a database write waits for a lock held elsewhere before it fails."""
    stop_timeout_s: float = Field(DEFAULT_STOP_TIMEOUT_S, gt=0, le=3600)
    """Seconds from SIGTERM (or SIGINT) to the end of the process: runs are cancelled at
    once, queued ones never start, and whatever is still open then is cut."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses whose ``X-Forwarded-For`` names the client; none by default, so the
    client is always the peer of the connection."""
    providers: tuple[str, ...] = DEFAULT_PROVIDERS
    """Provider names a client may ask for."""
    model_options: dict[str, str | float | int] = Field(default_factory=dict)
    """The real-model flags ``serve`` was given (``--model``, ``--base-url``, prices, cost
    caps, ...: ``commands.realmodel``), by options field: every run of a real provider
    gets those its kind has (SR-13 F9: without them ``serve --provider openai`` could run
    nothing)."""
    runtime: Runtime = "runc"
    """Sandbox runtime of every run."""
    repo_roots: tuple[Path, ...] = ()
    """Folders whose sub-folders a run request may name by path (``repo``); none by
    default. Each is checked when the settings are made (``service.repos.check_root``)."""
    max_run_iterations: int = Field(DEFAULT_MAX_RUN_ITERATIONS, ge=1, le=100_000)
    """The most model turns a request may ask for (``budgets.max_iterations``)."""
    max_run_tool_calls: int = Field(DEFAULT_MAX_RUN_TOOL_CALLS, ge=1, le=100_000)
    max_run_wall_seconds: float = Field(
        DEFAULT_MAX_RUN_WALL_SECONDS, gt=0, le=7 * 24 * 3600, allow_inf_nan=False
    )
    max_run_denials: int = Field(DEFAULT_MAX_RUN_DENIALS, ge=0, le=100_000)
    max_run_invalid_outputs: int = Field(DEFAULT_MAX_RUN_INVALID_OUTPUTS, ge=0, le=100_000)
    max_run_candidates: int = Field(DEFAULT_MAX_RUN_CANDIDATES, ge=1, le=64)
    """The most first-round ``repair`` candidates a request may ask for."""
    max_run_rounds: int = Field(DEFAULT_MAX_RUN_ROUNDS, ge=0, le=16)
    max_run_round_candidates: int = Field(DEFAULT_MAX_RUN_ROUND_CANDIDATES, ge=1, le=64)
    max_run_candidate_tokens: int = Field(DEFAULT_MAX_RUN_CANDIDATE_TOKENS, ge=64, le=32_768)

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses(cls, proxies: tuple[str, ...]) -> tuple[str, ...]:
        for proxy in proxies:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(f"{proxy!r} is not an IP address or network") from None
        return proxies

    @field_validator("providers")
    @classmethod
    def _known_providers(cls, providers: tuple[str, ...]) -> tuple[str, ...]:
        for name in providers:
            if not is_provider(name):
                raise ValueError(
                    f"unknown provider {name!r}: the real ones are {', '.join(REAL_PROVIDERS)}"
                )
        if not providers:
            raise ValueError("give at least one provider")
        return providers

    @model_validator(mode="after")
    def _roots(self) -> ServiceSettings:
        from sandbox_agent.service.repos import check_root

        for root in self.repo_roots:
            check_root(root, (self.work_dir, state_home()), (self.db_path,))
        return self

    @property
    def default_provider(self) -> str:
        """What a request without ``provider`` gets, and the page's first choice: the
        first real provider the server was started with, else the first one given."""
        real = [name for name in self.providers if name in REAL_PROVIDERS]
        return (real or list(self.providers))[0]

    @property
    def plans_dir(self) -> Path:
        return self.work_dir / "plans"

    @property
    def trace_dir(self) -> Path:
        return self.work_dir / "runs"

    @property
    def snapshots_dir(self) -> Path:
        """The private copies of ``repo`` runs' folders, one per run while it runs."""
        return self.work_dir / "repos"
