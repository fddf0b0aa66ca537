"""The spend ledger: one SQLite file (WAL) shared by every run on the host.

Before each model request a run *reserves* the request's worst-case cost and tokens;
afterwards it *settles* the reservation with what the API reported, never more than was
reserved (a settlement past it is cut to it: one endpoint's word cannot book past a
budget). The check and the reservation happen in one ``BEGIN IMMEDIATE`` transaction,
which takes SQLite's write lock first, so concurrent runs (threads or processes) see
each other's reservations and together cannot reserve past a budget. A reservation left
by an interrupted run keeps counting until it is settled or expired by ``sandbox-agent
ledger --expire-stale``.

Amounts are integer micro-dollars (1e-6 USD), so sums are exact. Every amount is an
estimate from the dated price table (``sandbox_agent.ledger.prices``).
"""

from __future__ import annotations

import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypedDict

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import Unpack

from sandbox_agent.errors import BudgetExhausted, UsageError
from sandbox_agent.settings import state_home

LEDGER_FILE_NAME = "ledger.sqlite3"
DEFAULT_BUSY_TIMEOUT_SECONDS = 30.0
"""How long a writer waits for another run's transaction before giving up."""
SCHEMA_VERSION = 1
MICROS_PER_USD = 1_000_000

Outcome = Literal[
    "ok",
    "over_reported",  # answered, with usage past the reservation: booked at the reservation
    "rate_limited",
    "server_error",
    "timeout",
    "refused",
    "failed",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    name        TEXT PRIMARY KEY,
    budget_usd  REAL,              -- the budget the latest reservation was checked against
    updated_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment       TEXT NOT NULL REFERENCES experiments(name),
    run_id           TEXT NOT NULL,
    model            TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('reserved', 'settled', 'expired')),
    reserved_micros  INTEGER NOT NULL CHECK (reserved_micros >= 0),
    reserved_tokens  INTEGER NOT NULL CHECK (reserved_tokens >= 0),
    cost_micros      INTEGER CHECK (cost_micros >= 0),
    input_tokens     INTEGER,
    output_tokens    INTEGER,
    outcome          TEXT,
    created_at       REAL NOT NULL,
    settled_at       REAL
);
CREATE INDEX IF NOT EXISTS requests_by_run ON requests (experiment, run_id);
CREATE INDEX IF NOT EXISTS requests_by_state ON requests (state, created_at);
"""

# What a row counts against a budget: its reservation while open, its real cost once
# settled, nothing once an operator expired it.
_SPEND = (
    "COALESCE(SUM(CASE state WHEN 'reserved' THEN reserved_micros "
    "WHEN 'settled' THEN cost_micros ELSE 0 END), 0)"
)
_TOKENS = (
    "COALESCE(SUM(CASE state WHEN 'reserved' THEN reserved_tokens "
    "WHEN 'settled' THEN input_tokens + output_tokens ELSE 0 END), 0)"
)


def default_ledger_path() -> Path:
    """``ledger.sqlite3`` under the state folder (``$SANDBOX_AGENT_HOME``)."""
    return state_home() / LEDGER_FILE_NAME


def usd_to_micros(usd: float) -> int:
    """A budget in micro-dollars, rounded down so that a budget is never exceeded by rounding."""
    return int(usd * MICROS_PER_USD)


class SpendLimits(BaseModel):
    """The budgets one request is checked against."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_cost_usd: float = Field(ge=0)
    """Estimated spend of this run (task)."""
    experiment_budget_usd: float = Field(ge=0)
    """Estimated spend of every run of the experiment, on this ledger."""
    max_calls: int = Field(ge=0)
    """Requests of this run, retries included."""
    max_tokens: int = Field(ge=0)
    """Input plus output tokens of this run."""


class Reservation(NamedTuple):
    """An open reservation: settle it with what the request really used."""

    id: int
    micros: int
    tokens: int


class ExperimentSpend(BaseModel):
    """Estimated spend of one experiment, as shown by ``sandbox-agent ledger``."""

    model_config = ConfigDict(extra="forbid")

    experiment: str
    budget_usd: float | None
    reserved_usd: float
    """Open reservations (in flight, or left by interrupted runs)."""
    settled_usd: float
    remaining_usd: float | None
    open_reservations: int
    requests: int
    runs: int
    input_tokens: int
    output_tokens: int


