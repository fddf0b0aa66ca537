"""A lost head ends ``eval --ray`` with a clear error, and what finished is kept (issue 19).

Its own small cluster (a head and one worker): the test kills the head.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cluster_harness import cli_in_background, report, wait_for

from sandbox_agent.cluster import local

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_lost_head_ends_the_eval_with_a_clear_error_and_keeps_what_finished(
    tmp_path: Path,
) -> None:
    cluster = local.up(head_ip="127.0.0.22", worker_ips=("127.0.0.23",), slots=2)
    results = tmp_path / "ray"
    so_far = results / "runs.jsonl"
    log = tmp_path / "eval.log"
    try:
        with cli_in_background(
            "eval", "--ray", cluster.address, "--provider", "scripted-slow", "--repeats", "2",
            "--results-dir", str(results), log=log,
        ) as driver:  # fmt: skip
            wait_for(
                lambda: so_far.exists() and len(so_far.read_text().splitlines()) >= 1 + 2,
                300,
                "two finished runs",
            )
            local.kill_node(cluster.nodes[0])
            began = time.monotonic()
            assert driver.wait(timeout=120) == 2, log.read_text()[-3000:]
            assert time.monotonic() - began < 60, "the driver took too long to notice"
    finally:
        nodes = list(cluster.nodes)
        local.down(cluster)
        assert [pid for node in nodes for pid in local.session_pids(node.pid)] == []
    output = log.read_text()
    assert f"the cluster's head at {cluster.address} was lost" in output
    found = report(results)
    kept = [json.loads(line)["record"] for line in so_far.read_text().splitlines()[1:]]
    assert found["cluster"]["error"].startswith("the cluster's head")
    assert found["cluster"]["unfinished"] > 0
    assert len(found["runs"]) == len(kept) >= 2
    assert found["summary"]["runs"] + found["cluster"]["unfinished"] == 20
    assert {(run["task_id"], run["repeat"]) for run in found["runs"]} == {
        (run["task_id"], run["repeat"]) for run in kept
    }
