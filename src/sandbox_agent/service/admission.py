"""What a run request may ask for on this server, decided before the run is queued.

Every refusal is one line that says what would allow the request: the ``serve`` flag
that enables a provider, allows a repository path or raises a maximum.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import BaseModel

from sandbox_agent.controller.models import Budgets, RepairOptions, Strategy, default_strategy
from sandbox_agent.errors import SandboxAgentError
from sandbox_agent.providers import is_provider
from sandbox_agent.providers.gate import KEY_ENV, OFFLINE_ENV
from sandbox_agent.service.models import BudgetRequest, RepairRequest, SubmitRequest
from sandbox_agent.service.repos import RepoRefused, check_repo
from sandbox_agent.service.settings import MAXIMUM_FLAGS, REAL_PROVIDERS, ServiceSettings
from sandbox_agent.service.views import list_fixtures

BUDGET_MAXIMA: dict[str, str] = {
    "max_iterations": "max_run_iterations",
    "max_tool_calls": "max_run_tool_calls",
    "max_wall_seconds": "max_run_wall_seconds",
    "max_denials": "max_run_denials",
    "max_invalid_outputs": "max_run_invalid_outputs",
}
"""Each request budget and the setting that bounds it."""
REPAIR_MAXIMA: dict[str, str] = {
    "candidates": "max_run_candidates",
    "rounds": "max_run_rounds",
    "round_candidates": "max_run_round_candidates",
    "candidate_tokens": "max_run_candidate_tokens",
}
"""Each repair option that costs model calls or sandboxes, and the setting that bounds it
(``temperature``, ``seed``, ``focus`` and ``feedback`` cost nothing: their own range bounds them;
``redraws`` costs model turns, which ``max_run_iterations`` bounds, and no test run
more: a slot is tested once at most)."""


class Refused(SandboxAgentError):
    """A request this server will not queue: the HTTP status and one line."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


class Admitted(NamedTuple):
    """A request as it will run: every choice made, every limit within the maxima."""

    fixture: str
    """The fixture's name; empty for a ``repo`` run."""
    repo: str | None
    provider: str
    strategy: Strategy
    budgets: Budgets
    repair: RepairOptions | None
    """Strategy ``repair`` only."""
    allow_no_tests: bool


def maxima(settings: ServiceSettings) -> dict[str, int | float]:
    """The most a request may ask for, by request field name."""
    fields = {**BUDGET_MAXIMA, **REPAIR_MAXIMA}
    return {name: getattr(settings, setting) for name, setting in fields.items()}


def admit(request: SubmitRequest, settings: ServiceSettings) -> Admitted:
    """Decide what ``request`` runs with on this server.

    Raises:
        Refused: 400 for an unknown fixture or a provider this server was not started
            with; 422 for a ``repo`` it may not read, a limit over its maximum, or
            repair options for the ``tools`` strategy.
    """
    # The name must be one the server lists: a path ("../x", "/etc") can never match.
    if request.fixture is not None and request.fixture not in list_fixtures(settings.fixtures_dir):
        raise Refused(400, "unknown fixture: GET /fixtures lists the valid names")
    provider = request.provider or settings.default_provider
    if provider not in settings.providers:
        raise Refused(400, provider_refusal(provider, settings))
    if request.repo is not None:
        try:
            check_repo(request.repo, settings.repo_roots)
        except RepoRefused as refused:
            raise Refused(422, str(refused)) from None
    strategy = request.strategy or default_strategy(provider)
    if request.repair is not None and strategy != "repair":
        raise Refused(
            422,
            f"repair options apply to strategy repair only, and this run's strategy is "
            f'{strategy}: send "strategy": "repair" or leave repair out',
        )
    budgets = Budgets(**_within(request.budgets, Budgets, BUDGET_MAXIMA, "budgets", settings))
    repair = None
    if strategy == "repair":
        chosen = _within(request.repair, RepairOptions, REPAIR_MAXIMA, "repair", settings)
        if request.repair is not None:
            for name in ("temperature", "seed", "focus", "feedback", "redraws"):
                value = getattr(request.repair, name)
                if value is not None:
                    chosen[name] = value
        repair = RepairOptions(**chosen)
    return Admitted(
        fixture=request.fixture or "",
        repo=request.repo,
        provider=provider,
        strategy=strategy,
        budgets=budgets,
        repair=repair,
        allow_no_tests=request.allow_no_tests,
    )


def provider_refusal(name: str, settings: ServiceSettings) -> str:
    """Why ``name`` is refused here, and the ``serve`` flag that would enable it."""
    enabled = ", ".join(settings.providers)
    keep = "repeat --provider for each provider to offer"
    if name in REAL_PROVIDERS:
        needs = ""
        if name in KEY_ENV:
            needs = f", with {OFFLINE_ENV}=0 and {KEY_ENV[name]} in its environment"
        return (
            f"provider {name!r} is not enabled on this server: start it with "
            f"serve --provider {name}{needs} ({keep}); enabled here: {enabled}"
        )
    if is_provider(name):
        return (
            f"provider {name!r} is not enabled on this server: serve --provider {name} "
            f"enables it ({keep}); enabled here: {enabled}"
        )
    return (
        f"unknown provider {name!a}: the real providers are {', '.join(REAL_PROVIDERS)}, "
        f"each enabled by serve --provider NAME; enabled here: {enabled}"
    )


def _within(
    requested: BudgetRequest | RepairRequest | None,
    model: type[BaseModel],
    bounded: dict[str, str],
    group: str,
    settings: ServiceSettings,
) -> dict[str, Any]:
    """Each bounded field: the request's value if it is within its maximum (else
    ``Refused``), or the run's default capped by the maximum."""
    chosen: dict[str, Any] = {}
    for name, setting in bounded.items():
        maximum = getattr(settings, setting)
        value = getattr(requested, name) if requested is not None else None
        if value is None:
            chosen[name] = min(model.model_fields[name].default, maximum)
        elif value > maximum:
            raise Refused(
                422,
                f"{group}.{name} {value:g} is over this server's maximum {maximum:g}: "
                f"serve {MAXIMUM_FLAGS[setting]} raises it",
            )
        else:
            chosen[name] = value
    return chosen