CLUSTER_LEDGER_PREFIX = "ray-actor:"
"""A ``ledger_path`` naming the cluster's ledger actor instead of a file (issue 19)."""


class SpendRequest(TypedDict):
    """The keywords of ``SpendLedger.reserve``: one request's worst case, written once for
    the ABC, the file ledger and the cluster's proxy (which sends them as they are)."""

    experiment: str
    """The experiment the run belongs to."""
    run_id: str
    """The run (task) the request belongs to."""
    model: str
    """The model name, for the record."""
    micros: int
    """Worst-case estimated cost, micro-dollars."""
    tokens: int
    """Worst-case input plus output tokens."""
    limits: SpendLimits
    """The budgets to check."""


class SpendCost(TypedDict):
    """The keywords of ``SpendLedger.settle``: what the request really cost."""

    micros: int
    input_tokens: int
    output_tokens: int
    outcome: Outcome


def check_keywords(given: Mapping[str, object], fields: Any) -> None:
    """Refuse a keyword too many or one missing, as an explicit signature would: the keys
    of a ``TypedDict`` (``SpendRequest``, ``SpendCost``) are not checked at run time.

    Raises:
        TypeError: the keywords are not exactly the fields.
    """
    wanted: frozenset[str] = fields.__required_keys__
    if given.keys() != wanted:
        raise TypeError(f"{fields.__name__} takes exactly: {', '.join(sorted(wanted))}")


class SpendLedger(ABC):
    """What a meter reserves with and settles to: a ledger file, or the cluster's actor."""

    @abstractmethod
    def reserve(self, **request: Unpack[SpendRequest]) -> Reservation:
        """Reserve one request's worst case (see ``Ledger.reserve``).

        Raises:
            BudgetExhausted: a budget would be exceeded.
        """

    @abstractmethod
    def settle(self, reservation: Reservation, **cost: Unpack[SpendCost]) -> None:
        """Replace a reservation by what the request really cost."""


