"""sandbox_agent.ports: a port for a server we start is chosen where no outgoing connection
or other port-0 bind can take it before the server binds it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_agent import ports


def test_the_port_is_free_and_below_the_ephemeral_range() -> None:
    low = int(ports.EPHEMERAL_RANGE_FILE.read_text().split()[0])
    for _ in range(20):
        port = ports.free_port("127.0.0.1")
        assert ports.FIXED_PORT_FLOOR <= port < low
        assert ports.bindable("127.0.0.1", port)


@pytest.fixture
def taken() -> Iterator[int]:
    """A port a listener holds for the test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def test_a_held_port_is_never_chosen(taken: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    assert not ports.bindable("127.0.0.1", taken)
    for _ in range(20):
        assert ports.free_port("127.0.0.1", candidates=[taken, free]) == free


def test_no_room_below_the_ephemeral_range_falls_back_to_the_kernels_choice(
    tmp_path: Path,
) -> None:
    wide = tmp_path / "ip_local_port_range"
    wide.write_text("1024\t65535\n")
    assert len(ports.fixed_candidates(wide)) == 0
    narrow = tmp_path / "narrow"
    narrow.write_text("32768\t60999\n")
    assert ports.fixed_candidates(narrow) == range(ports.FIXED_PORT_FLOOR, 32768)
    assert len(ports.fixed_candidates(tmp_path / "missing")) == 0
    port = ports.free_port("127.0.0.1", candidates=[])
    assert ports.bindable("127.0.0.1", port)


def test_every_candidate_held_falls_back_to_the_kernels_choice(taken: int) -> None:
    port = ports.free_port("127.0.0.1", candidates=[taken])
    assert port != taken
    assert ports.bindable("127.0.0.1", port)


def test_choosing_a_port_leaves_a_seeded_random_sequence_alone() -> None:
    import random

    random.seed(7)
    expected = [random.random() for _ in range(3)]
    random.seed(7)
    ports.free_port("127.0.0.1")
    assert [random.random() for _ in range(3)] == expected
