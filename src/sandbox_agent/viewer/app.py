"""The app of ``sandbox-agent view``: the run viewer's page over a folder, read-only.

``GET /`` is the page (the same as ``serve``'s), ``/static/*`` its assets, and three
read-only endpoints feed it:

- ``GET /health``: ``{"status": "ok", "mode": "view"}`` (the page tells ``view`` from
  ``serve`` by it);
- ``GET /api/view``: ``{"mode": "view", "root", "complete", "limits", "runs": [RunListing],
  "evals": [EvalListing]}``, each list newest first (as ``serve``'s ``GET /runs``);
- ``GET /api/run?key=K``: ``RunPage``: result, trace events, diff, ``verify``'s verdict,
  problems, and the evaluation the run belongs to;
- ``GET /api/eval?key=K``: ``EvalPage``: the report and, per run record, its folder's key.

An unknown or malformed key is a 404 with one line; nothing is ever written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from sandbox_agent.errors import UsageError
from sandbox_agent.evidence import load_public_key
from sandbox_agent.viewer.folder import MAX_KEY_CHARS, Folder, parts_of
from sandbox_agent.viewer.guard import ViewerGuard
from sandbox_agent.viewer.page import INDEX_FILE, STATIC_DIR
from sandbox_agent.viewer.runs import (
    EVAL_TRACES,
    EvalListing,
    EvalPage,
    RunListing,
    RunPage,
    list_eval,
    list_run,
    load_eval,
    load_run,
)
from sandbox_agent.viewer.settings import ViewSettings

Key = Annotated[str, Query(min_length=1, max_length=MAX_KEY_CHARS)]
Listing = TypeVar("Listing", RunListing, EvalListing)


def newest_first(items: list[Listing], started: Callable[[Listing], str | None]) -> list[Listing]:
    """``items`` by start time, the newest first, as ``serve`` lists its runs; those with
    no start time (no readable trace or report) last, in the scan's order."""
    return sorted(items, key=lambda item: started(item) or "", reverse=True)


def create_view_app(settings: ViewSettings) -> FastAPI:
    """The viewer over ``settings.root``; the folder is opened now and closed with the app.

    Raises:
        UsageError: the folder cannot be opened, or the public key cannot be read.
    """
    folder = Folder(settings)
    try:
        public_key = load_public_key(settings.public_key) if settings.public_key else None
    except UsageError:
        folder.close()
        raise

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            folder.close()

    app = FastAPI(
        title="sandbox-agent view",
        summary="The run viewer over a folder of runs and evaluations, read-only.",
        version="1",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.add_middleware(ViewerGuard)
    # Keys of runs inside a results folder are two levels below the report itself.
    depth = settings.max_depth + len((EVAL_TRACES, "run"))

    def parts(key: str, kind: str) -> tuple[str, ...]:
        try:
            found = parts_of(key, depth)
            if folder.kind(found) == kind:
                return found
        except UsageError:
            pass
        raise HTTPException(404, f"no {kind} folder with this key here: /api/view lists them")

    @app.get("/health")
    def health() -> dict[str, str]:
        """Liveness, and the mode the page asks for (``serve``'s has no ``mode``)."""
        return {"status": "ok", "mode": "view"}

    @app.get("/")
    def page() -> FileResponse:
        return FileResponse(INDEX_FILE, media_type="text/html")

    @app.get("/api/view")
    def view() -> dict[str, Any]:
        found = folder.scan()
        runs = [list_run(folder, parts_of(key, depth)) for key in found.runs]
        evals = [list_eval(folder, parts_of(key, depth)) for key in found.evals]
        return {
            "mode": "view",
            "root": str(folder.root),
            "complete": found.complete,
            "limits": {
                "max_runs": settings.max_runs,
                "max_depth": settings.max_depth,
                "max_events": settings.max_events,
                "max_file_bytes": settings.max_file_bytes,
            },
            "runs": [run.model_dump() for run in newest_first(runs, lambda run: run.started)],
            "evals": [item.model_dump() for item in newest_first(evals, lambda e: e.started_at)],
        }

    @app.get("/api/run", response_model=RunPage)
    def run(key: Key) -> RunPage:
        return load_run(folder, parts(key, "run"), public_key)

    @app.get("/api/eval", response_model=EvalPage)
    def evaluation(key: Key) -> EvalPage:
        return load_eval(folder, parts(key, "eval"))

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app
