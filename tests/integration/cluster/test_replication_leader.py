"""A partition leader in a real 3-node ``brook cluster`` facing a raw-protocol follower: Fetch
v17 carrying ReplicaState {replica id, broker epoch}, sent as brokers 2 and 3 would send it
(every node's own replica fetchers are held back by an hour-long injected fetch delay, so
only this test fetches for them).

It checks what the leader does with those fetches: the follower's position is the offset of
its fetch (the HW moves only on its next fetch), a follower's long poll wakes on an append,
acks=all waits for the followers, the min-ISR errors and REQUEST_TIMED_OUT, ISR shrink and
expansion through AlterPartition to the controller (seen in Metadata), and the leader's error
table on the wire."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch

LAG_MS = 3000
HELD_BACK_MS = 3_600_000
OVERRIDES = {
    **FAST,
    "offsets.topic.replication.factor": "1",
    "default.replication.factor": "1",
    "replica.lag.time.max.ms": str(LAG_MS),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with local_cluster(tmp_path_factory.mktemp("repl") / "c", nodes=3, overrides=OVERRIDES) as c:
        for node in (1, 2, 3):  # answered once the node's own image has the delay
            c.slow(node, fetch_delay_ms=HELD_BACK_MS)
        yield c


@pytest.fixture
def leader(cluster: LocalCluster) -> Iterator[RawClient]:
    with RawClient(cluster.node(1).broker_address, timeout=30) as c:
        yield c


def create(
    client: RawClient,
    replicas: list[int],
    configs: dict[str, str] | None = None,
    partitions: int = 1,
) -> str:
    name = f"repl-{uuid.uuid4().hex[:8]}"
    resp = client.request(
        19,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [
                        {"partition_index": i, "broker_ids": replicas} for i in range(partitions)
                    ],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout": 30000,
            "validate_only": False,
        },
    )
    assert resp.topics[0].error_code == 0, resp
    wait_for(f"{name} led by 1", lambda: state(client, name).leader_id == 1, 30)
    return name


def state(client: RawClient, topic: str) -> Any:
    """Metadata v12's view of partition 0 (with the topic id on it)."""
    meta = client.request(
        3,
        12,
        {
            "topics": [{"name": topic, "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    t = meta.topics[0]
    p = t.partitions[0]
    return SimpleNamespace(
        topic_id=t.topic_id,
        leader_id=int(p.leader_id),
        leader_epoch=int(p.leader_epoch),
        isr_nodes=[int(b) for b in p.isr_nodes],
    )


def follower_fetch(
    client: RawClient,
    topic_id: uuid.UUID,
    offset: int,
    *,
    replica: int,
    broker_epoch: int = -1,
    leader_epoch: int = 0,
    last_fetched_epoch: int = -1,
    max_wait: int = 0,
) -> Any:
    """One Fetch v17 as a follower sends it; returns the partition's answer."""
    resp = client.request(
        1,
        17,
        {
            "cluster_id": None,
            "replica_state": {"replica_id": replica, "replica_epoch": broker_epoch},
            "max_wait": max_wait,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": leader_epoch,
                            "fetch_offset": offset,
                            "last_fetched_epoch": last_fetched_epoch,
                            "log_start_offset": 0,
                            "partition_max_bytes": 1 << 20,
                            "replica_directory_id": None,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    assert resp.error_code == 0, resp
    return resp.responses[0].partitions[0]


def produce(
    client: RawClient, topic: str, count: int, acks: int = -1, timeout_ms: int = 30000
) -> Any:
    resp = client.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout": timeout_ms,
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [{"index": 0, "records": build_simple_batch([b"v"] * count)}],
                }
            ],
        },
    )
    return resp.responses[0].partition_responses[0]


def high_watermark(client: RawClient, topic_id: uuid.UUID) -> int:
    """The HW as a consumer's fetch reports it."""
    resp = client.request(
        1,
        13,
        {
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 1,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 0,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    return int(resp.responses[0].partitions[0].high_watermark)


class Background:
    """A request answered on another connection, so the test can act while it waits."""

    def __init__(self, address: str, call: Any) -> None:
        self.result: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                with RawClient(address, timeout=60) as c:
                    self.result = call(c)
            except BaseException as exc:  # reported by wait()
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.started = time.monotonic()
        self.thread.start()

    def done(self) -> bool:
        return not self.thread.is_alive()

    def wait(self, timeout: float = 60) -> Any:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "no answer"
        if self.error is not None:
            raise self.error
        return self.result


# ---------------------------------------------------------------------- positions and the HW
def test_the_hw_moves_only_when_the_followers_fetch_past_the_records(
    leader: RawClient,
) -> None:
    topic = create(leader, [1, 2, 3])
    tid = state(leader, topic).topic_id
    assert produce(leader, topic, 5, acks=1).error_code == 0
    assert high_watermark(leader, tid) == 0  # no follower has it
    for replica in (2, 3):
        got = follower_fetch(leader, tid, 0, replica=replica)
        assert got.error_code == 0 and got.records  # followers read up to the log end
        assert got.high_watermark == 0  # fetching from 0 says nothing about offsets 0-4
    got = follower_fetch(leader, tid, 5, replica=2)
    assert got.high_watermark == 0  # 3 has not confirmed them yet
    got = follower_fetch(leader, tid, 5, replica=3)
    assert got.high_watermark == 5  # both followers' positions are past the records
    assert high_watermark(leader, tid) == 5


def test_a_followers_long_poll_wakes_on_an_append(cluster: LocalCluster, leader: RawClient) -> None:
    topic = create(leader, [1, 2, 3])
    tid = state(leader, topic).topic_id
    poll = Background(
        cluster.node(1).broker_address,
        lambda c: follower_fetch(c, tid, 0, replica=2, max_wait=20000),
    )
    time.sleep(0.5)  # let it park (an answer before the append would fail the check below)
    assert not poll.done()
    assert produce(leader, topic, 3, acks=1).error_code == 0
    got = poll.wait(15)
    assert got.error_code == 0 and got.records
    # the HW has not moved: an append, not an HW move, woke it
    assert time.monotonic() - poll.started < 15 and got.high_watermark == 0


# ---------------------------------------------------------------------- acks=all
def test_acks_all_completes_once_the_followers_have_fetched(
    cluster: LocalCluster, leader: RawClient
) -> None:
    topic = create(leader, [1, 2, 3])
    tid = state(leader, topic).topic_id
    waiting = Background(cluster.node(1).broker_address, lambda c: produce(c, topic, 4))
    got = wait_for(
        "the produce's records at the leader",
        lambda: r if (r := follower_fetch(leader, tid, 0, replica=2)).records else None,
        20,
    )
    assert got.error_code == 0
    follower_fetch(leader, tid, 0, replica=3)
    time.sleep(0.3)
    assert not waiting.done()  # the followers have the records, but the leader cannot know
    follower_fetch(leader, tid, 4, replica=2)
    assert not waiting.done()
    follower_fetch(leader, tid, 4, replica=3)
    answer = waiting.wait(20)
    assert answer.error_code == 0 and answer.base_offset == 0


def test_acks_all_times_out_when_the_followers_do_not_fetch(leader: RawClient) -> None:
    topic = create(leader, [1, 2, 3])
    tid = state(leader, topic).topic_id
    answer = produce(leader, topic, 2, timeout_ms=500)
    assert answer.error_code == Errors.REQUEST_TIMED_OUT
    # the records were written: a follower reads them
    assert follower_fetch(leader, tid, 0, replica=2).records


# ---------------------------------------------------------------------- ISR changes, min ISR
def test_isr_shrinks_then_grows_through_alter_partition(leader: RawClient) -> None:
    topic = create(leader, [1, 2, 3], {"min.insync.replicas": "2"})
    tid = state(leader, topic).topic_id
    assert list(state(leader, topic).isr_nodes) == [1, 2, 3]
    # nobody fetches for 2 and 3: after replica.lag.time.max.ms the leader drops them
    wait_for("the ISR shrinks", lambda: list(state(leader, topic).isr_nodes) == [1], 30)
    refused = produce(leader, topic, 3)
    assert refused.error_code == Errors.NOT_ENOUGH_REPLICAS
    assert follower_fetch(leader, tid, 0, replica=2).records == b""  # nothing was written
    assert produce(leader, topic, 2, acks=1).error_code == 0  # acks=1 is not bound
    # 2 catches up (fetches at the log end): the leader asks the controller to add it
    follower_fetch(leader, tid, 0, replica=2)
    follower_fetch(leader, tid, 2, replica=2)
    wait_for("2 back in the ISR", lambda: list(state(leader, topic).isr_nodes) == [1, 2], 30)
    assert state(leader, topic).leader_epoch == 0  # an ISR change is not a leader change
    # acks=all with min ISR 2 and ISR [1, 2] now waits for 2 only
    waiting = Background(leader_address(leader), lambda c: produce(c, topic, 1))
    wait_for(
        "the produce's record at the leader",
        lambda: bool(follower_fetch(leader, tid, 2, replica=2).records),
        20,
    )
    follower_fetch(leader, tid, 3, replica=2)
    assert waiting.wait(20).error_code == 0


def leader_address(client: RawClient) -> str:
    host, port = client.sock.getpeername()[:2]
    return f"{host}:{port}"


# ---------------------------------------------------------------------- the error table
def test_the_leaders_answers_to_bad_follower_fetches(
    cluster: LocalCluster, leader: RawClient
) -> None:
    topic = create(leader, [1, 2])
    tid = state(leader, topic).topic_id
    assert produce(leader, topic, 4, acks=1).error_code == 0

    def code(**kw: Any) -> int:
        return int(follower_fetch(leader, tid, kw.pop("offset", 0), **kw).error_code)

    assert code(replica=2, leader_epoch=1) == Errors.UNKNOWN_LEADER_EPOCH  # newer epoch
    # 3 is not a replica: with an epoch it may be one soon (a reassignment), without not
    assert code(replica=3) == Errors.UNKNOWN_LEADER_EPOCH
    assert code(replica=3, leader_epoch=-1) == Errors.NOT_LEADER_OR_FOLLOWER
    # broker epochs are offsets of registration records: 0 is older than any registered
    assert code(replica=2, broker_epoch=0) == Errors.NOT_LEADER_OR_FOLLOWER
    with RawClient(cluster.node(2).broker_address) as other:
        got = follower_fetch(other, tid, 0, replica=3)
        assert got.error_code == Errors.NOT_LEADER_OR_FOLLOWER  # node 2 does not lead it
    # a follower whose epoch 0 ran past the leader's end has diverged: truncate to 4
    got = follower_fetch(leader, tid, 9, replica=2, last_fetched_epoch=0)
    assert got.error_code == 0 and got.diverging_epoch.epoch == 0
    assert got.diverging_epoch.end_offset == 4 and got.records == b""
    # below the log start: OFFSET_OUT_OF_RANGE, checked before any divergence
    follower_fetch(leader, tid, 4, replica=2)  # the HW reaches 4
    deleted = leader.request(
        21,
        2,
        {
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 3}]}],
            "timeout": 10000,
        },
    )
    assert deleted.topics[0].partitions[0].error_code == 0
    assert code(replica=2, offset=1, last_fetched_epoch=0) == Errors.OFFSET_OUT_OF_RANGE


