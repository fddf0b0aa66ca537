"""Things done to a sandbox from outside while it runs: cancel, signal PID 1, kill it.

Kills go through Docker (``docker kill --signal``) and straight to the container's PID 1
on the host (``State.Pid`` from inspect), since the runner image has no shell to exec.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from typing import Any

from sandbox_agent.sandbox.base import CancelToken
from sandbox_agent.stress.scenarios import CANCEL_WINDOW_S, KILL_WINDOW_S, Action

FIND_POLL_S = 0.01
FIND_TIMEOUT_S = 15.0
"""How long to look for the run's container before giving up (it may never be created)."""


class OutsideAction:
    """One action against one run, on its own thread; ``done`` says whether it landed."""

    def __init__(
        self, action: Action, api: Any, label: str, cancel: CancelToken, rng: random.Random
    ) -> None:
        """Args:
        action: what to do.
        api: a low-level Docker API client (for the kills).
        label: ``key=value`` of the label that names this run's container.
        cancel: the run's token (for ``cancel``).
        rng: where the random delay comes from.
        """
        self.action = action
        self.done = False
        self.detail = ""
        self._api = api
        self._label = label
        self._cancel = cancel
        self._finished = threading.Event()
        low, high = CANCEL_WINDOW_S if action == "cancel" else KILL_WINDOW_S
        self.delay_s = rng.uniform(low, high)
        self._thread = threading.Thread(target=self._act, name=f"stress-{action}", daemon=True)

    def __enter__(self) -> OutsideAction:
        if self.action != "none":
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._finished.set()
        if self._thread.is_alive():
            self._thread.join()

    def _act(self) -> None:
        if self.action == "cancel":
            if not self._finished.wait(self.delay_s):
                self._cancel.cancel()
                self.done = True
            return
        container = self._running_container()
        if container is None or self._finished.wait(self.delay_s):
            return
        try:
            self._kill(container)
            self.done = True
        except Exception as error:  # the container may be gone already: a miss, not a failure
            self.detail = f"{type(error).__name__}: {str(error)[:200]}"

    def _running_container(self) -> str | None:
        give_up = time.monotonic() + FIND_TIMEOUT_S
        while not self._finished.is_set() and time.monotonic() < give_up:
            with contextlib.suppress(Exception):
                for entry in self._api.containers(all=True, filters={"label": self._label}):
                    if entry.get("State") == "running":
                        return str(entry["Id"])
            self._finished.wait(FIND_POLL_S)
        return None

    def _kill(self, container: str) -> None:
        if self.action == "signal_pid1":
            self._api.kill(container, signal="SIGTERM")
        elif self.action == "kill_container":
            self._api.kill(container)
        elif self.action == "kill_host_pid":
            pid = int(self._api.inspect_container(container)["State"]["Pid"])
            if pid <= 0:
                raise ProcessLookupError("the container has no running PID 1")
            os.kill(pid, signal.SIGKILL)
