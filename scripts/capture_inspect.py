"""Re-capture ``tests/sandbox/data/docker_inspect.json``'s ``created`` entries from real Docker.

Run after the container spec changes (``sandbox.docker.spec``): for each runtime it creates a
container from ``build_spec`` exactly as the backend does, stores the spec and Docker's
``inspect`` of it, and removes the container. The ``states`` entries are kept.

    .venv/bin/python scripts/capture_inspect.py
"""

from __future__ import annotations

import json
import secrets
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "tests" / "sandbox" / "data" / "docker_inspect.json"


def main() -> int:
    """Capture both runtimes and rewrite the file."""
    from sandbox_agent.hostsetup.image import ensure
    from sandbox_agent.sandbox.base import SandboxRequest
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend
    from sandbox_agent.sandbox.docker.spec import build_spec

    data = json.loads(DATA.read_text())
    backend = DockerBackend(image_id=ensure().image_id, reap_on_first_use=False)
    workspace = Path(tempfile.mkdtemp(prefix="capture-"))
    try:
        for runtime in ("runc", "runsc"):
            request = SandboxRequest(argv=("python3", "-V"), workspace=workspace, runtime=runtime)
            spec = build_spec(request, backend.image_id, secrets.token_hex(16), backend.owner)
            created = backend.api.create_container_from_config(spec.create_body())
            try:
                inspect = backend.api.inspect_container(created["Id"])
            finally:
                backend.api.remove_container(created["Id"], force=True)
            data["created"][runtime] = {"spec": spec.model_dump(mode="json"), "inspect": inspect}
    finally:
        workspace.rmdir()
        backend.close()
    DATA.write_text(json.dumps(data, indent=1) + "\n")
    print(f"captured runc and runsc into {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
