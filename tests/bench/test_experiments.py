"""The seed experiments run end to end at a tiny size, each on real 3-node ``brook
cluster``s: KIP-794's through the real ``brook producer-perf-test`` with one node slowed by
``brook cluster slow``, KIP-227's with Brook's consumer with and without fetch sessions,
KIP-951's with a leadership move, KIP-250's with a follower paused. Their figures are for
docs/experiments.md, not asserted here; what is asserted is that the pieces they are made of
measure what they claim to."""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rawclient import RawClient
from support import local_cluster

from bench import (
    kip227_experiment,
    kip250_experiment,
    kip794_experiment,
    kip794_switch_rule,
    kip951_experiment,
)
from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin
from brook.client.producer import Producer
from brook.protocol.api import ApiKey, request_class
from brook.protocol.build import build
from brook.protocol.framing import encode_kio, encode_request
from brook.protocol.records import build_simple_batch

RECORDS = 1000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One 3-node cluster for the tests below that do not need a fresh one."""
    with local_cluster(tmp_path_factory.mktemp("experiments") / "c", nodes=3) as cluster:
        yield cluster


# -- KIP-794 ----------------------------------------------------------------------------------


def answer_times(address: str, topic: str, count: int) -> list[float]:
    """Seconds from sending ``count`` pipelined acks=1 Produce requests on one connection to
    each answer."""
    body = encode_kio(
        build(
            request_class(ApiKey.PRODUCE, 9),
            {
                "transactional_id": None,
                "acks": 1,
                "timeout": 30000,
                "topic_data": [
                    {
                        "name": topic,
                        "partition_data": [{"index": 0, "records": build_simple_batch([b"r"])}],
                    }
                ],
            },
        )
    )
    with RawClient(address, timeout=30) as client:
        start = time.monotonic()
        client.send_bytes(
            b"".join(encode_request(ApiKey.PRODUCE, 9, i, "serial", body) for i in range(count))
        )
        times = []
        for _ in range(count):
            client.recv_frame()
            times.append(time.monotonic() - start)
    return times


def test_kip794_slow_node_answers_a_connections_produce_requests_one_after_another(
    cluster: LocalCluster,
) -> None:
    """The experiment's premise: like a Kafka broker sleeping in its request handler, a node
    slowed by ``brook cluster slow`` handles a connection's next request only once it has
    answered the previous one, so pipelined requests are answered a delay apart each."""
    delay_ms = 150
    node = cluster.brokers[0].node_id
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        kip794_experiment.create_topic(admin, "serial", {0: [node]})
        try:
            probe_ms = kip794_experiment.make_slow(cluster, admin, node, delay_ms)
            times = answer_times(cluster.node(node).broker_address, "serial", 3)
        finally:
            cluster.slow(node, produce_delay_ms=0)
    assert probe_ms >= delay_ms
    # Pipelined delays would answer all three about one delay after they were sent.
    assert times[0] >= delay_ms / 1000
    assert times[2] >= 3 * delay_ms / 1000, times


@pytest.mark.parametrize(("config", "rule"), [("default", "current"), ("uniform", "kip-2022")])
def test_kip794_run_parses_the_tools_output_per_node(
    config: str, rule: str, tmp_path: Path
) -> None:
    # Enough records for some 30 partition switches, so that every node gets some.
    row = kip794_experiment.run_configuration(1, config, RECORDS, tmp_path, 20, rule)
    assert row["records"] == RECORDS
    assert row["switch_rule"] == rule
    # The KIP's layout: partition 1 on the slow node, one partition per node.
    assert row["leaders"][kip794_experiment.SLOW_PARTITION] == row["slow_node"]
    assert sorted(row["leaders"].values()) == [1, 2, 3]
    assert row["probe_ms"] >= 20
    # The records of 512 bytes went somewhere, and only to the three brokers.
    assert set(row["node_bytes"]) == {0, 1, 2}
    assert {1, 2, 3} <= set(row["nodes"])
    assert sum(row["node_bytes"].values()) > RECORDS * 512
    assert sum(row["records_per_partition"].values()) == RECORDS
    label = kip794_experiment.CONFIGURATIONS[config].label
    assert f"| 1 | {label} | Brook" in kip794_experiment.report([row])
    png = tmp_path / "kip794.png"
    kip794_experiment.plot([row], png, "test")
    assert png.read_bytes().startswith(b"\x89PNG")


def test_kip794_model_of_the_two_switch_rules() -> None:
    rows = {
        rule: kip794_switch_rule.run_model(rule, False, 0, 2048, 6000)
        for rule in kip794_switch_rule.RULES
    }
    for row in rows.values():
        assert sum(row["record_share"].values()) == pytest.approx(1.0)
        assert all(row["requests"].values())
    # Deferring the switch while the slow node's batch waits keeps records on it longer.
    assert rows["current"]["record_share"][1] > rows["kip-2022"]["record_share"][1]


# -- KIP-227 ----------------------------------------------------------------------------------


def test_kip227_sessions_name_only_the_changed_partitions(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    brokers = kip227_experiment.Brokers.of(cluster)
    with Admin({"bootstrap.servers": brokers.bootstrap}) as admin:
        kip227_experiment.create_topics(admin, brokers, [200])
    # Three receiving partitions, one on each broker (partition p on the (p mod 3)-th).
    assert [p % 3 for p in kip227_experiment.hot_partitions(200, 3)] == [0, 1, 2]
    cell = kip227_experiment.run_cell(brokers, 200, 3, warmup=0.3, seconds=1.0)
    with_sessions, without = cell["sessions"], cell["sessionless"]
    assert with_sessions["fetches"] > 0 and without["fetches"] > 0
    assert with_sessions["incremental_exchanges"] > 0
    assert without["incremental_exchanges"] == 0
    # Each broker was fetched from, and a full fetch names the partitions it leads: the
    # pass-through kept the cluster's own leaders.
    led = {node: len(range(i, 200, 3)) for i, node in enumerate(sorted(brokers.addresses))}
    for node, figures in without["per_node"].items():
        assert figures["fetches"] > 0
        assert figures["request_partitions"] == led[node]
        assert figures["response_partitions"] == led[node]
    # Only the partitions receiving records come back (their high watermark moved).
    assert with_sessions["decoded"]["response_partitions"] < 10
    assert with_sessions["decoded"]["request_partitions"] < 10
    assert "| 200 | 3 | on |" in kip227_experiment.report([cell])
    png = tmp_path / "kip227.png"
    kip227_experiment.plot([cell], png, "test")
    assert png.read_bytes().startswith(b"\x89PNG")


# -- KIP-951 ----------------------------------------------------------------------------------


def test_kip951_runs_measure_latency_across_a_move_of_every_leader(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    # Followers do not replicate yet, so acks=all would never be answered: acks=1 here.
    args = argparse.Namespace(rate=400, seconds=12.0, acks="1", move="reassign")
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        runs = [
            kip951_experiment.run_one(cluster, admin, client, 1, args, tmp_path)
            for client in kip951_experiment.CLIENTS
        ]
    for run in runs:
        move = run["move"]
        # The move happened in the middle of the run, and moved every leader.
        assert move["moved"] == kip951_experiment.PARTITIONS
        assert all(move["after"][p] != leader for p, leader in move["before"].items())
        trace = run["trace"]
        assert trace["first_send_ms"] < 0 < trace["last_send_ms"]
        # Every record was acknowledged, and the tool's line and the trace agree on them.
        assert run["tool"]["records"] == run["records_asked"] == trace["records"]
        assert trace["failed"] == 0
        assert trace["p999_ms"] == run["tool"]["p999_ms"]
        assert sum(b[1] for b in trace["over_time"]) == trace["records"]
        assert run["partitions_used"] > 50
    by_client = {run["client"]: run for run in runs}
    assert by_client["brook-on"]["metrics"]["record-error-total"] == 0
    table = kip951_experiment.report(runs, kip951_experiment.setup_text(args))
    for label in kip951_experiment.CLIENTS.values():
        assert f"| {label} | 1 | 4,800 |" in table
    png = tmp_path / "latency.png"
    kip951_experiment.plot(runs, png, "test")
    assert png.read_bytes().startswith(b"\x89PNG")


def test_kip951_with_discovery_retries_go_straight_to_the_new_leader(
    cluster: LocalCluster,
) -> None:
    """The move is KIP-951's case: the old leader, still up, refuses with the new leader,
    and the producer sends its retries there (every Produce request is watched)."""
    topic = "kip951-retries"
    brokers = [n.node_id for n in cluster.brokers]
    sends: list[tuple[int, int, list[tuple[int, int]]]] = []
    config = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "acks": 1,
        "linger.ms": 0,
        "brook.leader.discovery.enable": True,
    }
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        kip951_experiment.create_topic(admin, topic, "reassign", brokers)
        with Producer(config) as producer:
            sender = producer._core.sender
            send_produce = sender._send_produce

            def watched(node: int, batches: list[Any], now: float) -> None:
                at = kip951_experiment.now_ms()
                sends.append((at, node, [(b.tp[1], b.attempts) for b in batches]))
                send_produce(node, batches, now)

            sender._send_produce = watched
            stop = threading.Event()
            sent = threading.Event()

            def produce() -> None:
                # Without pause, so that batches are in flight when the leaders move.
                while not stop.is_set():
                    producer.send(topic, b"r" * 100)
                    sent.set()

            thread = threading.Thread(target=produce, daemon=True)
            thread.start()
            assert sent.wait(30)
            move = kip951_experiment.move_leaders(cluster, admin, topic, "reassign")
            while not any(at > move.ended_ms + 1000 for at, _, _ in sends):
                assert thread.is_alive()
                stop.wait(0.05)
            stop.set()
            thread.join(30)
            producer.flush(60)
    assert move.moved == kip951_experiment.PARTITIONS
    retries = [
        (node, partition)
        for at, node, batches in sends
        if at >= move.started_ms
        for partition, attempts in batches
        if attempts > 0
    ]
    # The move caught batches on their way (refused by the old leaders), ...
    assert retries
    # ... and every retry went to the partition's new leader.
    assert all(node == move.after[partition] for node, partition in retries)


# -- KIP-250 ----------------------------------------------------------------------------------


def kip250_args(**changes: Any) -> argparse.Namespace:
    """30 s at 200 records/s with one stall of 2 s, 10 s in."""
    args = {
        "minutes": 0.5,
        "rate": 200,
        "stall_every": 20.0,
        "stall_seconds": 2.0,
        "fault": "pause",
        "lag_time_ms": kip250_experiment.LAG_TIME_MS,
        "keep_traces": None,
    }
    return argparse.Namespace(**(args | changes))


def test_kip250_runs_measure_latency_while_an_in_sync_follower_stalls(tmp_path: Path) -> None:
    args = kip250_args()
    runs = [
        kip250_experiment.run_configuration(name, args, tmp_path)
        for name in ("acks-all", "quorum-2")
    ]
    for run in runs:
        slow = run["roles"]["slow_follower"]
        # The stalled broker follows every partition and leads none, nor the metadata quorum.
        assert all(
            replicas[-1] == slow and slow not in replicas[:-1]
            for replicas in run["assignment"].values()
        )
        assert slow not in {
            leader for leaders in run["isr_samples"]["leader_sets"] for leader in leaders
        }
        assert all(c[0] != slow for c in run["isr_samples"]["controllers"])
        trace = run["trace"]
        # Every record acknowledged; the tool's line and the trace agree on them.
        assert run["tool"]["records"] == run["records_asked"] == trace["records"] == 6000
        assert trace["failed"] == 0
        assert trace["p999_ms"] == run["tool"]["p999_ms"]
        assert [m["minute"] for m in trace["per_minute"]] == [0]
        assert trace["per_minute"][0]["records"] == trace["records"]
        assert sum(second[1] for second in trace["per_second"]) == trace["records"]
        # One stall of the length asked, inside the run.
        ((start, end),) = trace["stalls_ms"]
        assert 0 < start < end < trace["duration_ms"]
        assert end - start >= 2000
        assert trace["sent_during_stalls"]["records"] > 0
        # The stalled follower stayed in the ISR: in every sample and in the metadata log.
        assert run["isr_samples"]["samples"] > 20
        assert run["isr_samples"]["samples_without_slow_follower"] == 0
        assert run["metadata"]["complete"]
        assert run["metadata"]["partition_changes"] == []
        assert run["metadata"]["slow_follower_fenced"] == []
        assert run["slow_follower_stayed_in_isr"]
    # acks=all waited for the stalled follower: a record sent as it stalled waited for it.
    assert runs[0]["trace"]["sent_during_stalls"]["max_ms"] >= 1500
    table = kip250_experiment.report(runs, kip250_experiment.setup_text(args))
    for run in runs:
        assert f"| {run['label']} | 6,000 | " in table
        assert f"| {run['label']} | {run['trace']['per_minute'][0]['p999_ms']} |" in table
    assert "1 x 2 s (pause) | yes (" in table
    assert "- Q=2's p99.9 at most 1/5 of acks=all's: " in table
    png = tmp_path / "p999.png"
    kip250_experiment.plot(runs, png, "test")
    assert png.read_bytes().startswith(b"\x89PNG")


def test_kip250_isr_checks_see_a_follower_leave(tmp_path: Path) -> None:
    """A stall longer than replica.lag.time.max.ms: the leaders drop the follower from their
    ISRs (it rejoins once caught up), and both of the experiment's checks say so."""
    args = kip250_args(lag_time_ms=1000, stall_seconds=4.0)
    run = kip250_experiment.run_configuration("acks-all", args, tmp_path)
    assert run["isr_samples"]["samples_without_slow_follower"] > 0
    assert run["metadata"]["slow_follower_removed"]
    assert not run["slow_follower_stayed_in_isr"]
    assert "| **no** (" in kip250_experiment.report([run], "test")
