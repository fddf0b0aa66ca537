"""sandbox-agent: a coding agent contained and verified by a trusted controller.

The layout tells the story:

- ``controller/``: the bounded agent loop, budgets and the evidence-based status.
- ``providers/``: where model turns come from (scripted, simulated, real APIs).
- ``tools/``: the six structured tools, the model's only hands.
- ``workspace/``: the private copy of the repository and descriptor-safe file access.
- ``policy/``: protected paths, tool and command allowlists.
- ``sandbox/``: verified, attested container runs (the only place repository code runs).
- ``trace/``: the redacted, hash-chained JSONL trace.
- ``hostsetup/``: the Docker daemon and the locally built runner image.

The code that runs inside the container is its own stdlib-only package,
``sandbox_supervisor``.
"""

import os

__version__ = "0.1.0"


def disable_pydantic_plugins() -> None:
    """No third-party code hooked into the trusted controller's validation.

    pydantic would otherwise load every installed distribution's ``pydantic`` entry
    points when the first model is built, and call them on every validation (finding
    them also reads all installed metadata: ~30 ms of each start here). Runs when the
    package is imported, before any model exists. An operator's own setting wins.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


disable_pydantic_plugins()
