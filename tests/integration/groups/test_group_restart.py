"""Committed offsets (with their metadata) and group membership survive a clean restart and a
kill -9 of the broker: ``__consumer_offsets`` is replayed before the coordinator answers."""

from __future__ import annotations

import uuid

from group_support import (
    assignment,
    commit,
    committed,
    describe,
    heartbeat,
    join,
    ready,
    sync,
)
from kafka import KafkaConsumer, TopicPartition
from rawclient import RawClient, create_topic, produce
from support import BrookProcess

from brook.client.consumer import OffsetAndMetadata
from brook.protocol.records import build_simple_batch


def test_offsets_and_groups_survive_restart_and_kill(own_groups_brook: BrookProcess) -> None:
    broker = own_groups_brook
    topic = f"t-{uuid.uuid4().hex[:6]}"
    simple, managed = "simple-group", "managed-group"
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=3)
        ready(c, simple)
        ready(c, managed)
        assert commit(c, simple, {(topic, 0): (5, "five"), (topic, 1): (6, None)}) == {
            (topic, 0): 0,
            (topic, 1): 0,
        }
        member = join(c, managed, version=3, topics=(topic,), session_ms=60000)
        gen = member.generation_id
        sync(c, managed, member.member_id, gen, {member.member_id: assignment({topic: [2]})})
        assert commit(
            c, managed, {(topic, 2): (7, "gen-1")}, member_id=member.member_id, generation=gen
        ) == {(topic, 2): 0}
        before = {simple: committed(c, simple), managed: committed(c, managed)}

    broker.restart(clean=True)
    with RawClient(broker.bootstrap) as c:
        ready(c, simple)
        ready(c, managed)
        assert {simple: committed(c, simple), managed: committed(c, managed)} == before
        # The group comes back Stable, with its member, generation and assignment.
        d = describe(c, managed)
        assert d.group_state == "Stable"
        assert [m.member_id for m in d.members] == [member.member_id]
        assert heartbeat(c, managed, member.member_id, gen) == 0
        assert commit(c, simple, {(topic, 0): (50, "after-restart")}) == {(topic, 0): 0}

    broker.restart(clean=False)  # kill -9
    with RawClient(broker.bootstrap) as c:
        ready(c, simple)
        ready(c, managed)
        assert committed(c, simple) == {(topic, 0): (50, "after-restart"), (topic, 1): (6, "")}
        assert committed(c, managed) == before[managed]
        assert heartbeat(c, managed, member.member_id, gen) == 0


def test_consumer_resumes_from_its_commit_after_kill(own_groups_brook: BrookProcess) -> None:
    broker = own_groups_brook
    topic, group = f"resume-{uuid.uuid4().hex[:6]}", "resume-group"
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=1)
        produce(c, topic, 0, build_simple_batch([f"r{i}".encode() for i in range(20)]))

    def consumer() -> KafkaConsumer:
        return KafkaConsumer(
            topic,
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=3000,
            heartbeat_interval_ms=500,
            max_poll_records=10,
        )

    first = consumer()
    got: list[int] = []
    while len(got) < 10:
        for records in first.poll(timeout_ms=500).values():
            got += [r.offset for r in records]
    assert got == list(range(10))
    first.commit()
    first.close()

    broker.restart(clean=False)
    second = consumer()
    try:
        seen: list[int] = []
        for _ in range(60):
            for records in second.poll(timeout_ms=500).values():
                seen += [r.offset for r in records]
            if seen:
                break
        assert seen and seen[0] == 10, seen
        assert second.committed(TopicPartition(topic, 0)) == 10
    finally:
        second.close()


def test_brook_consumer_resumes_from_its_commit_after_kill(own_groups_brook: BrookProcess) -> None:
    """A Brook group member commits and leaves, the broker is killed (-9) and restarted, and a
    new member resumes from the commit."""
    from brook import Consumer

    broker = own_groups_brook
    topic, group = f"bresume-{uuid.uuid4().hex[:6]}", "brook-resume-group"
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=1)
        produce(c, topic, 0, build_simple_batch([f"r{i}".encode() for i in range(20)]))
    settings = {
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 3000,
        "heartbeat.interval.ms": 300,
        "max.poll.records": 10,
    }
    first = Consumer(settings)
    first.subscribe([topic])
    got: list[int] = []
    for _ in range(100):
        got += [r.offset for r in first.poll(200)]
        if len(got) >= 10:
            break
    assert got == list(range(10))
    first.commit()
    first.close()

    broker.restart(clean=False)
    second = Consumer(settings)
    try:
        second.subscribe([topic])
        seen: list[int] = []
        for _ in range(150):
            seen += [r.offset for r in second.poll(200)]
            if seen:
                break
        assert seen and seen[0] == 10, seen
        assert second.committed([(topic, 0)])[(topic, 0)] == OffsetAndMetadata(10, "", 0)
    finally:
        second.close()
