"""Property-based fuzz of every endpoint from the published OpenAPI schema: never a 5xx,
and every answer matches what the schema says about it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fake_run import FakeRunFunction
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)
from service_harness import TOKEN, LiveServer, make_fixtures

from sandbox_agent.service import create_app
from sandbox_agent.service.models import PreflightStatus
from sandbox_agent.service.settings import ServiceSettings

FUZZ_EXAMPLES = 40


@pytest.fixture(scope="module")
def fuzzed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root: Path = tmp_path_factory.mktemp("fuzz")
    service_settings = ServiceSettings(
        token=TOKEN,
        db_path=root / "runs.sqlite3",
        fixtures_dir=make_fixtures(root),
        work_dir=root / "work",
        max_concurrent=2,
        max_queue=4,
    )
    server = LiveServer(
        service_settings,
        FakeRunFunction(seconds=0.05),
        preflight_fn=lambda: PreflightStatus(status="unknown"),
        reap_fn=list,
    ).start()
    with server.client() as client:  # one real run, so the run endpoints have one to find
        client.post("/runs", json={"fixture": "paginator", "task": "seed"}).raise_for_status()
    yield server
    server.stop()


def _published_schema() -> dict[str, object]:
    """The schema the app publishes at /openapi.json (building the app touches nothing)."""
    nowhere = Path("/nonexistent")
    app = create_app(
        ServiceSettings(token=TOKEN, db_path=nowhere, fixtures_dir=nowhere, work_dir=nowhere),
        FakeRunFunction(),
    )
    return app.openapi()


# schemathesis' lazy `from_fixture` does not run under pytest 9, so the schema is loaded
# here and each case is sent to the live server's address.
schema = schemathesis.openapi.from_dict(_published_schema())


def test_the_fuzzed_schema_is_the_served_one(fuzzed_server: LiveServer) -> None:
    with fuzzed_server.client(token=None) as client:
        assert client.get("/openapi.json").json() == _published_schema()


@schema.parametrize()
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_endpoint_answers_5xx_or_off_schema(
    case: schemathesis.Case, fuzzed_server: LiveServer
) -> None:
    case.call_and_validate(
        base_url=fuzzed_server.url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        checks=[not_a_server_error, response_schema_conformance, status_code_conformance],
        timeout=10,
    )


@schema.parametrize()
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_endpoint_answers_5xx_without_a_token(
    case: schemathesis.Case, fuzzed_server: LiveServer
) -> None:
    response = case.call(base_url=fuzzed_server.url, timeout=10)
    assert response.status_code < 500
    if case.path != "/health":  # never data without the token
        assert response.status_code in {401, 405, 413, 422}, response.status_code
