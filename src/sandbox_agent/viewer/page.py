"""The run viewer's page and its assets: the one seam the service uses.

``sandbox-agent serve`` and ``sandbox-agent view`` serve the same files: ``index.html``
at ``/`` and this folder at ``/static/``. Plain ES modules, no build step, nothing
loaded from elsewhere (docs/DECISIONS.md, "Run viewer"). This module imports nothing,
so the service can use it without pulling the viewer's reading code in.
"""

from __future__ import annotations

from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"
INDEX_FILE = STATIC_DIR / "index.html"
