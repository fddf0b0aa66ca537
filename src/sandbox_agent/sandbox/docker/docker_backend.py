"""The Docker backend: one fresh container per run, verified before start, attested inside.

Phases (each usable alone, so the next container can be prepared ahead of time):
``prepare`` (create, inspect, verify), ``start`` (last checks, attach, start), ``wait``
(the attestation, the host's go, frames until exit; the host's own deadline;
cancellation), ``remove`` (always). ``run`` composes them, or takes a sandbox
pre-started for the same request (``prestart``) and only sends the go and waits.
Talks to Docker through the SDK, API 1.41.
"""

from __future__ import annotations

import secrets
import threading
import time
from typing import Any

from typing_extensions import override

from sandbox_agent.errors import DockerUnavailable
from sandbox_agent.sandbox.base import (
    CancelToken,
    Diagnostics,
    PreparedSandbox,
    SandboxBackend,
    SandboxRequest,
    SandboxResult,
    SandboxStatus,
)
from sandbox_agent.sandbox.docker import cleanup, reaper
from sandbox_agent.sandbox.docker.classify import classify_docker_error
from sandbox_agent.sandbox.docker.diagnostics import bounded, elapsed_ms
from sandbox_agent.sandbox.docker.owner import owner_value
from sandbox_agent.sandbox.docker.prestart import Prestarter
from sandbox_agent.sandbox.docker.spec import GO_TIMEOUT_S, build_spec, verify
from sandbox_agent.sandbox.docker.waiting import StartedSandbox, wait_for_exit
from sandbox_supervisor.protocol import MAX_CONFIG_BYTES

DOCKER_API_VERSION = "1.41"
DOCKER_TIMEOUT_S = 30.0
RUNSC_MIN_PIDS = 64
"""gVisor's own threads count against the pids limit: below this, start hangs for good."""
"""Per-request timeout of the Docker client (create, start, inspect, remove)."""