def test_a_follower_replica_checks_the_epoch_before_leadership(
    cluster: LocalCluster, leader: RawClient
) -> None:
    """As Kafka's getLocalLog: a broker hosting the partition as a follower answers an older
    epoch FENCED_LEADER_EPOCH and a newer one UNKNOWN_LEADER_EPOCH, only the current one
    NOT_LEADER_OR_FOLLOWER (a follower fetching from an old leader is fenced, so it waits
    for new metadata instead of backing off)."""
    topic = create(leader, [1, 2])
    tid = state(leader, topic).topic_id
    _move_leader(leader, topic, [2, 1])
    epoch = state(leader, topic).leader_epoch
    wait_for(
        "1 has the new epoch", lambda: _code(leader, tid, epoch) != Errors.UNKNOWN_LEADER_EPOCH, 30
    )

    assert _code(leader, tid, epoch - 1) == Errors.FENCED_LEADER_EPOCH
    assert _code(leader, tid, epoch) == Errors.NOT_LEADER_OR_FOLLOWER
    assert _code(leader, tid, epoch + 1) == Errors.UNKNOWN_LEADER_EPOCH


def _code(client: RawClient, tid: uuid.UUID, epoch: int) -> int:
    return int(follower_fetch(client, tid, 0, replica=3, leader_epoch=epoch).error_code)


