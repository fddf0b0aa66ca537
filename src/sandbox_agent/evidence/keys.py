"""The run-signing key: Ed25519, generated at first use, readable by its owner only.

The private key lives in ``state_home()/signing-key.pem`` (PKCS#8 PEM, mode 0600), the
public key beside it in ``signing-key.pub`` (SubjectPublicKeyInfo PEM). A key file that
another user owns, or that group or others may read, is refused: whoever can read it can
forge evidence.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from sandbox_agent.errors import SetupError, UsageError
from sandbox_agent.evidence.chain import read_bounded
from sandbox_agent.settings import state_home

PRIVATE_KEY_FILE = "signing-key.pem"
PUBLIC_KEY_FILE = "signing-key.pub"
PRIVATE_KEY_MODE = 0o600
STATE_DIR_MODE = 0o700
_PASS_THE_SIGNERS = f"pass the signer's {PUBLIC_KEY_FILE}"


def private_key_path(home: Path | None = None) -> Path:
    """Where the private signing key is kept."""
    return (home or state_home()) / PRIVATE_KEY_FILE


def public_key_path(home: Path | None = None) -> Path:
    """Where the public half is kept, for anyone who verifies this host's runs."""
    return (home or state_home()) / PUBLIC_KEY_FILE


def public_key_bytes(key: Ed25519PublicKey) -> bytes:
    """The 32 raw bytes of a public key."""
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def fingerprint(key: Ed25519PublicKey) -> str:
    """``sha256:<hex>`` of the raw public key: how evidence names its signer."""
    return "sha256:" + hashlib.sha256(public_key_bytes(key)).hexdigest()


def _read_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise SetupError(f"cannot open the signing key {path}: {error.strerror}") from error
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SetupError(f"the signing key {path} is not a regular file; remove it")
        if info.st_uid != os.geteuid():
            raise SetupError(
                f"the signing key {path} belongs to uid {info.st_uid}, not to you; "
                "remove it or run as its owner"
            )
        if info.st_mode & 0o077:
            raise SetupError(
                f"the signing key {path} has mode {stat.S_IMODE(info.st_mode):o}; "
                f"others may read it: run 'chmod 600 {path}' (or remove it to make a new key)"
            )
        data = handle.read()
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except ValueError as error:
        raise SetupError(f"the signing key {path} is not a PEM private key; remove it") from error
    if not isinstance(key, Ed25519PrivateKey):
        raise SetupError(f"the signing key {path} is not an Ed25519 key; remove it")
    return key


def _temporary_beside(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")


def _publish_exclusively(path: Path, data: bytes, mode: int) -> bool:
    """Write ``data`` to ``path`` only if it does not exist, never exposing a partial file.

    The bytes go to a private temporary file (O_EXCL) first, then ``link`` publishes it:
    a concurrent first use sees either no key or a whole one. Returns False when another
    process published first.
    """
    temporary = _temporary_beside(path)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temporary, path)
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return True


def _write_public_key(key: Ed25519PublicKey, path: Path) -> None:
    data = key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with contextlib.suppress(FileNotFoundError):
        if path.read_bytes() == data:
            return
    temporary = _temporary_beside(path)
    temporary.write_bytes(data)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


def load_or_create_signing_key(home: Path | None = None) -> Ed25519PrivateKey:
    """This host's signing key, generated (mode 0600) on first use.

    Args:
        home: the state folder; ``state_home()`` when None.

    Raises:
        SetupError: the key file is not a regular file, belongs to another user, may be
            read by group or others, or is not an Ed25519 PEM key.
    """
    folder = home or state_home()
    folder.mkdir(parents=True, exist_ok=True, mode=STATE_DIR_MODE)
    path = private_key_path(folder)
    if not path.exists() and not path.is_symlink():
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        _publish_exclusively(path, pem, PRIVATE_KEY_MODE)
    key = _read_private_key(path)
    _write_public_key(key.public_key(), public_key_path(folder))
    return key


MAX_PUBLIC_KEY_BYTES = 4096
"""A public key file over this size is refused unread (a PEM Ed25519 key is 113 bytes)."""


def load_public_key(path: Path) -> Ed25519PublicKey:
    """Read a public key: PEM (``signing-key.pub``) or 32 raw bytes.

    Raises:
        UsageError: the file cannot be read or holds no Ed25519 public key.
    """
    try:
        # A regular file of a key's size: a FIFO hung the read, a device never ended it
        # (SR-11 R12).
        data = read_bounded(path, MAX_PUBLIC_KEY_BYTES)
    except OSError as error:
        raise UsageError(
            f"cannot read the public key {path}: {error.strerror}; {_PASS_THE_SIGNERS}"
        ) from error
    if len(data) == 32:
        return Ed25519PublicKey.from_public_bytes(data)
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as error:
        raise UsageError(f"{path} holds no PEM public key; {_PASS_THE_SIGNERS}") from error
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError(f"{path} is not an Ed25519 public key; {_PASS_THE_SIGNERS}")
    return key
