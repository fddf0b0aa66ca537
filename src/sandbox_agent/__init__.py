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

__version__ = "0.1.0"
