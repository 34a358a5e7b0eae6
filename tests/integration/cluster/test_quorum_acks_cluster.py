"""KIP-250's quorum acks on a real ``brook cluster`` (one controller, four brokers, so that
brokers can die without the metadata quorum): the config's rule through the tools and the
Admin API; a follower held back does not hold acks=all produces to a Q=2 topic (it does hold
those of an ordinary acks=all topic); kill -9 of the leader elects the replica with the most
complete log where Kafka's rule (the first live in-sync replica) would elect the lagging one;
with fewer than RF - Q + 1 live replicas the partition waits, and nothing acknowledged is lost.

Brokers are 2 to 5 (RF 3 topics on 2, 3 and 4; RF 4 with Q 2 on all four); broker 4's
fetches are held back by a fault delay when a test wants a lagging follower that is still in
the ISR (``replica.lag.time.max.ms`` is a minute here)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from loss_checker import wait_fully_replicated
from quorum_support import FAST, wait_for
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.cli.main import main
from brook.client.admin import Admin, AdminError, AlterConfigOp, ConfigResource, NewTopic

LAG_MS = 60_000
HELD_BACK_MS = 25_000  # under LAG_MS: the held-back follower stays in the ISR
OVERRIDES = {
    **FAST,
    "replica.lag.time.max.ms": str(LAG_MS),
    "auto.leader.rebalance.enable": "false",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("quorum-acks") / "c"
    with local_cluster(directory, controllers=1, brokers=4, overrides=OVERRIDES) as c:
        yield c


@pytest.fixture
def admin(cluster: LocalCluster) -> Iterator[Admin]:
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as a:
        yield a


def create(admin: Admin, replicas: list[int], q: int = 2, **configs: str) -> str:
    name = f"q-{uuid.uuid4().hex[:8]}"
    settings = {"quorum.required.acks": str(q), **configs}
    admin.create_topics([NewTopic(name, replica_assignment={0: replicas}, configs=settings)])
    wait_fully_replicated(admin, name)
    return name


def leader(admin: Admin, topic: str) -> int:
    return int(admin.describe_topics([topic])[topic].partitions[0].leader)


def produce(
    bootstrap: str, topic: str, count: int, timeout_ms: int = 30_000, first: int = 0
) -> list[str]:
    """``topic-first`` ... with acks=all, idempotent; returns what each record's delivery
    reported ("" when acked)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "request.timeout.ms": min(timeout_ms, 30_000),
            "message.timeout.ms": timeout_ms,
        }
    )
    outcomes: list[str] = []

    def report(err: KafkaError | None, _msg: object) -> None:
        outcomes.append(err.name() if err else "")

    for i in range(first, first + count):
        producer.produce(topic, f"{topic}-{i}".encode(), on_delivery=report)
        producer.poll(0)
    producer.flush(timeout_ms / 1000 + 30)
    return outcomes


