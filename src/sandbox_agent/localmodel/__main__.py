"""``python -m sandbox_agent.localmodel [ensure|show]``: what ``make model`` runs.

``ensure`` builds ``llama-server`` and fetches the model unless both are cached and
verified (then it takes about a second), printing one line per step; ``show`` prints
what is cached as JSON. A failure is one line on stderr and exit 2.
"""

from __future__ import annotations

import json
import sys
import time

from sandbox_agent.errors import SetupError
from sandbox_agent.localmodel import paths, pins
from sandbox_agent.localmodel.build import build_options, ensure_server_build, find_build
from sandbox_agent.localmodel.fetch import ensure_model


def _say(line: str) -> None:
    print(f"make model: {line}", flush=True)


def ensure() -> int:
    """Build the server and fetch the model, each only when missing."""
    began = time.monotonic()
    binary, record = ensure_server_build(
        paths.builds_dir(), paths.downloads_dir(), index=paths.index_url(), say=_say
    )
    _say(f"server ready: {binary} ({record.server_version})")
    model = ensure_model(paths.model_path(), index=paths.index_url(), say=_say)
    _say(f"model ready: {model} (sha256 {pins.MODEL_SHA256[:16]}..., {pins.MODEL_LICENSE})")
    _say(f"done in {time.monotonic() - began:.1f} s")
    return 0


def show() -> int:
    """Print the cached build and model, without building or fetching anything."""
    found = find_build(paths.builds_dir(), build_options())
    print(
        json.dumps(
            {
                "cache": str(paths.cache_dir()),
                "server": None if found is None else str(found[0]),
                "build": None if found is None else found[1].model_dump(),
                "model": str(paths.model_path()),
                "model_present": paths.model_path().is_file(),
                "model_sha256": pins.MODEL_SHA256,
                "license": pins.MODEL_LICENSE,
                "provenance": pins.MODEL_PROVENANCE,
            },
            indent=2,
        )
    )
    return 0


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "ensure"
    actions = {"ensure": ensure, "show": show}
    if command not in actions or len(argv) > 1:
        print("usage: python -m sandbox_agent.localmodel [ensure|show]", file=sys.stderr)
        return 2
    try:
        return actions[command]()
    except SetupError as error:
        print(f"make model: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
