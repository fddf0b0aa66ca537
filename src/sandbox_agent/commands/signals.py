"""SIGINT and SIGTERM that cancel a run, heard whichever thread the kernel hands them to.

A signal sent to a process goes to any one of its threads that does not block it.
CPython runs a Python handler in the main thread only, at that thread's next bytecode:
when the signal lands on another thread (the request watcher, the baseline's run, a
pre-start), the main thread stays blocked in its read of the model's answer, and the
handler runs only when that read ends by itself (CI saw a SIGTERM wait out the request's
120 s). A handler that sets a ``threading.Event`` in the main thread can also deadlock on
the Event's own lock, should the main thread hold it at that instant.

So the C-level handler's wakeup file descriptor (``signal.set_wakeup_fd``), which it
writes the signal's number to from whichever thread took the signal, is read here by a
listener thread, which cancels at once. The Python-level handler only stands in for the
default one (``KeyboardInterrupt``; death by SIGTERM): it does nothing.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from sandbox_agent.sandbox.base import CancelToken

SIGNALS = (signal.SIGINT, signal.SIGTERM)
LISTENER_JOIN_S = 5.0
"""How long the end of the block waits for the listener (it ends once its socket closes)."""


@contextlib.contextmanager
def cancelled_by_signals(
    cancel: CancelToken, on_signal: Callable[[signal.Signals, int], None]
) -> Iterator[list[int]]:
    """While inside, SIGINT and SIGTERM cancel ``cancel``; yields the signals' numbers in
    the order they came, filled in as they come.

    ``on_signal(signal, count)`` is told of each, ``count`` from 1, in the listener
    thread, after the cancel. Call from the main thread (Python's own rule for signal
    handlers); the previous handlers and wakeup descriptor are restored on the way out.
    """
    if threading.current_thread() is not threading.main_thread():
        raise ValueError("cancelled_by_signals: call it from the main thread")
    received: list[int] = []

    def listen(reader: socket.socket) -> None:
        while data := reader.recv(64):  # b"" once the writer is closed
            for number in data:
                if number not in SIGNALS:  # another handler's, written to the same fd
                    continue
                cancel.cancel()
                received.append(number)
                on_signal(signal.Signals(number), len(received))

    reader, writer = socket.socketpair()
    listener = threading.Thread(target=listen, args=(reader,), name="signal-listener")
    listener.daemon = True
    try:
        writer.setblocking(False)  # set_wakeup_fd's rule: the handler never blocks on it
        listener.start()
        # The descriptor first, the handlers after, and back in the reverse order: a
        # signal between the two steps meets the previous handler (the default: it still
        # interrupts or ends the process), never a do-nothing handler with no byte written.
        old_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        try:
            previous = {sig: signal.signal(sig, _heard_by_the_listener) for sig in SIGNALS}
            try:
                yield received
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        finally:
            signal.set_wakeup_fd(old_fd)
    finally:
        writer.close()
        if listener.is_alive():
            listener.join(LISTENER_JOIN_S)
        reader.close()


def _heard_by_the_listener(signum: int, frame: FrameType | None) -> None:
    """Replaces the default handler; the listener thread does the work."""
