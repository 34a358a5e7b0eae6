"""Replication as a Kafka operator sees it on a real 3-node ``brook cluster``, through faults
on real processes:

- a follower paused (SIGSTOP) past ``replica.lag.time.max.ms`` leaves the ISR while it is
  still a registered broker, acks=all producers with ``min.insync.replicas=2`` keep going,
  and once resumed it catches up and rejoins;
- with two of three brokers killed, the surviving leader refuses acks=all with
  NOT_ENOUGH_REPLICAS (acks=1 still works); restarted, they rejoin and nothing acknowledged
  is lost;
- SIGTERM on a broker that leads partitions under an idempotent producer: its leaderships
  have moved when the process has exited, and every record is acknowledged and read back.

The consumer-group case (the coordinator's broker killed) is in
``test_group_coordinator_failover.py``. Every test has a cluster of its own."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError as CKError
from confluent_kafka import Producer as CKProducer
from loss_checker import check, read_back, wait_fully_replicated
from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic
from brook.protocol.errors import Errors, error_info
from brook.protocol.records import build_simple_batch

MIN_ISR = {"min.insync.replicas": "2"}


class Writer:
    """An idempotent confluent-kafka producer with acks=all on a thread of its own, writing
    numbered records (record ``n`` to partition ``n % partitions``) until stopped; keeps
    every delivery report: (partition, offset, number) when written, the error otherwise,
    and every fatal error the client reports."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.topic, self.partitions = topic, partitions
        self.acked: list[tuple[int, int, int]] = []
        self.failed: list[tuple[int, str]] = []
        self.fatal: list[str] = []
        self._stop = threading.Event()
        self._producer: CKProducer | None = CKProducer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120000,
                "error_cb": self._error,
            }
        )
        self._thread = threading.Thread(target=self._run, name="writer", daemon=True)

    def _error(self, err: CKError) -> None:
        if err.fatal():
            self.fatal.append(str(err))

    def _report(self, err: CKError | None, msg: Any) -> None:
        number = int(msg.value())
        if err is None:
            self.acked.append((msg.partition(), msg.offset(), number))
        else:
            self.failed.append((number, str(err)))

    def _run(self) -> None:
        producer = self._producer
        assert producer is not None
        n = 0
        while not self._stop.is_set():
            try:
                producer.produce(
                    self.topic,
                    str(n).encode(),
                    partition=n % self.partitions,
                    on_delivery=self._report,
                )
                n += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0.002)  # a steady stream, not a flood the cluster only queues
        producer.flush(120)
        self._producer = None  # destroyed here, not polling a cluster that has stopped

    def start(self) -> Writer:
        self._thread.start()
        return self

    def wait_acked(self, more: int, timeout: float = 90.0) -> None:
        """Until ``more`` records beyond those acknowledged now are acknowledged."""
        target = len(self.acked) + more
        wait_for(
            f"{more} more acknowledged records (failed so far: {self.failed[:3]})",
            lambda: len(self.acked) >= target,
            timeout,
        )

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(180)
        assert not self._thread.is_alive(), "the producer did not flush within 120 s"


@contextmanager
def writing(bootstrap: str, topic: str, partitions: int) -> Iterator[Writer]:
    writer = Writer(bootstrap, topic, partitions).start()
    try:
        yield writer
    finally:
        writer.stop()


def _partitions(admin: Admin, topic: str) -> dict[int, tuple[int, tuple[int, ...], set[int]]]:
    """partition -> (leader, replicas, ISR) as Metadata shows them."""
    described = admin.describe_topics([topic])[topic]
    return {p.partition: (p.leader, tuple(p.replicas), set(p.isr)) for p in described.partitions}


def _create(admin: Admin, assignment: dict[int, list[int]] | int) -> str:
    topic = f"repl-{uuid.uuid4().hex[:8]}"
    if isinstance(assignment, int):
        admin.create_topics([NewTopic(topic, assignment, 3, configs=MIN_ISR)])
    else:
        admin.create_topics([NewTopic(topic, replica_assignment=assignment, configs=MIN_ISR)])
    wait_fully_replicated(admin, topic)
    return topic


def _verify_everything_read_back(bootstrap: str, topic: str, partitions: int, writer: Any) -> None:
    assert not writer.failed, writer.failed[:5]
    assert not writer.fatal, writer.fatal
    read, _ = read_back(bootstrap, topic, partitions)
    verdict = check(writer.acked, read)
    assert verdict.ok, verdict.summary()
    assert verdict.read == verdict.acknowledged  # nothing unacknowledged either: all delivered


def _assert_stopped_cleanly(cluster: LocalCluster, nodes: Iterable[int]) -> None:
    """Every node stopped on SIGTERM within the launcher's 30 s (not killed after them)."""
    for node in nodes:
        log = cluster.node(node).log_path.read_text(errors="replace")
        assert f"Brook node {node} stopped cleanly" in log, f"node {node} did not stop"


# ---------------------------------------------------------------- a paused follower

# The follower leaves the ISR for lagging (3 s), long before its session would expire
# (15 s) and the controller would fence it: Metadata still lists it as a broker. (The
# session also bounds a controlled shutdown, which must end within the launcher's 30 s.)
LAGGING = {
    **FAST,
    "replica.lag.time.max.ms": "3000",
    "broker.session.timeout.ms": "15000",
}


