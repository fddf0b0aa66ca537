"""The environment's wheels, fetched by us and measured before anything is unpacked.

uv unpacks a wheel into its cache as it installs it, so a 1 MB wheel that unpacks to
1 GiB was caught by the size limit only after it had been written (SR-12 D4). Here:

1. each pin's files are listed from the index (PEP 691 JSON, else PEP 503 HTML) and
   the best wheel for the runner's tags is chosen among those whose sha256 is pinned;
2. it is downloaded into a private folder, streamed under the size limit and the
   phase's clock, and its sha256 checked against the pin;
3. its zip central directory is read: the sum of every member's declared size, across
   all wheels, must fit ``--deps-max-bytes`` before uv is run at all.

uv then installs from these files only (``build._install``: ``--no-index
--find-links``); since 0.8.6 it refuses an archive whose local headers disagree with
its central directory, and the unpacked size is measured again after.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urldefrag, urljoin

import httpx
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

from sandbox_agent.deps.deadline import Deadline
from sandbox_agent.deps.failures import SDIST_HINT
from sandbox_agent.deps.pins import Pin
from sandbox_agent.deps.target import GLIBC, Target
from sandbox_agent.errors import DependencyError

PAGE_MAX_BYTES = 64 * 1024 * 1024
"""An index page larger than this is refused (PyPI's largest projects list ~10 MB)."""
REQUEST_TIMEOUT_S = 60.0
MAX_WHEEL_MEMBERS = 200_000
MiB = 1024 * 1024
JSON_SIMPLE = "application/vnd.pypi.simple.v1+json"
_WHEEL_NAME = re.compile(r"^[A-Za-z0-9._+!-]+\.whl$")


class IndexFile(NamedTuple):
    filename: str
    url: str
    sha256: str | None


class Fetched(NamedTuple):
    """The wheels of an environment, in a private folder, and what they unpack to."""

    folder: Path
    unpacked_bytes: int


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text).strip()))
            self._href = None


@cache
def target_tags(target: Target) -> tuple[Tag, ...]:
    """The wheel tags the runner image accepts, best first (CPython 3.11, manylinux)."""
    arch = target.platform.split("-", 1)[0]
    newest = int(GLIBC.split("_")[1])
    platforms = [f"manylinux_2_{minor}_{arch}" for minor in range(newest, 4, -1)]
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    for minor, alias in legacy.items():
        at = platforms.index(f"manylinux_2_{minor}_{arch}")
        platforms.insert(at + 1, f"{alias}_{arch}")
    python = tuple(int(part) for part in target.python_version.split(".")[:2])
    return (
        *cpython_tags(python, platforms=platforms),
        *compatible_tags(python, interpreter=f"cp{python[0]}{python[1]}", platforms=platforms),
    )


def _error(kind: str, message: str) -> DependencyError:
    return DependencyError(kind, message)


def _failed(url: str, error: httpx.HTTPError, deadline: Deadline) -> DependencyError:
    if isinstance(error, httpx.TimeoutException):
        deadline.left(0.0)  # out of phase time: the timeout error, with its flags
    return _error("index_unreachable", f"cannot reach the package index at {url}: {error}"[:300])


def list_files(
    client: httpx.Client, index_url: str, name: str, deadline: Deadline
) -> list[IndexFile]:
    """The files the index lists for project ``name`` (PEP 691 JSON, or PEP 503 HTML).

    Raises:
        DependencyError: ``not_found`` (no such project), ``index_unreachable``.
    """
    url = f"{index_url.rstrip('/')}/{name}/"
    headers = {"Accept": f"{JSON_SIMPLE}, text/html;q=0.1"}
    body = bytearray()
    try:
        with client.stream(
            "GET", url, headers=headers, timeout=deadline.left(REQUEST_TIMEOUT_S)
        ) as response:
            if response.status_code == 404:
                raise _error("not_found", f"{name} is not on the index {index_url}")
            if response.status_code != 200:
                raise _error(
                    "index_unreachable", f"the index answered {response.status_code}: {url}"
                )
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > PAGE_MAX_BYTES:
                    raise _error("index_unreachable", f"{url} is over {PAGE_MAX_BYTES} bytes")
                deadline.left(REQUEST_TIMEOUT_S)
            base = str(response.url)
            kind = response.headers.get("content-type", "")
    except httpx.HTTPError as error:
        raise _failed(url, error, deadline) from None
    if kind.startswith(JSON_SIMPLE):
        try:
            listed = json.loads(body)["files"]
            return [
                IndexFile(str(f["filename"]), urljoin(base, str(f["url"])),
                          (f.get("hashes") or {}).get("sha256"))
                for f in listed
            ]  # fmt: skip
        except (ValueError, KeyError, TypeError, AttributeError):
            raise _error("index_unreachable", f"the index page {url} is not PEP 691 JSON") from None
    parser = _Links()
    parser.feed(body.decode("utf-8", errors="replace"))
    files = []
    for href, text in parser.links:
        link, fragment = urldefrag(urljoin(base, href))
        digest = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
        files.append(IndexFile(text or link.rsplit("/", 1)[-1], link, digest))
    return files


