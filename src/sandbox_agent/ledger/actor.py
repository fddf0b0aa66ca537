"""One spend ledger for the whole cluster: an actor on the head owns the SQLite file.

Every node's metered requests reserve and settle through this actor, so reservations
from all nodes meet in one file and one ``BEGIN IMMEDIATE`` transaction at a time
(the actor also runs one call at a time): runs on different nodes cannot together
pass a budget. A run finds the actor by name through its ``ledger_path``
(``ray-actor:<name>``, ``sandbox_agent.ledger.open_ledger``); no key or handle is
passed around. The actor lives as long as the caller that made it (an ``eval`` or a
``serve``); the file stays on the head, where ``sandbox-agent ledger`` reads it.

If the actor cannot be reached (the head is gone), a reservation fails as an
infrastructure error: no request is sent without one.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from typing_extensions import Unpack, override

from sandbox_agent.errors import BudgetExhausted, InfrastructureError, UsageError
from sandbox_agent.ledger.store import (
    CLUSTER_LEDGER_PREFIX,
    Ledger,
    Reservation,
    SpendCost,
    SpendLedger,
    SpendRequest,
    check_keywords,
)

LEDGER_CALL_TIMEOUT_S = 60.0
"""A reservation waits at most this for the head (SQLite's own busy timeout is 30 s)."""


class LedgerService:
    """What the actor runs: a ``Ledger`` whose refusals come back as values.

    Exceptions with their own constructor arguments do not survive Ray's error
    wrapping as their own type, so a refusal is returned and raised again by the proxy.
    """

    def __init__(self, path: str | None) -> None:
        self._ledger = Ledger(Path(path) if path else None)

    def location(self) -> str:
        return str(self._ledger.path)

    def reserve(self, request: SpendRequest) -> tuple[str, Any]:
        try:
            return "ok", tuple(self._ledger.reserve(**request))
        except BudgetExhausted as refused:
            return "budget", (refused.budget, refused.limit)
        except UsageError as error:
            return "usage", str(error)

    def settle(self, reservation: tuple[int, int, int], cost: SpendCost) -> str:
        try:
            self._ledger.settle(Reservation(*reservation), **cost)
        except UsageError as error:
            return str(error)
        return ""


def start_ledger_actor(path: str | None, namespace: str) -> tuple[Any, str]:
    """Start the cluster's ledger actor on the head; return it and the ``ledger_path``
    every run is given to reach it (``ray-actor:<namespace>/<name>``).

    Args:
        path: the ledger file on the head (``--ledger``); the head's default when None.
        namespace: the Ray namespace the caller's cluster connection uses.
    """
    import ray

    name = f"ledger-{uuid.uuid4().hex[:12]}"
    actor_class = ray.remote(num_cpus=0, max_restarts=0)(LedgerService)
    actor: Any = actor_class.options(
        name=name,
        namespace=namespace,
        # Ray's own resource on the head node: the file lives there.
        resources={"node:__internal_head__": 0.001},
    ).remote(path)
    ray.get(actor.location.remote(), timeout=LEDGER_CALL_TIMEOUT_S)
    return actor, f"{CLUSTER_LEDGER_PREFIX}{namespace}/{name}"


class ClusterLedger(SpendLedger):
    """A run's view of the cluster's ledger: each call goes to the actor on the head."""

    def __init__(self, location: str) -> None:
        """Args:
        location: ``<namespace>/<name>`` of the actor (the ``ledger_path`` after its
            ``ray-actor:`` prefix).
        """
        self.path = f"{CLUSTER_LEDGER_PREFIX}{location}"
        self._namespace, _, self._name = location.rpartition("/")

    def _actor(self) -> Any:
        import ray

        try:
            return ray.get_actor(self._name, namespace=self._namespace or None)
        except ValueError:
            raise InfrastructureError(
                f"the cluster's spend ledger {self._name!r} is gone (its caller ended)"
            ) from None

    def _call(self, method: str, *args: Any) -> Any:
        import ray

        try:
            return ray.get(
                getattr(self._actor(), method).remote(*args), timeout=LEDGER_CALL_TIMEOUT_S
            )
        except ray.exceptions.RayError as error:
            raise InfrastructureError(
                f"the cluster's spend ledger is unreachable ({type(error).__name__})"
            ) from None

    @override
    def reserve(self, **request: Unpack[SpendRequest]) -> Reservation:
        check_keywords(request, SpendRequest)
        kind, value = self._call("reserve", request)
        if kind == "budget":
            raise BudgetExhausted(*value)
        if kind == "usage":
            raise UsageError(value)
        return Reservation(*value)

    @override
    def settle(self, reservation: Reservation, **cost: Unpack[SpendCost]) -> None:
        check_keywords(cost, SpendCost)
        problem = self._call("settle", tuple(reservation), cost)
        if problem:
            raise UsageError(problem)
