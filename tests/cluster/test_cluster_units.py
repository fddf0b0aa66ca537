"""The cluster's pure parts, without Ray or Docker: addresses, payloads, slots, the
report, the ledger seam."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sandbox_agent.cluster import connect, local, nodes, payload
from sandbox_agent.cluster.node import (
    NodePreflight,
    RayStart,
    ray_start_argv,
    slot_resource,
    slot_resources,
)
from sandbox_agent.cluster.nodes import NodeInfo
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.cluster_report import ClusterReport, NodeReport, markdown
from sandbox_agent.evals.running.scheduler import RAY_NODE


def test_only_runtimes_whose_preflight_passed_get_slots() -> None:
    found = [
        NodePreflight(runtime="runc", ok=True),
        NodePreflight(runtime="runsc", ok=False, failed=["runtime"], detail="not registered"),
    ]
    assert slot_resources(found, 3) == {"sandbox-slot-runc": 3.0}
    assert slot_resources(found[1:], 3) == {}


def test_ray_start_keeps_to_the_nodes_address_and_turns_extras_off() -> None:
    head = ray_start_argv(
        RayStart(node_ip="127.0.0.2", port=6390, temp_dir=Path("/tmp/x"), slots=2),
        {slot_resource("runc"): 2.0},
    )
    assert "--head" in head
    assert "--node-ip-address=127.0.0.2" in head
    assert "--disable-usage-stats" in head
    assert "--include-dashboard=false" in head
    assert "--block" in head
    assert json.loads(next(a for a in head if a.startswith("--resources=")).partition("=")[2]) == {
        "sandbox-slot-runc": 2.0
    }
    worker = ray_start_argv(RayStart(node_ip="127.0.0.3", head_address="127.0.0.2:6390"), {})
    assert "--address=127.0.0.2:6390" in worker
    assert "--head" not in worker
    assert not any(a.startswith("--include-dashboard") for a in worker)


def test_addresses_resolve_to_where_the_driver_connects_from(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert connect.resolve("ray://10.0.0.1:10001") == connect.Target("ray://10.0.0.1:10001", None)
    assert connect.resolve("127.0.0.12:6379") == connect.Target("127.0.0.12:6379", "127.0.0.12")
    assert connect.resolve("10.0.0.1:6379") == connect.Target("10.0.0.1:6379", None)
    assert connect.resolve("auto") == connect.Target("auto", None)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.9:1234")
    assert connect.resolve("auto") == connect.Target("127.0.0.9:1234", "127.0.0.9")
    with pytest.raises(UsageError, match="--ray needs an address"):
        connect.resolve(" ")


def test_auto_refuses_a_recorded_cluster_that_is_gone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    gone = local.LocalCluster(
        address="127.0.0.2:1",
        client_address="ray://127.0.0.2:2",
        temp_dir=tmp_path,
        nodes=[
            local.NodeProcess(
                ip="127.0.0.2", pid=os.getpid(), start_time="0", head=True, log=tmp_path / "l"
            )
        ],
        runtimes=["runc"],
    )
    local.save(gone)
    assert local.load() == gone
    with pytest.raises(UsageError, match="make cluster-up"):
        connect.resolve("auto")


def test_a_folder_crosses_as_bytes_and_is_used_in_place_when_identical(tmp_path: Path) -> None:
    source = tmp_path / "repo"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "a.py").write_text("x = 1\n")
    (source / "README").write_text("hi\n")
    copy = payload.copy_of(source)
    assert payload.place(copy, tmp_path / "elsewhere") == source
    (source / "README").write_text("changed\n")
    placed = payload.place(copy, tmp_path / "elsewhere")
    assert placed == tmp_path / "elsewhere"
    assert (placed / "README").read_text() == "hi\n"
    assert (placed / "pkg" / "a.py").read_text() == "x = 1\n"


def test_an_escaping_archive_is_refused(tmp_path: Path) -> None:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = b"owned"
        info = tarfile.TarInfo("../outside.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    with pytest.raises(tarfile.FilterError):
        payload.unpack_folder(buffer.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "outside.txt").exists()
    with pytest.raises(UsageError, match="named"):
        payload.unpack_run_folder(payload.RunFolder(name="..", tar=b""), tmp_path)


def test_a_node_cannot_overwrite_another_runs_folder_or_send_a_bomb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SR-10 C1 (the review's M1): a node named its returned folder after another run's and
    # overwrote it on the driver; the driver bounded nothing of what it unpacked.
    import io
    import tarfile

    (tmp_path / "run" / "a").mkdir(parents=True)
    (tmp_path / "run" / "a" / "evidence.json").write_text("theirs")
    mine = payload.RunFolder(name="a", tar=payload.pack_folder(tmp_path / "run" / "a"))
    with pytest.raises(UsageError, match="which is taken"):
        payload.unpack_run_folder(mine, tmp_path / "run")
    assert (tmp_path / "run" / "a" / "evidence.json").read_text() == "theirs"
    monkeypatch.setattr(payload, "MAX_PACKED_BYTES", 1000)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in ("one", "two"):
            info = tarfile.TarInfo(name)
            info.size = 600
            archive.addfile(info, io.BytesIO(b"x" * 600))
    with pytest.raises(UsageError, match="over 1000"):
        payload.unpack_folder(buffer.getvalue(), tmp_path / "bomb")
    assert not (tmp_path / "bomb").exists()


def test_a_node_without_slots_says_why() -> None:
    failed = NodeInfo(
        node_id="a" * 56,
        ip="127.0.0.16",
        preflight=[NodePreflight(runtime="runc", ok=False, failed=["daemon"], detail="no")],
    )
    assert nodes._slot_problem(failed, "runc").startswith("preflight runc failed (daemon)")
    plain = NodeInfo(node_id="b" * 56, ip="127.0.0.17")
    assert "not started by 'sandbox-agent cluster node'" in nodes._slot_problem(plain, "runc")
    ready = NodeInfo(node_id="c" * 56, ip="127.0.0.18", slots={"runc": 2})
    assert nodes._slot_problem(ready, "runc") == ""
    assert ready.name == "127.0.0.18/cccccccccccc"


def test_the_node_rays_error_names_is_read() -> None:
    text = (
        "Task failed because the node it was running on is dead or unavailable. Node IP: "
        "127.0.0.15, node ID: e09cfd330aa79dfef47fe716a3791fb9ba48823bcdefcc8611e51db0. This"
    )
    found = RAY_NODE.search(text)
    assert found is not None
    assert (found["ip"], found["id"][:12]) == ("127.0.0.15", "e09cfd330aa7")


def test_the_cluster_section_of_the_markdown_report_is_inert() -> None:
    from sandbox_agent.evals.results.report import _row

    report = ClusterReport(
        address="127.0.0.2:1",
        nodes=[NodeReport(node="127.0.0.3/abc", used=False, problem="<b>|x</b>")],
        retry_lost=True,
        lost_runs=1,
        retried_runs=1,
    )
    lines = markdown(report, _row)
    table = "\n".join(lines)
    assert "## Cluster" in table
    assert "<b>" not in table
    assert "\\<b\\>\\|x" in table


def test_the_providers_reach_the_cluster_ledger_through_their_ledger_path(
    tmp_path: Path,
) -> None:
    from sandbox_agent.ledger.actor import ClusterLedger
    from sandbox_agent.ledger.opening import open_ledger
    from sandbox_agent.ledger.store import Ledger

    found = open_ledger("ray-actor:sandbox-agent/ledger-abc")
    assert isinstance(found, ClusterLedger)
    assert found.path == "ray-actor:sandbox-agent/ledger-abc"
    assert isinstance(open_ledger(str(tmp_path / "l.sqlite3")), Ledger)


class _FlakyRay:
    """Ray's ``init``/``shutdown`` as a head whose client server fails to start ``fails``
    times (seen on a busy machine: ``Starting Ray client server failed``)."""

    def __init__(self, fails: int, message: str) -> None:
        self.fails, self.message = fails, message
        self.inits = self.shutdowns = 0

    def init(self, **_: object) -> None:
        self.inits += 1
        if self.inits <= self.fails:
            raise ConnectionError(self.message)

    def shutdown(self) -> None:
        self.shutdowns += 1


STARTUP_FAILED = "Starting Ray client server failed. See ray_client_server_23000.err"


def test_ray_client_is_tried_again_when_the_heads_client_server_failed_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connect, "CLIENT_RETRY_WAIT_S", 0.0)
    ray = _FlakyRay(connect.CLIENT_ATTEMPTS - 1, STARTUP_FAILED)
    connect._init(ray, {}, client=True)
    assert (ray.inits, ray.shutdowns) == (connect.CLIENT_ATTEMPTS, connect.CLIENT_ATTEMPTS - 1)


def test_ray_client_gives_up_after_its_attempts_and_other_errors_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connect, "CLIENT_RETRY_WAIT_S", 0.0)
    ray = _FlakyRay(99, STARTUP_FAILED)
    with pytest.raises(ConnectionError):
        connect._init(ray, {}, client=True)
    assert ray.inits == connect.CLIENT_ATTEMPTS
    refused = _FlakyRay(99, "Connection refused")
    with pytest.raises(ConnectionError):
        connect._init(refused, {}, client=True)
    direct = _FlakyRay(99, STARTUP_FAILED)
    with pytest.raises(ConnectionError):
        connect._init(direct, {}, client=False)
    assert refused.inits == direct.inits == 1


def test_a_node_that_sends_back_a_record_of_another_run_is_refused(tmp_path: Path) -> None:
    # SR-10 C2 (the review's M1): the driver took whatever record a node sent for a run,
    # so a node could answer a run of one task with a (passing) record of another.
    from sandbox_agent.cluster.remote import Finished
    from sandbox_agent.evals.running.one_run import error_record
    from sandbox_agent.evals.running.options import EvalOptions, build_config
    from sandbox_agent.evals.running.scheduler import Attempt, ClusterOptions, Scheduler
    from sandbox_agent.evals.tasks.cases import EvalCase
    from sandbox_agent.evals.tasks.taskfile import HeldOut, Task

    def case(name: str) -> EvalCase:
        task = Task(id=name, version=1, kind="bug_fix", fixture="paginator", prompt="fix",
                    max_iterations=5, max_wall_seconds=30, expected_changes=("a.py",),
                    held_out=HeldOut(path=str(tmp_path)))  # fmt: skip
        return EvalCase(task=task, fixtures_dir=tmp_path, held_out_dir=tmp_path)

    asked, other = case("asked"), case("other")
    options = EvalOptions()
    scheduler = Scheduler(cases=[asked], options=options, cluster=ClusterOptions(address="x"),
                           address="x", nodes=[], progress=None, on_record=None)  # fmt: skip
    forged = error_record(other, 0, build_config(other, options, "r"), "x")
    with pytest.raises(UsageError, match="a record of other #0 for a run of asked #0"):
        scheduler._finished(
            Attempt(key=(0, 0), number=1),
            Finished(payload=forged.model_dump_json(), run_folder=None),
        )
    honest = error_record(asked, 0, build_config(asked, options, "r"), "x")
    kept = scheduler._finished(
        Attempt(key=(0, 0), number=1), Finished(payload=honest.model_dump_json(), run_folder=None)
    )
    assert kept.task_id == "asked"


@pytest.mark.xfail(
    strict=True,
    reason="SR-10 C3 (open, accepted: T-74): a worker node runs the controller and the judge "
    "of its runs and declares its own key, so it is trusted with their verdicts",
)
def test_a_node_cannot_forge_a_pass_for_the_run_it_executes(tmp_path: Path) -> None:
    from sandbox_agent.cluster.remote import Finished
    from sandbox_agent.evals.running.one_run import error_record
    from sandbox_agent.evals.running.options import EvalOptions, build_config
    from sandbox_agent.evals.running.scheduler import Attempt, ClusterOptions, Scheduler
    from sandbox_agent.evals.tasks.cases import EvalCase
    from sandbox_agent.evals.tasks.taskfile import HeldOut, Task

    task = Task(id="asked", version=1, kind="bug_fix", fixture="paginator", prompt="fix",
                max_iterations=5, max_wall_seconds=30, expected_changes=("a.py",),
                held_out=HeldOut(path=str(tmp_path)))  # fmt: skip
    asked = EvalCase(task=task, fixtures_dir=tmp_path, held_out_dir=tmp_path)
    options = EvalOptions()
    scheduler = Scheduler(cases=[asked], options=options, cluster=ClusterOptions(address="x"),
                           address="x", nodes=[], progress=None, on_record=None)  # fmt: skip
    forged = error_record(asked, 0, build_config(asked, options, "r"), "x")
    forged = forged.model_copy(update={"status": "SUCCEEDED", "passed": True, "error": None})
    sent = Finished(payload=forged.model_dump_json(), run_folder=None)
    assert scheduler._finished(Attempt(key=(0, 0), number=1), sent).passed is False
