"""SR-12 D6: the ``Host`` check of the viewer and of the service (a guard against DNS
rebinding) accepted values that are not a loopback host, such as ``127.0.0.1:80@evil.example``
and ``[::1]evil``, and the two servers each had their own copy of it. The ``test_d6``
tests were written against the code before the fix and failed there; the hosts that code
refused already are kept refused by a test of their own.

Both apps are the real ones (``create_view_app``, ``create_app``), through Starlette's
test client, which hands the ``Host`` header to the app as given.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from sandbox_agent.service import ServiceSettings, create_app
from sandbox_agent.service.models import PreflightStatus
from sandbox_agent.viewer.app import create_view_app
from sandbox_agent.viewer.settings import ViewSettings
from service.fake_run import FakeRunFunction

LET_THROUGH = [
    "127.0.0.1:80@evil.example",
    "[::1]evil",
    "127.0.0.1:",
    "127.0.0.1:99999",
    "127.0.0.1:0",
    "localhost:80 x",
    "[::1%25lo]:80",
    "[127.0.0.1]",
]
"""What the old check accepted: the finding (each case failed on the code before the fix)."""
STILL_REFUSED = [
    "127.0.0.1.",
    "localhost.",
    "127.0.0.1 :80",
    "evil.example@127.0.0.1",
    "::1",
    "127.1",
    "127.0.0.01",
    "",
]
"""What the old check refused already: kept refused, not part of the finding's evidence."""
ACCEPTED = [
    "127.0.0.1",
    "127.0.0.1:8000",
    "127.1.2.3:9",
    "localhost",
    "localhost:8000",
    "LOCALHOST",
    "LocalHost:1",
    "[::1]",
    "[::1]:8000",
    "[0:0:0:0:0:0:0:1]:65535",
]


def _unknown_preflight() -> PreflightStatus:
    return PreflightStatus(status="unknown", detail="not checked here")


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[TestClient, str]]]:
    """Each app's client, and a path it answers 200 to without a token."""
    root = tmp_path_factory.mktemp("host-guard")
    (root / "served").mkdir()
    (root / "fixtures").mkdir()
    viewer = create_view_app(ViewSettings(root=root / "served"))
    service = create_app(
        ServiceSettings(
            token="test-token-0123456789abcdef",
            db_path=root / "runs.sqlite3",
            fixtures_dir=root / "fixtures",
            work_dir=root / "work",
        ),
        FakeRunFunction(),
        preflight_fn=_unknown_preflight,
        reap_fn=list,
    )
    with TestClient(viewer) as viewer_client, TestClient(service) as service_client:
        yield {"viewer": (viewer_client, "/api/view"), "service": (service_client, "/openapi.json")}


@pytest.mark.parametrize("app", ["viewer", "service"])
@pytest.mark.parametrize("host", LET_THROUGH)
def test_d6_a_host_that_is_not_exactly_a_loopback_one_is_refused(
    apps: dict[str, tuple[TestClient, str]], app: str, host: str
) -> None:
    _assert_refused(apps, app, host)


@pytest.mark.parametrize("app", ["viewer", "service"])
@pytest.mark.parametrize("host", STILL_REFUSED)
def test_a_host_refused_before_the_fix_stays_refused(
    apps: dict[str, tuple[TestClient, str]], app: str, host: str
) -> None:
    _assert_refused(apps, app, host)


def _assert_refused(apps: dict[str, tuple[TestClient, str]], app: str, host: str) -> None:
    client, path = apps[app]
    answer = client.get(path, headers={"Host": host})
    assert answer.status_code == 421, (app, host, answer.status_code)
    assert "DNS rebinding" in answer.json()["detail"]


@pytest.mark.parametrize("app", ["viewer", "service"])
@pytest.mark.parametrize("host", ACCEPTED)
def test_d6_a_loopback_host_with_or_without_a_port_is_served(
    apps: dict[str, tuple[TestClient, str]], app: str, host: str
) -> None:
    client, path = apps[app]
    assert client.get(path, headers={"Host": host}).status_code == 200, (app, host)


def test_d6_the_viewer_and_the_service_use_one_guard() -> None:
    from sandbox_agent.service import middleware
    from sandbox_agent.viewer import guard

    assert importlib.util.find_spec("sandbox_agent.httpguard") is not None, "no shared guard"
    viewer_check = getattr(guard, "host_is_loopback", None)
    service_check = getattr(middleware, "host_is_loopback", None)
    assert viewer_check is not None
    assert viewer_check is service_check
    assert viewer_check.__module__ == "sandbox_agent.httpguard"
    assert not hasattr(middleware, "_names_loopback"), "the service's copy is still there"