class Ledger(SpendLedger):
    """A spend ledger file. Each operation opens its own connection, so one ``Ledger``
    may be shared by threads, and many processes may open the same file."""

    def __init__(
        self, path: Path | None = None, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT_SECONDS
    ) -> None:
        """Open (creating if needed) the ledger at ``path``, the default one when None.

        Raises:
            UsageError: the file cannot be created or is not a ledger.
        """
        self.path = path if path is not None else default_ledger_path()
        self._busy_timeout = busy_timeout
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(self._open()) as conn:
                conn.execute("PRAGMA journal_mode=WAL")
            with self._write() as conn:
                for statement in _SCHEMA.split(";"):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except (OSError, sqlite3.DatabaseError) as error:
            raise UsageError(
                f"cannot open the spend ledger {self.path} ({type(error).__name__}): "
                "give a writable file with --ledger PATH"
            ) from None

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None)
        # FULL: a committed reservation must survive a crash of the machine, not only of us.
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed on success, rolled back otherwise."""
        with closing(self._open()) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def reserve(self, **request: Unpack[SpendRequest]) -> Reservation:
        """Reserve one request's worst case (``SpendRequest``), or refuse it if any budget
        would be exceeded.

        Raises:
            BudgetExhausted: ``calls``, ``tokens``, ``cost`` (the run's ``--max-cost-usd``)
                or ``experiment_cost`` (``--experiment-budget-usd``) would be exceeded.
        """
        check_keywords(request, SpendRequest)
        experiment, run_id, model = request["experiment"], request["run_id"], request["model"]
        micros, tokens, limits = request["micros"], request["tokens"], request["limits"]
        now = time.time()
        with self._write() as conn:
            calls, run_tokens, run_micros = conn.execute(
                f"SELECT COUNT(*), {_TOKENS}, {_SPEND} FROM requests "  # noqa: S608 - constants
                "WHERE experiment = ? AND run_id = ?",
                (experiment, run_id),
            ).fetchone()
            (experiment_micros,) = conn.execute(
                f"SELECT {_SPEND} FROM requests WHERE experiment = ?",  # noqa: S608 - constants
                (experiment,),
            ).fetchone()
            if calls + 1 > limits.max_calls:
                raise BudgetExhausted("calls", limits.max_calls)
            if run_tokens + tokens > limits.max_tokens:
                raise BudgetExhausted("tokens", limits.max_tokens)
            if run_micros + micros > usd_to_micros(limits.max_cost_usd):
                raise BudgetExhausted("cost", limits.max_cost_usd)
            if experiment_micros + micros > usd_to_micros(limits.experiment_budget_usd):
                raise BudgetExhausted("experiment_cost", limits.experiment_budget_usd)
            conn.execute(
                "INSERT INTO experiments (name, budget_usd, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET budget_usd = excluded.budget_usd, "
                "updated_at = excluded.updated_at",
                (experiment, limits.experiment_budget_usd, now),
            )
            cursor = conn.execute(
                "INSERT INTO requests (experiment, run_id, model, state, reserved_micros, "
                "reserved_tokens, created_at) VALUES (?, ?, ?, 'reserved', ?, ?, ?)",
                (experiment, run_id, model, micros, tokens, now),
            )
            row_id = cursor.lastrowid
        assert row_id is not None  # noqa: S101 - an INSERT always sets it
        return Reservation(row_id, micros, tokens)

    def settle(self, reservation: Reservation, **cost: Unpack[SpendCost]) -> None:
        """Replace a reservation by what the request really cost (also after it was expired),
        at most what was reserved: the cost is cut to the reserved micro-dollars, and the
        tokens to the reserved tokens (input first). The meter cuts each count to its own
        worst case first (``providers.meter.within_worst_case``); this holds for any caller.

        Raises:
            UsageError: the reservation is not in this ledger.
        """
        check_keywords(cost, SpendCost)
        micros, input_tokens = cost["micros"], cost["input_tokens"]
        with self._write() as conn:
            # The right-hand sides read the row as it was: its reservation.
            cursor = conn.execute(
                "UPDATE requests SET state = 'settled', cost_micros = MIN(?, reserved_micros), "
                "input_tokens = MIN(?, reserved_tokens), "
                "output_tokens = MIN(?, reserved_tokens - MIN(?, reserved_tokens)), "
                "outcome = ?, settled_at = ? WHERE id = ?",
                (
                    micros,
                    input_tokens,
                    cost["output_tokens"],
                    input_tokens,
                    cost["outcome"],
                    time.time(),
                    reservation.id,
                ),
            )
            if cursor.rowcount != 1:
                raise UsageError(f"no reservation {reservation.id} in the ledger {self.path}")

    def expire_stale(self, older_than_seconds: float) -> int:
        """Stop counting open reservations older than ``older_than_seconds``; return how many."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE requests SET state = 'expired', outcome = 'expired', settled_at = ? "
                "WHERE state = 'reserved' AND created_at <= ?",
                (time.time(), time.time() - older_than_seconds),
            )
            return cursor.rowcount

    def summary(self, experiment: str | None = None) -> list[ExperimentSpend]:
        """Reserved, settled and remaining estimated spend of each experiment (or just one)."""
        query = (
            "SELECT e.name, e.budget_usd, "
            "COALESCE(SUM(CASE r.state WHEN 'reserved' THEN r.reserved_micros END), 0), "
            "COALESCE(SUM(CASE r.state WHEN 'settled' THEN r.cost_micros END), 0), "
            "COUNT(CASE r.state WHEN 'reserved' THEN 1 END), COUNT(r.id), "
            "COUNT(DISTINCT r.run_id), COALESCE(SUM(r.input_tokens), 0), "
            "COALESCE(SUM(r.output_tokens), 0) "
            "FROM experiments e LEFT JOIN requests r ON r.experiment = e.name "
        )
        params: tuple[str, ...] = ()
        if experiment is not None:
            query += "WHERE e.name = ? "
            params = (experiment,)
        query += "GROUP BY e.name ORDER BY e.name"
        with closing(self._open()) as conn:
            rows = conn.execute(query, params).fetchall()
        spends = []
        for name, budget, reserved, settled, open_count, requests, runs, tin, tout in rows:
            remaining = None
            if budget is not None:
                remaining = (usd_to_micros(budget) - reserved - settled) / MICROS_PER_USD
            spends.append(
                ExperimentSpend(
                    experiment=name,
                    budget_usd=budget,
                    reserved_usd=reserved / MICROS_PER_USD,
                    settled_usd=settled / MICROS_PER_USD,
                    remaining_usd=remaining,
                    open_reservations=open_count,
                    requests=requests,
                    runs=runs,
                    input_tokens=tin,
                    output_tokens=tout,
                )
            )
        return spends