def choose(pin: Pin, files: list[IndexFile], target: Target) -> IndexFile:
    """The wheel of ``pin`` with the best tag for ``target`` among its pinned files.

    Raises:
        DependencyError: ``no_wheel``: none fits the runner.
    """
    rank = {tag: at for at, tag in enumerate(target_tags(target))}
    best: tuple[int, IndexFile] | None = None
    other_hash = False
    for entry in files:
        if not entry.filename.endswith(".whl") or not _WHEEL_NAME.match(entry.filename):
            continue
        try:
            name, version, _build, tags = parse_wheel_filename(entry.filename)
        except InvalidWheelFilename:
            continue
        if name != canonicalize_name(pin.name) or version != Version(pin.version):
            continue
        score = min((rank[tag] for tag in tags if tag in rank), default=None)
        if score is None:
            continue
        if entry.sha256 is not None and entry.sha256.lower() not in pin.hashes:
            other_hash = True
        elif best is None or score < best[0]:
            best = (score, entry)
    if best is None and other_hash:
        raise _error(
            "hash", f"{pin.name}=={pin.version}: the index's wheels match none of the pinned hashes"
        )
    if best is None:
        raise _error(
            "no_wheel",
            f"{pin.name}=={pin.version}: no pinned wheel for CPython 3.11 on {target.platform}; "
            f"{SDIST_HINT}",
        )
    return best[1]


def _download(
    client: httpx.Client, pin: Pin, entry: IndexFile, into: Path, *, budget: int, deadline: Deadline
) -> Path:
    path = into / entry.filename
    digest = hashlib.sha256()
    written = 0
    try:
        with (
            client.stream("GET", entry.url, timeout=deadline.left(REQUEST_TIMEOUT_S)) as response,
            path.open("xb") as out,
        ):
            if response.status_code != 200:
                raise _error(
                    "index_unreachable",
                    f"{entry.filename}: the index answered {response.status_code}",
                )
            for chunk in response.iter_bytes():
                written += len(chunk)
                if written > budget:
                    raise _too_large(written, budget, "downloaded")
                deadline.left(REQUEST_TIMEOUT_S)
                digest.update(chunk)
                out.write(chunk)
    except httpx.HTTPError as error:
        raise _failed(entry.url, error, deadline) from None
    if digest.hexdigest() not in pin.hashes:
        raise _error(
            "hash", f"{entry.filename}: the downloaded file matches none of the pinned hashes"
        )
    return path


def declared_size(path: Path) -> int:
    """The sum of the member sizes ``path``'s zip central directory declares.

    Raises:
        DependencyError: ``no_wheel``: not a zip archive, or too many members.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise _error("no_wheel", f"{path.name} is not a readable wheel (zip archive)") from None
    if len(members) > MAX_WHEEL_MEMBERS:
        raise _error("no_wheel", f"{path.name} has more than {MAX_WHEEL_MEMBERS} members")
    return sum(member.file_size for member in members)


def _too_large(size: int, limit: int, how: str) -> DependencyError:
    return _error(
        "too_large",
        f"the environment is {size / MiB:.1f} MiB {how}, over the limit of "
        f"{limit / MiB:.1f} MiB (raise it with --deps-max-bytes BYTES)",
    )


def fetch_wheels(
    pins: list[Pin],
    *,
    index_url: str,
    target: Target,
    into: Path,
    max_bytes: int,
    deadline: Deadline,
) -> Fetched:
    """Download one wheel per pin into ``into`` (a new, private folder) and check that
    they unpack within ``max_bytes``, before anything is unpacked.

    Raises:
        DependencyError: ``too_large``, ``no_wheel``, ``hash``, ``not_found``,
            ``index_unreachable`` or ``timeout``.
    """
    into.mkdir(mode=0o700)
    unpacked = downloaded = 0
    with httpx.Client(follow_redirects=True) as client:
        for pin in pins:
            entry = choose(pin, list_files(client, index_url, pin.name, deadline), target)
            path = _download(
                client, pin, entry, into, budget=max_bytes - downloaded, deadline=deadline
            )
            downloaded += path.stat().st_size
            unpacked += declared_size(path)
            if unpacked > max_bytes:
                raise _too_large(unpacked, max_bytes, "unpacked (as its wheels declare)")
    return Fetched(into, unpacked)
