"""``brook transactions`` on a real 3-node ``brook cluster``: a live transaction of confluent-
kafka's producer listed and described with the broker that coordinates it; a hanging
transaction on an RF-3 partition described on a follower (``--broker-id``: every replica keeps
the producer state, as Kafka's answer DescribeProducers from any replica), found by
``find-hanging`` by topic and by a follower's id, then aborted through the leader so the last
stable offset moves on and confluent-kafka's read_committed consumer sees what follows; and
after kill -9 of the partition's leader, the same found and aborted on the new leader."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import confluent_kafka
import pytest
from loss_checker import wait_fully_replicated
from quorum_support import FAST, wait_for
from rawclient import RawClient, produce
from support import local_cluster
from txn_support import READ_COMMITTED, UNVERIFIED, TxnProducer, latest, read_to_end

from brook.cli.main import main
from brook.client.admin import Admin, NewTopic
from brook.protocol.records import build_simple_batch

Tool = Callable[..., tuple[int, str, str]]


@pytest.fixture
def tool(capsys: pytest.CaptureFixture[str]) -> Tool:
    def run(bootstrap: str, *args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main(["transactions", "--bootstrap-server", bootstrap, *args])
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def _rows(out: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("\t")[:-1]] for line in out.split("\n")[1:] if line]


def _read_committed(bootstrap: str, topic: str) -> list[bytes]:
    return [m.value() for m in read_to_end(bootstrap, topic)]


def test_hanging_transaction_on_a_cluster(tmp_path: Path, tool: Tool) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides={**FAST, **UNVERIFIED}) as cluster:
        bootstrap = cluster.bootstrap_servers
        topic, live_topic = f"hang-{uuid.uuid4().hex[:6]}", f"live-{uuid.uuid4().hex[:6]}"
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics(
                [
                    NewTopic(topic, 1, 3, configs={"min.insync.replicas": "2"}),
                    NewTopic(live_topic, 1, 3),
                ]
            )
            wait_fully_replicated(admin, topic)
            leader = int(admin.describe_topics([topic])[topic].partitions[0].leader)
        follower = next(n for n in (1, 2, 3) if n != leader)

        # A live transaction: listed and described with its coordinator.
        tid = f"app-{uuid.uuid4().hex[:6]}"
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": tid}
        )
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce(live_topic, b"v", partition=0)
        producer.flush(30)
        code, out, err = tool(bootstrap, "describe", "--transactional-id", tid)
        assert (code, err) == (0, ""), err
        (described,) = _rows(out)
        coordinator = described[0]
        assert described[1:2] + described[4:5] + described[8:] == [
            tid,
            "Ongoing",
            f"{live_topic}-0",
        ]
        code, out, err = tool(bootstrap, "list")
        assert (code, err) == (0, "")
        assert [tid, coordinator, described[2], "Ongoing"] in _rows(out)

        # A hanging transaction, then records read_committed consumers cannot reach.
        with RawClient(cluster.node(leader).broker_address) as c:
            hanging = TxnProducer(c, topic)
            assert hanging.send(b"stuck") == (0, 0)
            for i in range(3):
                batch = build_simple_batch([f"after-{i}".encode()])
                assert (
                    produce(c, topic, 0, batch).responses[0].partition_responses[0].error_code == 0
                )
            assert latest(c, topic, READ_COMMITTED) == 0

        expected = [str(hanging.pid), str(hanging.epoch), "-1"]

        def on_follower() -> list[list[str]] | None:
            code, out, err = tool(
                bootstrap,
                "describe-producers",
                *("--topic", topic, "--partition", "0", "--broker-id", str(follower)),
            )
            assert (code, err) == (0, ""), err
            rows = _rows(out)
            return rows if rows and rows[0][5] == "0" else None

        (row,) = wait_for("the follower's producer state", on_follower, timeout=30)
        assert row[:3] == expected

        for scope in (["--topic", topic], ["--broker-id", str(follower)]):
            code, out, err = tool(
                bootstrap, "find-hanging", *scope, "--max-transaction-timeout", "0"
            )
            assert (code, err) == (0, ""), err
            found = [r for r in _rows(out) if r[0] in (topic, live_topic)]
            assert [r[:6] for r in found] == [[topic, "0", *expected, "0"]], (scope, out)

        code, out, err = tool(
            bootstrap, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0"
        )
        assert (code, out, err) == (0, "", "")
        assert _read_committed(bootstrap, topic) == [b"after-0", b"after-1", b"after-2"]
        code, out, err = tool(
            bootstrap, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"
        )
        assert (code, err, _rows(out)) == (0, "", [])
        producer.abort_transaction(30)


def test_a_hanging_transaction_outlives_its_leader_and_is_aborted_on_the_new_one(
    tmp_path: Path, tool: Tool
) -> None:
    """kill -9 of the partition's leader: the new leader has the open transaction in its
    producer state, find-hanging reports it there, and abort writes the marker there."""
    with local_cluster(tmp_path / "c", nodes=3, overrides={**FAST, **UNVERIFIED}) as cluster:
        topic = f"hang-{uuid.uuid4().hex[:6]}"
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(topic, 1, 3, configs={"min.insync.replicas": "2"})])
            wait_fully_replicated(admin, topic)
            leader = int(admin.describe_topics([topic])[topic].partitions[0].leader)
        with RawClient(cluster.node(leader).broker_address) as c:
            hanging = TxnProducer(c, topic)
            assert hanging.send(b"stuck") == (0, 0)  # acks=all: on the ISR
            batch = build_simple_batch([b"after"])
            assert produce(c, topic, 0, batch).responses[0].partition_responses[0].error_code == 0

        cluster.kill(leader)
        survivors = ",".join(cluster.node(n).broker_address for n in (1, 2, 3) if n != leader)
        with Admin({"bootstrap.servers": survivors}) as admin:

            def new_leader() -> int | None:
                n = int(admin.describe_topics([topic])[topic].partitions[0].leader)
                return n if n not in (-1, leader) else None

            elected = wait_for("a new leader", new_leader, timeout=60)

        def found() -> list[list[str]] | None:
            code, out, err = tool(
                survivors, "find-hanging", "--topic", topic, "--max-transaction-timeout", "0"
            )
            assert (code, err) == (0, ""), err
            return _rows(out) or None

        (row,) = wait_for("the hanging transaction on the new leader", found, timeout=60)
        assert row[:6] == [topic, "0", str(hanging.pid), str(hanging.epoch), "-1", "0"]
        code, out, err = tool(survivors, "describe-producers", "--topic", topic, "--partition", "0")
        assert (code, err) == (0, "") and _rows(out)[0][5] == "0"

        code, out, err = tool(
            survivors, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0"
        )
        assert (code, out, err) == (0, "", "")
        with RawClient(cluster.node(elected).broker_address) as c:
            assert latest(c, topic, READ_COMMITTED) == 3  # past the marker at offset 2
        assert _read_committed(survivors, topic) == [b"after"]