def test_a_paused_follower_leaves_the_isr_and_rejoins_once_resumed(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=LAGGING) as cluster:
        quorum = wait_for("a quorum leader", cluster.describe_quorum)
        victim = next(n for n in (3, 2, 1) if n != quorum.leader_id)  # not the controller
        a, b = (n for n in (1, 2, 3) if n != victim)
        boot = cluster.node(a).broker_address  # clients never wait on the paused node
        with Admin({"bootstrap.servers": boot}) as admin:
            topic = _create(admin, {0: [a, b, victim], 1: [b, a, victim]})
            with writing(boot, topic, 2) as writer:
                writer.wait_acked(200)
                cluster.pause(victim)
                try:
                    wait_for(
                        f"broker {victim} out of every ISR",
                        lambda: all(
                            isr == {a, b} for _, _, isr in _partitions(admin, topic).values()
                        ),
                        timeout=45,
                    )
                    brokers = {x.node_id for x in admin.describe_cluster().brokers}
                    assert victim in brokers, "fenced rather than dropped for lagging"
                    writer.wait_acked(300)  # acks=all goes on with two in-sync replicas
                finally:
                    cluster.resume(victim)
                wait_fully_replicated(admin, topic, timeout=60)
                assert {p[0] for p in _partitions(admin, topic).values()} == {a, b}
                writer.wait_acked(200)
            _verify_everything_read_back(boot, topic, 2, writer)
    _assert_stopped_cleanly(cluster, (1, 2, 3))


# ---------------------------------------------------------------- two of three brokers down


def _raw_produce(client: RawClient, topic: str, number: int, acks: int) -> Any:
    resp = client.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout": 30000,
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [
                        {"index": 0, "records": build_simple_batch([str(number).encode()])}
                    ],
                }
            ],
        },
    )
    return resp.responses[0].partition_responses[0]


def _produce_numbered(boot: str, topic: str, numbers: range) -> list[tuple[int, int, int]]:
    acked: list[tuple[int, int, int]] = []
    failed: list[str] = []

    def report(err: CKError | None, msg: Any) -> None:
        if err is None:
            acked.append((msg.partition(), msg.offset(), int(msg.value())))
        else:
            failed.append(str(err))

    producer = CKProducer({"bootstrap.servers": boot, "acks": "all", "enable.idempotence": True})
    for n in numbers:
        producer.produce(topic, str(n).encode(), partition=0, on_delivery=report)
    assert producer.flush(60) == 0
    assert not failed and len(acked) == len(numbers), failed[:3]
    return acked


def test_two_brokers_down_refuse_acks_all_and_lose_nothing_once_back(tmp_path: Path) -> None:
    # Node 1 is the only controller (and a broker), so the metadata quorum lives on while 2 and
    # 3 are down and the ISR can shrink to the leader alone; with three voters, killing two
    # would stop every ISR change, and acks=all would time out instead.
    overrides = {**FAST, "replica.lag.time.max.ms": "3000"}
    with local_cluster(tmp_path / "c", nodes=3, controllers=1, overrides=overrides) as cluster:
        boot = cluster.node(1).broker_address
        with Admin({"bootstrap.servers": boot}) as admin:
            topic = _create(admin, {0: [1, 2, 3]})
            acked = _produce_numbered(boot, topic, range(0, 100))
            cluster.kill(2)
            cluster.kill(3)
            wait_for(
                "the ISR down to the leader",
                lambda: _partitions(admin, topic)[0] == (1, (1, 2, 3), {1}),
                timeout=45,
            )
            with RawClient(boot, timeout=40) as raw:
                refused = _raw_produce(raw, topic, 100, acks=-1)
                assert refused.error_code == Errors.NOT_ENOUGH_REPLICAS == 19
                assert error_info(refused.error_code).name == "NOT_ENOUGH_REPLICAS"
                assert error_info(refused.error_code).retriable
                written = _raw_produce(raw, topic, 101, acks=1)  # acks=1 is not bound by it
                assert written.error_code == 0
                acked.append((0, written.base_offset, 101))
            cluster.restart(2)
            cluster.restart(3)
            wait_fully_replicated(admin, topic, timeout=60)
            acked += _produce_numbered(boot, topic, range(102, 200))
        read, _ = read_back(boot, topic, 1)
        verdict = check(acked, read)
        assert verdict.ok and verdict.read == len(acked) == 199, verdict.summary()


# ---------------------------------------------------------------- controlled shutdown


# The default session (9 s) bounds the controlled shutdown: FAST's 3 s could run out on a
# loaded machine before the leaderships have moved.
HEARTBEATS = {"broker.heartbeat.interval.ms": "500"}


def test_controlled_shutdown_moves_leaders_under_an_idempotent_producer(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=HEARTBEATS) as cluster:
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            topic = _create(admin, 6)
            leaders = [lead for lead, _, _ in _partitions(admin, topic).values()]
        target = max((1, 2, 3), key=leaders.count)
        survivor = next(n for n in (1, 2, 3) if n != target)
        with writing(cluster.bootstrap_servers, topic, 6) as writer:
            writer.wait_acked(300)
            cluster.stop_node(target)
            # the process has exited: what its log says and what Metadata shows right now
            log = cluster.node(target).log_path.read_text(errors="replace")
            assert f"controlled shutdown of broker {target} done" in log
            with Admin({"bootstrap.servers": cluster.node(survivor).broker_address}) as admin:
                moved = _partitions(admin, topic)
            assert all(lead != target and target not in isr for lead, _, isr in moved.values())
            writer.wait_acked(300)
        _verify_everything_read_back(cluster.node(survivor).broker_address, topic, 6, writer)
    _assert_stopped_cleanly(cluster, [n for n in (1, 2, 3) if n != target])
