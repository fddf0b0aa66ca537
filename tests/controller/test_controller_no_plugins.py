"""No third-party code hooks into the controller's validation through pydantic plugins.

pydantic loads every installed distribution's ``pydantic`` entry points the first
time a model is built, and calls them on every validation. In the trusted controller
that would be code we never chose, seeing every tool call and result; finding them
also means reading every installed distribution's metadata (~30 ms of each start on
these machines). ``import sandbox_agent`` turns plugins off unless the operator set
``PYDANTIC_DISABLE_PLUGINS`` themselves.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PLUGIN = """
from pathlib import Path
Path({marker!r}).write_text("loaded")

class Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None

plugin = Plugin()
"""


def _site_with_a_plugin(root: Path, marker: Path) -> Path:
    site = root / "site"
    (site / "evil_plugin.py").parent.mkdir(parents=True)
    (site / "evil_plugin.py").write_text(PLUGIN.format(marker=str(marker)))
    info = site / "evil_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nevil = evil_plugin:plugin\n")
    return site


def _build_models(site: Path, env: dict[str, str], first: str) -> None:
    code = f"import {first}\nimport sandbox_agent.controller.models\n"
    inherited = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    environment = {**inherited, **env, "PYTHONPATH": str(site)}
    subprocess.run([sys.executable, "-c", code], env=environment, check=True, timeout=60)


def test_an_installed_pydantic_plugin_is_never_loaded(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    site = _site_with_a_plugin(tmp_path, marker)
    _build_models(site, {}, "sandbox_agent")
    assert not marker.exists()


def test_the_plugin_would_load_without_the_guard(tmp_path: Path) -> None:
    # The control: the same plugin, with the operator turning plugins back on, is loaded.
    marker = tmp_path / "marker"
    site = _site_with_a_plugin(tmp_path, marker)
    _build_models(site, {"PYDANTIC_DISABLE_PLUGINS": "false"}, "sandbox_agent")
    assert marker.read_text() == "loaded"
