"""Files written under a folder from a mapping: the repositories, projects and /proc
trees that tests build on disk (one helper for every test folder)."""

from __future__ import annotations

from pathlib import Path


def write_files(root: Path, files: dict[str, str]) -> Path:
    """``files`` (relative path -> text) written under ``root``, folders made; ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