def read_all(bootstrap: str, topic: str, expected: int) -> set[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got: set[bytes] = set()
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.add(msg.value())
    finally:
        consumer.close()
    return got


def hold_back(cluster: LocalCluster, broker: int, ms: int) -> None:
    cluster.slow(broker, fetch_delay_ms=ms)


def run_tool(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


# ---------------------------------------------------------------------- the config's rule
def test_the_config_rule_through_the_tools_and_the_api(
    cluster: LocalCluster, admin: Admin, capsys: pytest.CaptureFixture[str]
) -> None:
    boot = cluster.bootstrap_servers
    name = f"q-{uuid.uuid4().hex[:6]}"
    common = ["--bootstrap-server", boot, "--topic", name, "--partitions", "6"]
    code, out = run_tool(
        capsys,
        "topics",
        "--create",
        *common,
        "--replication-factor",
        "3",
        "--config",
        "quorum.required.acks=3",
    )
    assert code != 0 and "quorum.required.acks" in out and "less than the replication" in out
    code, out = run_tool(
        capsys,
        "topics",
        "--create",
        *common,
        "--replication-factor",
        "3",
        "--config",
        "quorum.required.acks=2",
    )
    assert code == 0, out
    for bad in ("1", "0", "3", "7"):
        with pytest.raises(AdminError) as refused:
            admin.incremental_alter_configs(
                {ConfigResource.topic(name): [AlterConfigOp("quorum.required.acks", bad)]}
            )
        assert "INVALID_CONFIG" in str(refused.value) or "quorum.required.acks" in str(
            refused.value
        )
    for value in ("-1", "2"):  # off, then on again, as kafka-configs.sh sets it
        code, out = run_tool(
            capsys,
            "configs",
            "--bootstrap-server",
            boot,
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            name,
            "--add-config",
            f"quorum.required.acks={value}",
        )
        assert code == 0, out
    # a reassignment down to two replicas would leave Q = RF: refused, naming the rule
    with pytest.raises(AdminError) as refused:
        admin.alter_partition_reassignments({(name, 0): [2, 3]})
    assert "quorum.required.acks" in str(refused.value)


# ---------------------------------------------------------------------- a slow follower
def test_a_held_back_follower_does_not_hold_quorum_acks(
    cluster: LocalCluster, admin: Admin
) -> None:
    boot = cluster.bootstrap_servers
    quorum = create(admin, [2, 3, 4])
    ordinary = create(admin, [2, 3, 4], q=-1, **{"min.insync.replicas": "2"})
    hold_back(cluster, 4, HELD_BACK_MS)
    try:
        time.sleep(1.0)  # let 4's fetch in flight (not delayed) come back
        assert produce(boot, quorum, 50, timeout_ms=8_000) == [""] * 50
        # acks=all waits for every in-sync replica, and 4 stays in sync for a minute
        timed_out = produce(boot, ordinary, 5, timeout_ms=8_000)
        assert timed_out and all(o in ("_MSG_TIMED_OUT", "REQUEST_TIMED_OUT") for o in timed_out)
        assert 4 in admin.describe_topics([ordinary])[ordinary].partitions[0].isr
    finally:
        hold_back(cluster, 4, 0)
    wait_fully_replicated(admin, quorum)
    assert len(read_all(boot, quorum, 50)) == 50


# ---------------------------------------------------------------------- elections
def test_killing_the_leader_elects_the_most_complete_log(
    cluster: LocalCluster, admin: Admin
) -> None:
    """Replicas [2, 4, 3]: Kafka's rule would elect 4 (the first live in-sync replica), which
    lacks the acknowledged records while its fetches are held back; the most complete is 3."""
    boot = cluster.bootstrap_servers
    topic = create(admin, [2, 4, 3])
    assert produce(boot, topic, 20) == [""] * 20
    hold_back(cluster, 4, HELD_BACK_MS)
    try:
        time.sleep(1.0)
        assert produce(boot, topic, 200, first=20) == [""] * 200
        assert 4 in admin.describe_topics([topic])[topic].partitions[0].isr
        cluster.kill(2)
        new = wait_for(
            "a new leader", lambda: (lead := leader(admin, topic)) not in (-1, 2) and lead
        )
        assert new == 3
        # Q = 2 and 2 is dead: the records (and 3's epoch marker) are committed once 4 has
        # fetched them from 3, so let it fetch again
        hold_back(cluster, 4, 0)
        assert len(read_all(boot, topic, 220)) == 220
    finally:
        hold_back(cluster, 4, 0)
        cluster.restart(2)
    wait_fully_replicated(admin, topic)
    assert len(read_all(boot, topic, 220)) == 220


def test_with_too_few_live_replicas_the_partition_waits_and_loses_nothing(
    cluster: LocalCluster, admin: Admin
) -> None:
    boot = cluster.bootstrap_servers
    topic = create(admin, [2, 3, 4])
    assert produce(boot, topic, 100) == [""] * 100
    cluster.kill(2)
    cluster.kill(3)
    try:
        wait_for("the partition fenced", lambda: leader(admin, topic) == -1)
        # one live replica of three, RF - Q + 1 = 2: nobody is elected, whatever it holds
        until = time.monotonic() + 5
        while time.monotonic() < until:
            assert leader(admin, topic) == -1
            time.sleep(0.2)
        cluster.restart(3)
        wait_for("a leader again", lambda: leader(admin, topic) in (3, 4))
        assert len(read_all(boot, topic, 100)) == 100
    finally:
        cluster.restart(2)
    wait_fully_replicated(admin, topic)
    assert len(read_all(boot, topic, 100)) == 100


def test_rf_4_with_q_2_survives_its_leader(cluster: LocalCluster, admin: Admin) -> None:
    """The seed's other shape: three replicas must answer (RF - Q + 1) before one is elected."""
    boot = cluster.bootstrap_servers
    topic = create(admin, [2, 3, 4, 5])
    assert produce(boot, topic, 100) == [""] * 100
    cluster.kill(2)
    try:
        wait_for("a new leader", lambda: leader(admin, topic) in (3, 4, 5))
        assert produce(boot, topic, 50, first=100) == [""] * 50
        assert len(read_all(boot, topic, 150)) == 150
    finally:
        cluster.restart(2)
    wait_fully_replicated(admin, topic)