def test_a_follower_ahead_of_the_leaders_metadata_waits_within_its_max_wait(
    leader: RawClient,
) -> None:
    """A follower can learn a new leader epoch before the leader does; its fetch waits (up to
    its max wait) for the leader's metadata instead of being told UNKNOWN_LEADER_EPOCH at
    once. An epoch that never comes is answered so at the end of the wait."""
    topic = create(leader, [1, 2])
    tid = state(leader, topic).topic_id
    started = time.monotonic()
    got = follower_fetch(leader, tid, 0, replica=2, leader_epoch=5, max_wait=400)
    assert got.error_code == Errors.UNKNOWN_LEADER_EPOCH
    assert time.monotonic() - started >= 0.4


def test_a_divergence_is_answered_without_waiting(leader: RawClient) -> None:
    """As Kafka: a follower told to truncate is told at once, whatever its max wait (a new
    leader's followers would otherwise wait a whole long poll before truncating, and every
    acks=all produce to it with them)."""
    topic = create(leader, [1, 2])
    tid = state(leader, topic).topic_id
    assert produce(leader, topic, 4, acks=1).error_code == 0
    follower_fetch(leader, tid, 4, replica=2)  # caught up: nothing left to read
    started = time.monotonic()
    got = follower_fetch(leader, tid, 9, replica=2, last_fetched_epoch=0, max_wait=25_000)
    assert got.diverging_epoch.end_offset == 4
    assert time.monotonic() - started < 20  # not held for its 25 s