class DockerBackend(SandboxBackend):
    """Runs each request in a fresh Docker container (runtime ``runc`` or ``runsc``)."""

    def __init__(
        self,
        *,
        image_id: str | None = None,
        client: Any = None,
        reap_on_first_use: bool = True,
        prestarted: int = 0,
        go_timeout_s: float = GO_TIMEOUT_S,
    ) -> None:
        """Args:
        image_id: the image every run must use; default the recorded runner image.
        client: a ``docker.DockerClient`` (default: from the environment, API 1.41).
        reap_on_first_use: reap dead controllers' containers before the first run.
        prestarted: how many sandboxes ``prestart`` may keep ready (0: none).
        go_timeout_s: how long PID 1 of a started sandbox waits for the host's go.

        Raises:
            SetupError: no runner image is recorded for the current inputs.
        """
        if image_id is None:
            from sandbox_agent.hostsetup.image import current_record

            image_id = current_record().image_id
        self.image_id = image_id
        self._client = client
        self._reap_pending = reap_on_first_use
        self._lock = threading.Lock()
        self.owner = owner_value()
        self._go_timeout_s = go_timeout_s
        self._prestarter = Prestarter(self, prestarted, go_timeout_s)

    @property
    def api(self) -> Any:
        """The low-level Docker API client.

        Raises:
            DockerUnavailable: no Docker client can be made here.
        """
        with self._lock:
            if self._client is None:
                import docker

                try:
                    self._client = docker.from_env(
                        version=DOCKER_API_VERSION, timeout=int(DOCKER_TIMEOUT_S)
                    )
                except Exception as error:  # DockerException and friends
                    raise DockerUnavailable(
                        f"cannot reach Docker ({error}): run 'make setup'"
                    ) from error
            return self._client.api

    @override
    def prestart(self, request: SandboxRequest, count: int = 1) -> None:
        try:
            # The SDK's import and the client are made here, so the pre-start thread
            # goes straight to ``create`` and the caller's next work overlaps the
            # daemon's, not the import (one interpreter lock for both threads).
            self.api  # noqa: B018
        except DockerUnavailable:
            return  # the run itself will say so
        self._prestarter.reopen()
        self._prestarter.offer(request, count)

    @override
    def discard_prestarted(self) -> list[str]:
        return self._prestarter.discard()

    @override
    def close(self) -> None:
        self._prestarter.discard()
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    @override
    def reap(self) -> list[str]:
        removed, failures = reaper.reap_containers(self.api)
        return removed + [f"not removed: {line}" for line in failures]

    def _reap_once(self) -> None:
        # In the background, with its own client: a container Docker cannot remove
        # (see ``stuck``) can take a request time-out or two, and a run must not wait
        # for what a dead controller left.
        if self._reap_pending:
            self._reap_pending = False
            threading.Thread(target=_reap_in_background, name="sandbox-reaper", daemon=True).start()

    def _docker_failed(self, error: Exception, phase: str) -> None:
        """Raise DockerUnavailable when the daemon is gone; otherwise return to refuse."""
        if classify_docker_error(str(error)) == "daemon_unavailable":
            raise DockerUnavailable(f"Docker stopped answering during {phase}: {error}") from error

    def prepare(
        self, request: SandboxRequest, cancel: CancelToken | None = None
    ) -> PreparedSandbox | SandboxResult:
        """Create the container from its spec and verify it; refuse on any mismatch.

        Returns:
            The prepared sandbox, or a final result (``started`` false) when cancellation
            or the deadline was due, or the container could not be created or verified
            (then it is already removed).

        Raises:
            DockerUnavailable: the daemon does not answer.
            SetupError: the pinned seccomp profile was changed.
        """
        cancel = cancel or CancelToken()
        due = _due(cancel)
        if due is not None:
            return _not_started(request, due, "before create; nothing was created")
        if request.runtime == "runsc" and request.limits.pids < RUNSC_MIN_PIDS:
            why = (
                f"runsc needs a pids limit of at least {RUNSC_MIN_PIDS} (got {request.limits.pids})"
            )
            return _refused(request, "create", why, {})
        self._reap_once()
        nonce = secrets.token_hex(16)
        spec = build_spec(
            request, self.image_id, nonce, self.owner, go_timeout_s=self._go_timeout_s
        )
        phase_ms: dict[str, float] = {}
        if len(spec.config.encode("utf-8")) > MAX_CONFIG_BYTES:
            why = f"PID 1's config is over {MAX_CONFIG_BYTES} bytes (a held-out check too large?)"
            return _refused(request, "create", why, {})
        started_at = time.monotonic()
        try:
            created = self.api.create_container_from_config(spec.create_body())
        except Exception as error:  # the SDK raises requests and docker errors alike
            self._docker_failed(error, "create")
            return _refused(request, "create", f"create failed: {bounded(str(error))}", phase_ms)
        container_id = str(created["Id"])
        phase_ms["create"] = elapsed_ms(started_at)
        started_at = time.monotonic()
        try:
            inspect = self.api.inspect_container(container_id)
        except Exception as error:  # the SDK raises requests and docker errors alike
            self._docker_failed(error, "inspect")
            inspect = {}
        mismatches = verify(spec, inspect) if inspect else ["inspect failed"]
        phase_ms["verify"] = elapsed_ms(started_at)
        prepared = PreparedSandbox(
            container_id=container_id,
            request=request,
            nonce=nonce,
            spec_sha256=spec.sha256(),
            image_id=self.image_id,
            config=spec.config,
            phase_ms=phase_ms,
        )
        if mismatches:
            result = _refused(
                request,
                "verify",
                f"the container does not match its spec: {', '.join(mismatches)}",
                phase_ms,
                prepared=prepared,
                verification=bounded(", ".join(mismatches)),
            )
            return self._finish(result, container_id)
        return prepared

    def start(
        self, prepared: PreparedSandbox, cancel: CancelToken | None = None
    ) -> StartedSandbox | SandboxResult:
        """Last check of cancellation and deadline, attach to PID 1's output, then start.

        Returns:
            The started sandbox, or a final result (``started`` false, container removed).

        Raises:
            DockerUnavailable: the daemon does not answer.
        """
        cancel = cancel or CancelToken()
        request = prepared.request
        phase_ms = dict(prepared.phase_ms)
        due = _due(cancel)
        if due is not None:
            result = _not_started(request, due, "before start; the container was removed")
            result.phase_ms = phase_ms
            _with_prepared(result, prepared)
            return self._finish(result, prepared.container_id)
        started_at = time.monotonic()
        try:
            stream = StartedSandbox.attach(self.api, prepared)
        except Exception as error:  # the SDK raises requests and docker errors alike
            self._docker_failed(error, "attach")
            result = _refused(request, "start", f"attach failed: {bounded(str(error))}", phase_ms)
            return self._finish(_with_prepared(result, prepared), prepared.container_id)
        try:
            self.api.start(prepared.container_id)
        except Exception as error:  # the SDK raises requests and docker errors alike
            stream.close()
            self._docker_failed(error, "start")
            kind = classify_docker_error(str(error))
            result = _refused(
                request, "start", f"start failed ({kind}): {bounded(str(error))}", phase_ms
            )
            return self._finish(_with_prepared(result, prepared), prepared.container_id)
        if not stream.stream.send_config(prepared.config):
            stream.close()
            result = _refused(request, "start", "PID 1's config could not be sent", phase_ms)
            return self._finish(_with_prepared(result, prepared), prepared.container_id)
        phase_ms["start"] = elapsed_ms(started_at)
        stream.mark_started(phase_ms)
        return stream

    def wait(self, started: StartedSandbox, cancel: CancelToken | None = None) -> SandboxResult:
        """Read PID 1's frames until the container exits, then classify (not yet removed).

        Raises:
            DockerUnavailable: the daemon stopped answering.
        """
        try:
            return wait_for_exit(self.api, started, cancel or CancelToken())
        finally:
            started.close()

    def remove(self, container_id: str) -> str:
        """Remove the container: ``removed`` or ``failed: <why>`` (left to the reaper)."""
        return cleanup.remove(self.api, container_id)

    def _finish(self, result: SandboxResult, container_id: str) -> SandboxResult:
        started_at = time.monotonic()
        result.cleanup = self.remove(container_id)
        result.phase_ms["remove"] = elapsed_ms(started_at)
        if result.cleanup != "removed":
            result.diagnostics.detail = bounded(f"{result.diagnostics.detail} {result.cleanup}")
        return result

    @override
    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        cancel = cancel or CancelToken()
        waited_at = time.monotonic()
        ready = self._prestarter.take(request, cancel)
        if ready is not None:
            ready.phase_ms["prestart_wait"] = elapsed_ms(waited_at)
            return self._run_ready(ready, cancel)
        prepared = self.prepare(request, cancel)
        if isinstance(prepared, SandboxResult):
            return prepared
        try:
            started = self.start(prepared, cancel)
        except BaseException:
            self.remove(prepared.container_id)
            raise
        if isinstance(started, SandboxResult):
            return started
        try:
            result = self.wait(started, cancel)
        except BaseException:
            self.remove(prepared.container_id)
            raise
        return self._finish(result, prepared.container_id)

    def _run_ready(self, ready: StartedSandbox, cancel: CancelToken) -> SandboxResult:
        """A pre-started, attested sandbox: last checks, the go, wait, remove."""
        container_id = ready.prepared.container_id
        due = _due(cancel)
        if due is not None:
            ready.withhold()
            ready.close()
            result = _not_started(
                ready.prepared.request, due, "before the go; the pre-started sandbox was removed"
            )
            result.phase_ms = dict(ready.phase_ms)
            return self._finish(_with_prepared(result, ready.prepared), container_id)
        try:
            result = self.wait(ready, cancel)
        except BaseException:
            self.remove(container_id)
            raise
        result.prestarted = True
        return self._finish(result, container_id)


