"""A consumer group outlives its coordinator's broker on a real 3-node ``brook cluster`` with
the cluster's own ``__consumer_offsets`` (three replicas): once the group's offsets are
committed, kill -9 of the broker FindCoordinator names moves the coordinator to the new
leader of the group's ``__consumer_offsets`` partition, every committed offset is still
there (admin and consumer both read it), and a consumer of the group resumes from them."""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer
from confluent_kafka import TopicPartition as CKTP
from loss_checker import wait_fully_replicated
from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster

from brook import Consumer
from brook.broker.group.store import partition_for
from brook.client.admin import Admin, NewTopic
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

PARTITIONS = 3
RECORDS = 300  # record n goes to partition n % PARTITIONS


def _find_coordinator(bootstrap: str, group: str) -> tuple[int, int]:
    """(error code, node id) FindCoordinator answers through ``bootstrap``."""
    with RawClient(bootstrap) as client:
        resp = client.request(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]}
        )
    (coordinator,) = resp.coordinators
    return int(coordinator.error_code), int(coordinator.node_id)


def _consume_and_commit(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    """A member of ``group`` reads records and commits offsets 10, 20 and 30 of partitions
    0, 1 and 2; partition -> committed offset, as the consumer reads them back from the
    coordinator."""
    consumer = CKConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        wait_for(
            "records read",
            lambda: any(m.error() is None for m in consumer.consume(100, 0.5)),
        )
        chosen = [CKTP(topic, p, 10 * (p + 1)) for p in range(PARTITIONS)]
        consumer.commit(offsets=chosen, asynchronous=False)
        committed = consumer.committed([CKTP(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in committed}


def test_committed_offsets_survive_the_death_of_the_coordinators_broker(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        group = f"g-{uuid.uuid4().hex[:8]}"
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            topic = f"t-{uuid.uuid4().hex[:8]}"
            admin.create_topics([NewTopic(topic, PARTITIONS, 3)])
            wait_fully_replicated(admin, topic)
            producer = CKProducer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
            for n in range(RECORDS):
                producer.produce(topic, str(n).encode(), partition=n % PARTITIONS)
            assert producer.flush(60) == 0
            committed = _consume_and_commit(cluster.bootstrap_servers, topic, group)
            assert committed == {0: 10, 1: 20, 2: 30}
            offsets_topic = admin.describe_topics(["__consumer_offsets"])["__consumer_offsets"]
            assert all(len(p.replicas) == 3 for p in offsets_topic.partitions)
            wait_fully_replicated(admin, "__consumer_offsets")

        error, coordinator = _find_coordinator(cluster.bootstrap_servers.split(",")[0], group)
        assert error == Errors.NONE
        survivor = next(n for n in (1, 2, 3) if n != coordinator)
        boot = cluster.node(survivor).broker_address
        cluster.kill(coordinator)

        def moved() -> int | None:
            code, node = _find_coordinator(boot, group)
            return node if code == Errors.NONE and node != coordinator else None

        new_coordinator = wait_for("a new coordinator", moved, timeout=60)
        with Admin({"bootstrap.servers": boot}) as admin:
            described = admin.describe_topics(["__consumer_offsets"])["__consumer_offsets"]
            leaders = {p.partition: p.leader for p in described.partitions}
            assert leaders[partition_for(group, len(leaders))] == new_coordinator

            def listed() -> dict[int, int] | None:
                found = admin.list_consumer_group_offsets(group)
                return {tp.partition: o.offset for tp, o in found.items() if o is not None}

            assert wait_for("the group's offsets", listed) == committed

        resumed: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}
        consumer = Consumer(
            {"bootstrap.servers": boot, "group.id": group, "auto.offset.reset": "earliest"}
        )
        try:
            assert {
                tp.partition: o.offset
                for tp, o in consumer.committed([(topic, p) for p in range(PARTITIONS)]).items()
                if o is not None
            } == committed
            consumer.subscribe([topic])
            remaining = RECORDS - sum(committed.values())

            def rest() -> bool:
                for record in consumer.poll(500):
                    resumed[record.partition].append((record.offset, int(record.value)))
                return sum(map(len, resumed.values())) >= remaining

            wait_for("the rest of the records", rest, timeout=60)
        finally:
            consumer.close()
        for p, records in resumed.items():
            expected = [(o, o * PARTITIONS + p) for o in range(committed[p], RECORDS // PARTITIONS)]
            assert records == expected, (p, committed[p], records[:3])
