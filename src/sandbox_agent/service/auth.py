"""The bearer token: made once into a 0600 file, compared in constant time."""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path
from typing import NamedTuple

from sandbox_agent.errors import SetupError

TOKEN_BYTES = 32
MIN_TOKEN_CHARS = 16


class TokenFile(NamedTuple):
    token: str
    created: bool
    """True when this call generated the token (the caller prints it, once)."""


def load_or_create_token(path: Path) -> TokenFile:
    """Read the token at ``path``, or generate one into a new file readable by its owner only.

    Raises:
        SetupError: the file is not a regular file, is readable by others, or holds no token.
    """
    try:
        return TokenFile(_read(path), created=False)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another server made it between our read and our create
        return TokenFile(_read(path), created=False)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(token + "\n")
    return TokenFile(token, created=True)


def _read(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "r", encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SetupError(f"token file {path} is not a regular file: give another --token-file")
        if info.st_mode & 0o077:
            raise SetupError(f"token file {path} is readable by others: run 'chmod 600 {path}'")
        token = handle.read().strip()
    if len(token) < MIN_TOKEN_CHARS or any(char.isspace() for char in token):
        raise SetupError(
            f"token file {path} holds no usable token (one line of at least "
            f"{MIN_TOKEN_CHARS} characters): delete it to have a new one made"
        )
    return token


def token_matches(expected: str, authorization: str | None) -> bool:
    """True when ``authorization`` is ``Bearer <expected>``, compared in constant time."""
    if not authorization:
        return False
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(expected.encode(), given.strip().encode())
