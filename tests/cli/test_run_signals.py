"""SIGINT and SIGTERM cancel a run whichever of its threads the kernel hands them to
(``commands.signals``). CI once saw a SIGTERM wait out the model request's 120 s: a
Python handler runs only in the main thread, at its next bytecode, and a signal taken by
another thread does not wake a main thread blocked in a read."""

from __future__ import annotations

import signal
import threading

import pytest

from sandbox_agent.commands.signals import cancelled_by_signals
from sandbox_agent.sandbox.base import CancelToken

WAIT_S = 5.0


def _to_another_thread(sig: signal.Signals) -> None:
    """Send ``sig`` to a thread other than the main one, while the main thread waits."""
    other = threading.Thread(target=threading.Event().wait, args=(WAIT_S,), daemon=True)
    other.start()
    assert other.ident is not None
    signal.pthread_kill(other.ident, sig)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_taken_by_another_thread_cancels_while_the_main_thread_blocks(
    sig: signal.Signals,
) -> None:
    cancel = CancelToken()
    heard: list[tuple[signal.Signals, int]] = []
    with cancelled_by_signals(cancel, lambda s, n: heard.append((s, n))) as received:
        _to_another_thread(sig)
        # The main thread blocks on a lock, as it blocks in a read: only the listener,
        # not a Python handler, can end this wait before its time-out.
        assert cancel.wait(WAIT_S), "the cancel waited for the main thread to wake"
    assert received == [sig]
    assert heard == [(sig, 1)]


def test_each_signal_is_counted_in_order_and_told_with_its_count() -> None:
    cancel = CancelToken()
    heard: list[tuple[signal.Signals, int]] = []
    both = threading.Event()

    def on_signal(sig: signal.Signals, count: int) -> None:
        heard.append((sig, count))
        if count == 2:
            both.set()

    with cancelled_by_signals(cancel, on_signal) as received:
        signal.raise_signal(signal.SIGTERM)
        assert cancel.wait(WAIT_S)
        signal.raise_signal(signal.SIGINT)
        assert both.wait(WAIT_S)
    assert received == [signal.SIGTERM, signal.SIGINT]
    assert heard == [(signal.SIGTERM, 1), (signal.SIGINT, 2)]


def test_the_previous_handlers_and_wakeup_fd_come_back() -> None:
    def mine(signum: int, frame: object) -> None: ...

    before = signal.signal(signal.SIGTERM, mine)
    try:
        with cancelled_by_signals(CancelToken(), lambda s, n: None):
            assert signal.getsignal(signal.SIGTERM) is not mine
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.set_wakeup_fd(-1) == -1
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_signal_at_either_edge_of_the_block_is_never_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Entering, the wakeup descriptor is set before the handlers; leaving, the handlers
    go back first: a signal between the two steps meets the previous handler, never a
    do-nothing one with no byte written (a review found both gaps)."""
    seen: list[int] = []
    real = signal.set_wakeup_fd

    def signal_then_set(fd: int, **kwargs: bool) -> int:
        signal.raise_signal(signal.SIGTERM)  # just before each change of the descriptor
        return real(fd, **kwargs)

    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    monkeypatch.setattr(signal, "set_wakeup_fd", signal_then_set)
    try:
        with cancelled_by_signals(CancelToken(), lambda s, n: None) as received:
            assert seen == [signal.SIGTERM]  # entering: the previous handler had it
        assert seen == [signal.SIGTERM, signal.SIGTERM]  # leaving: so had it again
        assert received in ([], [signal.SIGTERM])  # its byte may reach the listener too
    finally:
        monkeypatch.undo()
        signal.signal(signal.SIGTERM, before)


def test_off_the_main_thread_it_refuses_and_leaves_nothing() -> None:
    errors: list[BaseException] = []

    def enter() -> None:
        try:
            with cancelled_by_signals(CancelToken(), lambda s, n: None):
                pass
        except ValueError as error:
            errors.append(error)

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join(WAIT_S)
    assert [str(e) for e in errors] == ["cancelled_by_signals: call it from the main thread"]
    assert not [t for t in threading.enumerate() if t.name == "signal-listener"]
