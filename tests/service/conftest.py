"""Fixtures of the service tests (the harness itself is in ``service_harness``)."""

from __future__ import annotations

from service_harness import browser_page, make_settings, server, start_server

__all__ = ["browser_page", "make_settings", "server", "start_server"]
