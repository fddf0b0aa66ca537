"""PID 1's stdin and output through Docker's attach socket, opened before start.

The socket is the raw, hijacked connection under the SDK's HTTP response (we attach
before the container starts, so no payload byte can sit in the HTTP reader's buffer).
Reads wait at most ``poll_s``, so the caller checks cancellation and its deadline often.
The host writes two things: PID 1's config frame at start (``protocol.encode_config``),
and later the go byte (``protocol.GO``), after which it closes its sending side: with
``StdinOnce`` Docker then closes PID 1's stdin for good.
"""

from __future__ import annotations

import socket
from typing import Any

from sandbox_supervisor.protocol import GO, encode_config

RECV_BYTES = 65536
ATTACH_PARAMS = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1, "logs": 0}


class AttachedStream:
    """The attach connection of one container: bytes as they come, then EOF."""

    def __init__(self, api: Any, container_id: str) -> None:
        """Attach to ``container_id``'s stdout and stderr (multiplexed, non-TTY).

        Raises:
            docker.errors.APIError: the daemon refused the attach.
        """
        raw = api.attach_socket(container_id, params=ATTACH_PARAMS)
        self._holder = raw
        self._sock: socket.socket = getattr(raw, "_sock", raw)

    def recv(self, poll_s: float) -> bytes | None:
        """Up to 64 KiB: ``None`` when nothing came within ``poll_s``, ``b""`` at EOF."""
        self._sock.settimeout(poll_s)
        try:
            return self._sock.recv(RECV_BYTES)
        except TimeoutError:
            return None
        except OSError:
            return b""

    def send_config(self, config: str) -> bool:
        """Write PID 1's config frame; False if the connection is gone.

        Raises:
            ValueError: the config is longer than ``protocol.MAX_CONFIG_BYTES``.
        """
        frame = encode_config(config.encode("utf-8"))
        try:
            self._sock.sendall(frame)
        except OSError:
            return False
        return True

    def send_go(self) -> bool:
        """Write the go byte and close stdin; False if the connection is gone."""
        try:
            self._sock.sendall(GO)
        except OSError:
            return False
        return self.close_stdin()

    def close_stdin(self) -> bool:
        """Close the sending side (PID 1 reads EOF: it runs nothing); False if gone."""
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        try:
            self._sock.close()
        finally:
            close = getattr(self._holder, "close", None)
            if close is not None:
                close()
