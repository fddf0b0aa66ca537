"""Pins: the only text that reaches uv, rebuilt from parsed values and checked again.

uv reads a requirements file as commands as well as data: an option line
(``--no-binary``, ``--find-links``, ``--extra-index-url``) or a direct URL inside the
file overrides what its command line says, and runs a build or contacts any host
(SR-12 D1). So nothing a repository wrote is ever passed on as text:

- a pin is a PEP 503 name, a ``packaging`` ``Version``, an optional ``Marker`` and
  sha256 digests (``^[0-9a-f]{64}$``); its line is rendered from those values;
- a requirement for ``uv pip compile`` is ``str(Requirement)`` of a parsed requirement
  by name, and must be one line of a safe alphabet;
- every resolution text is checked line by line (``check_resolution``) when it is made,
  when it is read back from the store and just before it is installed.

Markers are limited to an alphabet with no ``$`` (uv expands variables), ``#``
(a comment), ``\\``, ``/``, ``:``, ``@`` (paths and URLs) and no ``--`` (an option):
``packaging`` decodes escapes inside a marker's quoted strings, newlines included.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from sandbox_agent.errors import DependencyError

NAME = re.compile(r"^([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])$")
"""PEP 508's name (PEP 503 normalises it)."""
SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SAFE_MARKER = re.compile(r"^[A-Za-z0-9_.*+!=<>~()'\" ,-]+$")
_SAFE_REQUIREMENT = re.compile(r"^[A-Za-z0-9_.*+!=<>~()'\" ,;\[\]-]+$")
_LINE = re.compile(
    r"^(?P<name>[a-z0-9]+(?:-[a-z0-9]+)*)==(?P<version>[A-Za-z0-9.+!_-]+)"
    r"(?: ; (?P<marker>[^\n]+?))?(?P<hashes>(?: --hash=sha256:[0-9a-f]{64})+)$"
)


class Pin(NamedTuple):
    """One package, exactly: what a resolution line says and nothing more."""

    name: str
    """PEP 503 normalised."""
    version: str
    """``str(Version(...))``: normalised."""
    hashes: tuple[str, ...]
    """sha256 hex digests, sorted, unique."""
    marker: str | None = None

    def line(self) -> str:
        spec = f"{self.name}=={self.version}" + (f" ; {self.marker}" if self.marker else "")
        return " ".join([spec, *(f"--hash=sha256:{digest}" for digest in self.hashes)])


def _error(where: str, message: str) -> DependencyError:
    return DependencyError("declaration", f"{where}: {message}")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def safe_marker(text: str, where: str) -> str:
    """``text`` parsed as a PEP 508 marker and rendered again, within the safe alphabet.

    Raises:
        DependencyError: ``declaration``: not a marker, or a character or ``--`` that a
            requirements file would read as more than a marker.
    """
    try:
        rendered = str(Marker(text))
    except (InvalidMarker, ValueError, RecursionError):
        raise _error(where, f"marker {_shown(text)} is not a PEP 508 marker") from None
    if not _SAFE_MARKER.match(rendered) or "--" in rendered or " -" in rendered:
        raise _error(where, f"marker {_shown(text)} has characters a marker does not need")
    return rendered


def make_pin(
    name: object,
    version: object,
    hashes: object,
    *,
    where: str,
    marker: object = None,
) -> Pin:
    """A pin from untrusted values (a lock file, uv's output, a stored resolution).

    Raises:
        DependencyError: ``declaration``: a value that is not what its field must be.
    """
    if not isinstance(name, str) or not NAME.match(name):
        raise _error(where, f"package name {_shown(name)} is not a PEP 508 name")
    if not isinstance(version, str):
        raise _error(where, f"{name}: version {_shown(version)} is not a string")
    try:
        parsed = Version(version)
    except ValueError:  # InvalidVersion, and integers past Python's digit limit
        raise _error(where, f"{name}: version {_shown(version)} is not a version") from None
    if not isinstance(hashes, (list, tuple)) or not hashes:
        raise _error(where, f"{name}: no sha256 hashes")
    for digest in hashes:
        if not isinstance(digest, str) or not SHA256.match(digest):
            raise _error(where, f"{name}: hash {_shown(digest)} is not 64 lowercase hex digits")
    if marker is not None and not isinstance(marker, str):
        raise _error(where, f"{name}: marker {_shown(marker)} is not a string")
    return Pin(
        name=str(canonicalize_name(name)),
        version=str(parsed),
        hashes=tuple(sorted(set(hashes))),
        marker=safe_marker(marker, where) if marker else None,
    )


def render(pins: list[Pin]) -> str:
    """The resolution text of ``pins``: one line each, sorted, checked."""
    text = "".join(f"{line}\n" for line in sorted(pin.line() for pin in pins))
    check_resolution(text, "resolution")
    return text


def check_resolution(text: str, where: str) -> list[Pin]:
    """Every line of ``text`` is ``name==version[ ; marker] --hash=sha256:...``: nothing
    else (no option line, URL, path, comment, continuation or blank line).

    Raises:
        DependencyError: ``declaration``: the first line that is anything else.
    """
    pins = []
    for number, line in enumerate(text.split("\n")[:-1] if text else [], start=1):
        here = f"{where} line {number}"
        match = _LINE.match(line)
        if match is None:
            raise _error(here, f"{_shown(line)} is not 'name==version --hash=sha256:...'")
        hashes = re.findall(r"[0-9a-f]{64}", match["hashes"])
        pin = make_pin(match["name"], match["version"], hashes, where=here, marker=match["marker"])
        if pin.line() != line:
            raise _error(here, f"{_shown(line)} is not in its one normal form")
        pins.append(pin)
    if text and not text.endswith("\n"):
        raise _error(where, "does not end with a newline")
    return pins


def safe_requirement(requirement: Requirement, where: str) -> str:
    """A requirement by name as one line for ``uv pip compile``, or a one-line error.

    Raises:
        DependencyError: ``declaration``: a URL, or text a requirements file would read
            as more than one requirement.
    """
    text = str(requirement)
    if requirement.url:
        raise _error(where, f"'{requirement.name} @ ...' is a direct URL: only names")
    if requirement.marker is not None:
        safe_marker(str(requirement.marker), where)
    if not _SAFE_REQUIREMENT.match(text) or "--" in text or " -" in text:
        raise _error(where, f"{_shown(text)} has characters a requirement does not need")
    try:
        if str(Requirement(text)) != text:
            raise _error(where, f"{_shown(text)} does not read back as itself")
    except InvalidRequirement:
        raise _error(where, f"{_shown(text)} does not read back as a requirement") from None
    return text
