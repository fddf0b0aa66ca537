"""The ``--deps*`` flags shared by ``run`` and ``eval`` (and ``deps``)."""

from __future__ import annotations

import argparse

from sandbox_agent.deps.models import (
    DEFAULT_INDEX_URL,
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT_S,
    DepsOptions,
)


def add_deps_arguments(parser: argparse.ArgumentParser) -> None:
    """``--deps auto|off``, ``--deps-index-url URL``, ``--deps-max-bytes BYTES``,
    ``--deps-timeout S``."""
    group = parser.add_argument_group("dependencies (docs/DEPENDENCIES.md)")
    group.add_argument(
        "--deps",
        choices=("auto", "off"),
        default="auto",
        help="the repository's declared dependencies, read-only in the sandbox (default auto)",
    )
    group.add_argument(
        "--deps-index-url",
        metavar="URL",
        default=DEFAULT_INDEX_URL,
        help=f"package index the wheels come from (default {DEFAULT_INDEX_URL})",
    )
    group.add_argument(
        "--deps-max-bytes",
        metavar="BYTES",
        type=int,
        default=DEFAULT_MAX_BYTES,
        help=f"refuse a larger environment, unpacked (default {DEFAULT_MAX_BYTES}: 1 GiB)",
    )
    group.add_argument(
        "--deps-timeout",
        metavar="S",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help=f"the dependency phase's limit, within the run's (default {DEFAULT_TIMEOUT_S:g})",
    )


def deps_options_from(args: argparse.Namespace) -> DepsOptions:
    """The options for these flags.

    Raises:
        pydantic.ValidationError: a value the model refuses (the caller makes it one line).
    """
    return DepsOptions(
        mode=args.deps,
        index_url=args.deps_index_url,
        max_bytes=args.deps_max_bytes,
        timeout_s=args.deps_timeout,
    )
