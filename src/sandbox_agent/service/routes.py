"""The data endpoints: each needs ``Authorization: Bearer TOKEN``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.responses import PlainTextResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from sandbox_agent.controller.models import STRATEGIES, default_strategy
from sandbox_agent.evidence import VerifyReport
from sandbox_agent.service import views
from sandbox_agent.service.admission import Refused, maxima
from sandbox_agent.service.auth import token_matches
from sandbox_agent.service.executor import QueueFull, RunManager, ServiceStopping
from sandbox_agent.service.hooks import PreflightCache
from sandbox_agent.service.models import (
    RUN_ID_PATTERN,
    CancelResponse,
    ErrorBody,
    FixtureList,
    PreflightStatus,
    RunList,
    RunView,
    SubmitRequest,
    SubmitResponse,
)
from sandbox_agent.service.ratelimit import RateLimiter, retry_after_header
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.service.sse import trace_stream
from sandbox_agent.service.store import MAX_EVENTS_PER_RUN, RunStore, StoredRun
from sandbox_agent.viewer.verdict import run_dir_verdict

QUEUE_FULL_RETRY_AFTER_S = 5
MAX_LIST_LIMIT = 500
TRACE_PAGE = 500
LAST_EVENT_ID_PATTERN = r"^[0-9]{0,20}$"


@dataclass(frozen=True)
class ServiceState:
    """What the endpoints share, made in the app's lifespan."""

    settings: ServiceSettings
    store: RunStore
    manager: RunManager
    limiter: RateLimiter
    preflight: PreflightCache


def _state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


_bearer = HTTPBearer(auto_error=False, description="The token from the server's token file.")
State = Annotated[ServiceState, Depends(_state)]
RunId = Annotated[str, PathParam(pattern=RUN_ID_PATTERN, description="A run id (32 hex digits).")]


def _require_token(
    state: State,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    given = f"Bearer {credentials.credentials}" if credentials else None
    if not token_matches(state.settings.token, given):
        raise HTTPException(
            401,
            "missing or wrong bearer token: send 'Authorization: Bearer TOKEN' "
            "with the token from the server's token file",
            headers={"WWW-Authenticate": "Bearer"},
        )


def _known_run(state: State, run_id: RunId) -> StoredRun:
    stored = state.store.get(run_id)
    if stored is None:
        raise HTTPException(404, "no run with this id: GET /runs lists them")
    return stored


KnownRun = Annotated[StoredRun, Depends(_known_run)]

_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorBody, "description": "Missing or wrong bearer token"},
    413: {"model": ErrorBody, "description": "Request body too large"},
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorBody}}

router = APIRouter(dependencies=[Depends(_require_token)], responses=_ERRORS)


@router.get("/fixtures", response_model=FixtureList, tags=["runs"])
def fixtures(state: State) -> FixtureList:
    """The fixture names a run may name, and the providers it may ask for."""
    settings = state.settings
    return FixtureList(
        fixtures=views.list_fixtures(settings.fixtures_dir),
        providers=list(settings.providers),
        default_provider=settings.default_provider,
        strategies=list(STRATEGIES),
        default_strategies={name: default_strategy(name) for name in settings.providers},
        repo_roots=[str(root) for root in settings.repo_roots],
        maxima=maxima(settings),
    )


@router.get("/preflight", response_model=PreflightStatus, tags=["service"])
def preflight(state: State) -> PreflightStatus:
    """Whether this host can run verified sandboxes (cached for a short while)."""
    return state.preflight.get()


@router.post(
    "/runs",
    status_code=202,
    response_model=SubmitResponse,
    tags=["runs"],
    responses={
        400: {"model": ErrorBody, "description": "Unknown fixture or provider"},
        422: {
            "description": "Invalid body, a repo path this server may not read, or a "
            "limit over the server's maximum (one line naming the serve flag)"
        },
        429: {"model": ErrorBody, "description": "Rate limit or full queue: see Retry-After"},
        503: {"model": ErrorBody, "description": "The server is shutting down"},
    },
)
def submit(
    body: SubmitRequest, state: State, request: Request, response: Response
) -> SubmitResponse:
    """Queue a run of ``task`` on the named fixture or ``repo`` folder; answers at once
    with its id."""
    wait = state.limiter.acquire(request.client.host if request.client else "unknown")
    if wait > 0:
        raise HTTPException(
            429,
            "too many submissions from this client: retry after the Retry-After seconds",
            headers={"Retry-After": retry_after_header(wait)},
        )
    try:
        run_id = state.manager.submit(body, submitted_at=time.time())
    except Refused as refused:
        raise HTTPException(refused.status_code, refused.detail) from None
    except QueueFull as error:
        raise HTTPException(
            429,
            f"{error}: retry after the Retry-After seconds",
            headers={"Retry-After": str(QUEUE_FULL_RETRY_AFTER_S)},
        ) from None
    except ServiceStopping as error:
        raise HTTPException(503, str(error)) from None
    response.headers["Location"] = f"/runs/{run_id}"
    return SubmitResponse(id=run_id)