# ---------------------------------------------------------------------- a new leader's HW
def _move_leader(client: RawClient, topic: str, replicas: list[int]) -> None:
    """Reorder the replicas and elect the preferred (first) one."""
    moved = client.request(
        45,
        0,
        {
            "timeout": 30000,
            "topics": [
                {"name": topic, "partitions": [{"partition_index": 0, "replicas": replicas}]}
            ],
        },
    )
    assert moved.error_code == 0, moved
    elected = client.request(
        43,
        2,
        {
            "election_type": 0,
            "topic_partitions": [{"topic": topic, "partitions": [0]}],
            "timeout": 30000,
        },
    )
    assert elected.error_code == 0, elected
    wait_for(
        f"{replicas[0]} leads {topic}",
        lambda: state(client, topic).leader_id == replicas[0],
        30,
    )


def list_latest(client: RawClient, topic: str, replica_id: int = -1) -> Any:
    resp = client.request(
        2,
        7,
        {
            "replica_id": replica_id,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        },
    )
    return resp.topics[0].partitions[0]


def test_a_replica_asking_for_the_latest_offset_gets_the_log_end(leader: RawClient) -> None:
    # Kafka: a consumer's "latest" is the high watermark, a replica's the log end offset.
    topic = create(leader, [1, 2])
    assert produce(leader, topic, 5, acks=1).error_code == 0  # HW 0: 2 has not fetched
    assert (list_latest(leader, topic).offset, list_latest(leader, topic, 2).offset) == (0, 5)


def test_a_new_leader_below_its_epoch_start_has_no_latest_offset(leader: RawClient) -> None:
    topic = create(leader, [1, 2])
    tid = state(leader, topic).topic_id
    assert produce(leader, topic, 5, acks=1).error_code == 0  # HW 0: 2 has not fetched
    _move_leader(leader, topic, [2, 1])
    _move_leader(leader, topic, [1, 2])
    # leader again from offset 5 with HW 0: offsets the last leader acknowledged may be above
    epoch = state(leader, topic).leader_epoch
    assert epoch >= 2
    assert list_latest(leader, topic).error_code == Errors.OFFSET_NOT_AVAILABLE
    # a follower still on an older leader epoch is fenced
    older = follower_fetch(leader, tid, 5, replica=2, leader_epoch=epoch - 1)
    assert older.error_code == Errors.FENCED_LEADER_EPOCH
    follower_fetch(leader, tid, 5, replica=2, leader_epoch=epoch)
    latest = list_latest(leader, topic)
    assert (latest.error_code, latest.offset) == (0, 5)