def _due(cancel: CancelToken) -> SandboxStatus | None:
    if cancel.cancelled:
        return "cancelled"
    if cancel.deadline_passed():
        return "timeout"
    return None


def _not_started(request: SandboxRequest, status: SandboxStatus, when: str) -> SandboxResult:
    what = "cancelled" if status == "cancelled" else "deadline passed"
    return SandboxResult(
        status=status,
        reason=f"{what} {when}",
        started=False,
        runtime=request.runtime,
        diagnostics=Diagnostics(phase="none", detail=f"{what} {when}"),
    )


def _refused(
    request: SandboxRequest,
    phase: str,
    why: str,
    phase_ms: dict[str, float],
    *,
    prepared: PreparedSandbox | None = None,
    verification: str = "not run",
) -> SandboxResult:
    result = SandboxResult(
        status="refused",
        reason=f"sandbox error: {why}",
        started=False,
        runtime=request.runtime,
        phase_ms=dict(phase_ms),
        diagnostics=Diagnostics(phase=phase, verification=verification, detail=bounded(why)),
    )
    return _with_prepared(result, prepared) if prepared is not None else result


def _with_prepared(result: SandboxResult, prepared: PreparedSandbox) -> SandboxResult:
    result.image_id = prepared.image_id
    result.spec_sha256 = prepared.spec_sha256
    result.diagnostics.container_id = prepared.container_id[:12]
    if result.diagnostics.verification == "not run":
        result.diagnostics.verification = "ok"
    return result


def _reap_in_background() -> None:
    """Reap dead controllers' containers; failures stay for ``sandbox-agent reap`` to report."""
    import docker

    try:
        client = docker.from_env(version=DOCKER_API_VERSION, timeout=int(DOCKER_TIMEOUT_S))
    except Exception:  # no daemon: the run itself will say so
        return
    try:
        reaper.reap_containers(client.api)
    except Exception:  # never let housekeeping break a run; 'reap' reports failures
        return
    finally:
        client.close()