@router.get("/runs", response_model=RunList, tags=["runs"])
def list_runs(
    state: State,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT)] = 100,
    offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
) -> RunList:
    """Runs, newest first."""
    rows, total = state.store.page(limit=limit, offset=offset)
    return RunList(runs=[views.summary(row) for row in rows], total=total)


@router.get("/runs/{run_id}", response_model=RunView, tags=["runs"], responses=_NOT_FOUND)
def get_run(stored: KnownRun) -> RunView:
    """The run: ``QUEUED`` or ``RUNNING`` until it holds its result's terminal status."""
    return views.view(stored)


@router.get(
    "/runs/{run_id}/trace",
    tags=["runs"],
    responses={**_NOT_FOUND, 200: {"content": {"application/x-ndjson": {}}}},
    response_class=StreamingResponse,
)
def get_trace(stored: KnownRun, state: State) -> StreamingResponse:
    """The run's (redacted) trace events so far, one JSON object a line."""

    def lines() -> Iterator[str]:
        last = 0
        while events := state.store.events_after(stored.id, last, TRACE_PAGE):
            for event in events:
                last = event.seq
                yield event.event_json + "\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")


@router.get(
    "/runs/{run_id}/diff",
    tags=["runs"],
    responses={**_NOT_FOUND, 200: {"content": {"text/plain": {}}}},
    response_class=PlainTextResponse,
)
def get_diff(stored: KnownRun) -> PlainTextResponse:
    """The run's unified diff (empty until it has finished)."""
    return PlainTextResponse(views.view(stored).diff)


@router.get(
    "/runs/{run_id}/events",
    tags=["runs"],
    responses={**_NOT_FOUND, 200: {"content": {"text/event-stream": {}}}},
    response_class=StreamingResponse,
)
def run_events(
    stored: KnownRun,
    state: State,
    last_event_id: Annotated[
        str | None,
        Header(
            pattern=LAST_EVENT_ID_PATTERN,
            description="The last event number received: the stream resumes after it.",
        ),
    ] = None,
) -> StreamingResponse:
    """Server-sent events: each trace event from the start (or after ``Last-Event-ID``),
    live while the run goes on, then one ``end`` event with the final status."""
    # ASCII digits only (str.isdigit took '²', which int() refuses: a 500), and no number
    # past the last event a run can have (SQLite's integers stop at 2**63 - 1).
    after = min(int(last_event_id), MAX_EVENTS_PER_RUN) if last_event_id else 0
    return StreamingResponse(
        trace_stream(state.store, stored.id, after),
        media_type="text/event-stream",
        headers={"X-Accel-Buffering": "no"},
    )


@router.get(
    "/runs/{run_id}/verify",
    response_model=VerifyReport,
    tags=["runs"],
    responses=_NOT_FOUND,
)
def verify_run(stored: KnownRun, state: State) -> VerifyReport:
    """``sandbox-agent verify``'s verdict on the run's folder: seal, trace chain, result,
    diff and the original's hashes (every check fails until the run has been sealed; a
    ``repo`` run's original, the service's copy, is not re-hashed)."""
    # The folder is the one the service gave the run (never a path from its result).
    run_dir = state.settings.trace_dir / stored.id
    # A repo run's original was the service's copy, removed when the run ended: its
    # sealed hashes are compared with the result, and no path is read again.
    return run_dir_verdict(run_dir, rehash_source=stored.repo is None)


@router.post(
    "/runs/{run_id}/cancel",
    status_code=202,
    response_model=CancelResponse,
    tags=["runs"],
    responses=_NOT_FOUND,
)
def cancel_run(stored: KnownRun, state: State) -> CancelResponse:
    """Cancel a run: a queued one at once, a running one within about a second."""
    status = state.manager.cancel(stored.id) or stored.status
    return CancelResponse(id=stored.id, status=status)