# ---------------------------------------------------------------------- follower sessions
def session_fetch(
    client: RawClient,
    topic_id: uuid.UUID,
    session: tuple[int, int],
    offsets: dict[int, int],
    max_wait: int = 0,
) -> Any:
    """A follower's Fetch v17 in a fetch session (KIP-227) as replica 2."""
    partitions = [
        {
            "partition": p,
            "current_leader_epoch": 0,
            "fetch_offset": o,
            "last_fetched_epoch": -1,
            "log_start_offset": 0,
            "partition_max_bytes": 1 << 20,
            "replica_directory_id": None,
        }
        for p, o in offsets.items()
    ]
    return client.request(
        1,
        17,
        {
            "cluster_id": None,
            "replica_state": {"replica_id": 2, "replica_epoch": -1},
            "max_wait": max_wait,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": session[0],
            "session_epoch": session[1],
            "topics": [{"topic_id": topic_id, "partitions": partitions}] if partitions else [],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )


def answered(resp: Any) -> dict[int, Any]:
    assert resp.error_code == 0, resp
    return {p.partition_index: p for t in resp.responses for p in t.partitions}


def produce_to(client: RawClient, topic: str, partition: int, count: int) -> None:
    resp = client.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout": 30000,
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [
                        {"index": partition, "records": build_simple_batch([b"v"] * count)}
                    ],
                }
            ],
        },
    )
    assert resp.responses[0].partition_responses[0].error_code == 0


def test_a_follower_session_answers_what_changed(cluster: LocalCluster, leader: RawClient) -> None:
    topic = create(leader, [1, 2], partitions=6)
    tid = state(leader, topic).topic_id
    full = session_fetch(leader, tid, (0, 0), dict.fromkeys(range(6), 0))
    assert sorted(answered(full)) == list(range(6)) and full.session_id > 0
    sid = full.session_id
    assert answered(session_fetch(leader, tid, (sid, 1), {})) == {}  # nothing changed
    poll = Background(
        cluster.node(1).broker_address,
        lambda c: session_fetch(c, tid, (sid, 2), {}, max_wait=20000),
    )
    time.sleep(0.5)
    assert not poll.done()  # parked: none of its partitions changed
    produce_to(leader, topic, 4, 3)
    got = answered(poll.wait(15))
    assert list(got) == [4] and got[4].records and time.monotonic() - poll.started < 15
    # at the new offset: the leader learns 2 has offsets 0-2 and the HW moves to 3
    got = answered(session_fetch(leader, tid, (sid, 3), {4: 3}))
    assert list(got) == [4] and got[4].high_watermark == 3 and not got[4].records
    assert answered(session_fetch(leader, tid, (sid, 4), {})) == {}


# ---------------------------------------------------------------------- AlterPartition
def alter_partition(
    cluster: LocalCluster, node_id: int, version: int, topic_id: uuid.UUID, **fields: Any
) -> Any:
    """AlterPartition sent to a node's controller listener, as broker 1 (its leader)."""
    members = fields.get("isr", [1])
    partition: dict[str, Any] = {
        "partition_index": 0,
        "leader_epoch": fields.get("leader_epoch", 0),
        "leader_recovery_state": 0,
        "partition_epoch": fields["partition_epoch"],
    }
    if version >= 3:
        partition["new_isr_with_epochs"] = [{"broker_id": b, "broker_epoch": -1} for b in members]
    else:
        partition["new_isr"] = members
    port = cluster.node(node_id).ports["CONTROLLER"]
    with RawClient(f"127.0.0.1:{port}") as c:
        return c.request(
            56,
            version,
            {
                "broker_id": 1,
                "broker_epoch": fields.get("broker_epoch", -1),
                "topics": [{"topic_id": topic_id, "partitions": [partition]}],
            },
        )


def test_alter_partition_on_the_controller_listener(
    cluster: LocalCluster, leader: RawClient
) -> None:
    topic = create(leader, [1, 2, 3])
    tid = state(leader, topic).topic_id
    q = wait_for("a leader", cluster.describe_quorum)
    other = next(n.node_id for n in cluster.nodes if n.node_id != q.leader_id)
    # only the active controller decides
    refused = alter_partition(cluster, other, 2, tid, partition_epoch=0, isr=[1, 2])
    assert refused.error_code == Errors.NOT_CONTROLLER
    # broker 1's epoch is not -1: the whole request is refused
    stale = alter_partition(cluster, q.leader_id, 3, tid, partition_epoch=0, isr=[1, 2])
    assert stale.error_code == Errors.STALE_BROKER_EPOCH and not stale.topics
    assert list(state(leader, topic).isr_nodes) == [1, 2, 3]
