"""Preflight: is this host ready to run verified, attested sandboxes on a runtime?

Checks, in order (a failed check skips those that depend on it): the daemon answers,
the recorded runner image matches the current inputs and exists, the runtime is
registered, the pinned seccomp profile is intact, and a probe container passes
verification and attestation and completes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from sandbox_agent.errors import SandboxAgentError
from sandbox_agent.sandbox.base import Runtime, SandboxLimits, SandboxRequest
from sandbox_agent.sandbox.docker.diagnostics import bounded

PROBE_ARGV = ("python3", "-c", "pass")
PROBE_LIMITS = SandboxLimits(timeout_s=20.0)


class PreflightCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    ok: bool
    detail: str
    fix: str = ""
    """What to do when the check failed (one line)."""


class PreflightReport(BaseModel):
    """The ``--json`` output of ``sandbox-agent preflight`` (docs/CONTRACT.md section 3,
    "The other commands")."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    image_id: str | None
    image: str | None
    runtime: Runtime
    checks: list[PreflightCheck]


def _docker_client() -> Any:
    import docker

    from sandbox_agent.sandbox.docker.docker_backend import DOCKER_API_VERSION

    return docker.from_env(version=DOCKER_API_VERSION, timeout=30)


def run_preflight(runtime: Runtime) -> PreflightReport:
    """Run every check for ``runtime``; never raises for a failed check."""
    from sandbox_agent.hostsetup import image

    checks: list[PreflightCheck] = []

    def check(name: str, ok: bool, detail: str, fix: str = "") -> bool:
        checks.append(PreflightCheck(name=name, ok=ok, detail=bounded(detail), fix=fix))
        return ok

    def report(image_id: str | None = None, tag: str | None = None) -> PreflightReport:
        ok = bool(checks) and all(c.ok for c in checks) and len(checks) == 5
        return PreflightReport(ok=ok, image_id=image_id, image=tag, runtime=runtime, checks=checks)

    try:
        client = _docker_client()
        version = client.version()
    except Exception as error:  # any failure to talk to the daemon
        check("daemon", False, str(error), "start Docker: run 'make setup' (or 'make docker')")
        return report()
    try:
        check("daemon", True, f"Docker {version.get('Version')} (API {version.get('ApiVersion')})")
        try:
            record = image.current_record()
            client.images.get(record.image_id)
            tagged = client.images.get(record.tag).id
        except (SandboxAgentError, Exception) as error:  # SetupError or ImageNotFound
            check("image", False, str(error), "build the runner image: run 'make image'")
            return report()
        if not check(
            "image",
            tagged == record.image_id,
            f"{record.tag} {record.image_id}"
            + ("" if tagged == record.image_id else f" (tag is {tagged})"),
            "the tag points at another image: run 'make image'",
        ):
            return report(record.image_id, record.tag)
        runtimes = sorted(client.info().get("Runtimes", {}))
        if not check(
            "runtime",
            runtime in runtimes,
            f"registered: {', '.join(runtimes)}",
            f"register '{runtime}' with dockerd (see scripts/ensure-docker.sh)",
        ):
            return report(record.image_id, record.tag)
        if not _check_seccomp(check):
            return report(record.image_id, record.tag)
        _probe(runtime, record.image_id, client, check)
        return report(record.image_id, record.tag)
    finally:
        client.close()


def _check_seccomp(check: Any) -> bool:
    from sandbox_agent.sandbox.docker import seccomp

    try:
        seccomp.profile_json()
    except SandboxAgentError as error:
        return bool(check("seccomp_profile", False, str(error), "reinstall sandbox-agent"))
    return bool(check("seccomp_profile", True, f"sha256 {seccomp.PROFILE_SHA256[:16]}"))


def _probe(runtime: Runtime, image_id: str, client: Any, check: Any) -> None:
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    backend = DockerBackend(image_id=image_id, client=client, reap_on_first_use=False)
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-preflight-") as folder:
        Path(folder).chmod(0o755)  # uid 10001 must be able to enter /workspace
        request = SandboxRequest(
            argv=PROBE_ARGV, workspace=Path(folder), runtime=runtime, limits=PROBE_LIMITS
        )
        try:
            result = backend.run(request)
        except SandboxAgentError as error:
            check("probe", False, str(error), "check the Docker daemon's log")
            return
    ok = (
        result.status == "completed"
        and result.attested
        and result.exit_report_valid
        and result.exit_code == 0
        and result.cleanup == "removed"
    )
    diag = result.diagnostics
    detail = (
        f"status {result.status}, verification {diag.verification}, attestation "
        f"{diag.attestation}, exit report {diag.exit_report}, cleanup {result.cleanup}, "
        f"{sum(result.phase_ms.values()):.0f} ms"
    )
    if not ok:
        detail += f": {result.reason}"
    check("probe", ok, detail, "the sandbox is not verified here: see the detail above")
