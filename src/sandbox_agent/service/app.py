"""The FastAPI app of ``sandbox-agent serve`` (docs/CONTRACT.md section 8).

``GET /health`` and the page shell (``GET /``, ``/static/*``) need no token; every
data endpoint (``sandbox_agent.service.routes``) needs ``Authorization: Bearer TOKEN``.
Runs are executed by the injected run function (``run_task`` by default).
"""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from sandbox_agent.httpguard import is_loopback_name
from sandbox_agent.service.executor import RunManager
from sandbox_agent.service.hooks import (
    PreflightCache,
    PreflightFunction,
    ReapFunction,
    default_preflight,
    default_reap,
)
from sandbox_agent.service.middleware import LimitsMiddleware, TokenGate
from sandbox_agent.service.models import Health
from sandbox_agent.service.one_run import RunFunction
from sandbox_agent.service.ratelimit import RateLimiter
from sandbox_agent.service.routes import ServiceState, router
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.service.store import RunStore
from sandbox_agent.viewer.page import INDEX_FILE, STATIC_DIR

log = logging.getLogger(__name__)


def create_app(
    settings: ServiceSettings,
    run_fn: RunFunction | None = None,
    *,
    preflight_fn: PreflightFunction | None = None,
    reap_fn: ReapFunction = default_reap,
) -> FastAPI:
    """Build the service. Its database opens, and its workers start, with the app's lifespan.

    Args:
        settings: limits, paths and the token.
        run_fn: runs one task; ``sandbox_agent.controller.run_task`` when None.
        preflight_fn: answers ``GET /preflight``; ``preflight``'s checks when None.
        reap_fn: called in the background at start when runs were left in flight.
    """
    if run_fn is None:
        from sandbox_agent.controller import run_task

        run_fn = run_task
    chosen_run_fn = run_fn
    check = preflight_fn or functools.partial(default_preflight, settings.runtime)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = RunStore(settings.db_path, busy_timeout_s=settings.db_busy_timeout_s)
        manager = RunManager(store, chosen_run_fn, settings)
        app.state.service = ServiceState(
            settings=settings,
            store=store,
            manager=manager,
            limiter=RateLimiter(settings.rate_per_second, settings.rate_burst),
            preflight=PreflightCache(check),
        )
        try:
            interrupted = manager.start()
        except BaseException:
            store.close()
            raise
        if interrupted:
            log.warning("marked %d run(s) left in flight INTERRUPTED", len(interrupted))
            threading.Thread(target=_reap_quietly, args=(reap_fn,), daemon=True).start()
        try:
            yield
        finally:
            manager.stop()
            store.close()

    app = FastAPI(
        title="sandbox-agent",
        summary="Submit contained agent runs and inspect their evidence.",
        version="1",
        lifespan=lifespan,
    )
    # Added last runs first: the Host check and size limit (which also add the security
    # headers), then the token gate, then FastAPI's routing and body parsing.
    app.add_middleware(TokenGate, token=settings.token)
    app.add_middleware(
        LimitsMiddleware,
        max_body_bytes=settings.max_body_bytes,
        loopback_only=is_loopback_name(settings.host),
    )

    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(sqlite3.Error, _database_unavailable)

    @app.get(
        "/health",
        response_model=Health,
        response_model_exclude_none=True,
        tags=["service"],
        responses={503: {"model": Health, "description": "The service cannot run work now"}},
    )
    async def health(request: Request, response: Response) -> Health:
        """Whether the service can run work; needs no token. Answered on the event loop,
        never waiting for the database or a worker thread of the server's pool."""
        state: ServiceState | None = getattr(request.app.state, "service", None)
        problem = state.manager.why_unavailable() if state else "the server is starting"
        if problem is None:
            return Health(status="ok")
        response.status_code = 503
        return Health(status="unavailable", detail=problem)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(INDEX_FILE, media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.include_router(router)
    return app


async def _invalid_request(request: Request, error: Exception) -> Response:
    """FastAPI's 422 answer, as JSON escaped to ASCII: the errors echo the client's input,
    and a lone surrogate in it made the default answer (UTF-8) fail with a 500."""
    errors = error.errors() if isinstance(error, RequestValidationError) else []
    body = json.dumps({"detail": jsonable_encoder(errors)})
    return Response(body, status_code=422, media_type="application/json")


DATABASE_RETRY_AFTER_S = 5


async def _database_unavailable(request: Request, error: Exception) -> Response:
    """A store error (a lock held elsewhere past the busy timeout, a full disk) is the
    server's condition, not a crash: 503 with ``Retry-After``, never a 500 (SR-8 S8-2)."""
    log.warning("the run database refused %s %s: %s", request.method, request.url.path, error)
    body = json.dumps({"detail": "the run database is unavailable: retry later"})
    headers = {"Retry-After": str(DATABASE_RETRY_AFTER_S)}
    return Response(body, status_code=503, media_type="application/json", headers=headers)


def begin_stop(app: Any) -> None:
    """Stop ``app``'s runs as a stop begins: none starts any more, running ones are
    cancelled, queued ones end ``INTERRUPTED`` (``ServiceServer`` calls it on SIGTERM)."""
    state = getattr(getattr(app, "state", None), "service", None)
    if isinstance(state, ServiceState):
        state.manager.begin_stop()


def _reap_quietly(reap_fn: ReapFunction) -> None:
    try:
        removed = reap_fn()
    except Exception:  # best effort: `sandbox-agent reap` and the next start try again
        log.exception("reaping after interrupted runs failed")
        return
    log.warning("reaped %d leftover(s) of interrupted runs", len(removed))
