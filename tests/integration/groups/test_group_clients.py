"""Groups of real consumers (kafka-python, confluent-kafka, aiokafka, Brook), each in its own
process: three members split the partitions, one leaves cleanly, one is killed, the group
rebalances and every record is consumed at least once, with commits reaching the end of the
log."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from group_processes import PARTITIONS, ConsumerProcess, produce_round, split
from group_support import (
    assignment,
    commit,
    committed,
    describe,
    join,
    leave,
    ready,
    sync,
    until,
)
from rawclient import RawClient, create_topic
from support import BrookProcess


@pytest.mark.parametrize("lib", ["kafka-python", "confluent", "aiokafka", "brook"])
def test_consumer_group_splits_rebalances_and_commits(groups_brook: BrookProcess, lib: str) -> None:
    suffix = uuid.uuid4().hex[:6]
    topic, group = f"clients-{lib}-{suffix}", f"group-{lib}-{suffix}"
    with RawClient(groups_brook.bootstrap) as c:
        create_topic(c, topic, partitions=PARTITIONS)
        ready(c, group)
        produced = produce_round(c, topic, "a")
        consumers = [ConsumerProcess(lib, groups_brook.bootstrap, topic, group) for _ in range(3)]

        def consumed() -> set[str]:
            return set().union(*(cp.values() for cp in consumers))

        try:
            until(lambda: split(c, group, topic, 3), 60, "three members sharing the partitions")
            until(lambda: produced <= consumed(), 30, "the first records")

            leaving, killed, survivor = consumers
            assert leaving.terminate() == 0, leaving.diagnostics()
            assert leaving.saw("closed")
            until(lambda: split(c, group, topic, 2), 30, "a rebalance after a clean leave")

            killed.kill()
            until(lambda: split(c, group, topic, 1), 30, "a rebalance after a crash")

            produced |= produce_round(c, topic, "b")
            until(lambda: produced <= consumed(), 30, "the records after the rebalances")
            end = {(topic, p): 20 for p in range(PARTITIONS)}
            until(
                lambda: {tp: off for tp, (off, _) in committed(c, group).items()} == end,
                30,
                "commits at the end of every partition",
            )
            assert survivor.terminate() == 0, survivor.diagnostics()
            until(lambda: describe(c, group).group_state == "Empty", 20, "an empty group")
            # At-least-once: members commit after each batch, so only what the killed member
            # read after its last commit may be read again.
            reads = Counter(v for cp in consumers for v in cp.values())
            assert {v for v, n in reads.items() if n > 1} <= killed.values()
        except AssertionError:
            for cp in consumers:
                print(f"--- {lib} consumer stderr ---\n{cp.diagnostics()}")
            raise
        finally:
            for cp in consumers:
                if cp.proc.poll() is None:
                    cp.kill()


def test_admin_clients_list_describe_and_delete_groups(groups_brook: BrookProcess) -> None:
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient, TopicPartition

    suffix = uuid.uuid4().hex[:6]
    topic, empty, stable = f"admin-{suffix}", f"empty-{suffix}", f"stable-{suffix}"
    with RawClient(groups_brook.bootstrap) as c:
        create_topic(c, topic, partitions=2)
        ready(c, empty)
        ready(c, stable)
        assert commit(c, empty, {(topic, 0): (3, "meta")}) == {(topic, 0): 0}
        member = join(c, stable, version=3, topics=(topic,))
        sync(c, stable, member.member_id, 1, {member.member_id: assignment({topic: [0, 1]})})

        kp = KafkaAdminClient(bootstrap_servers=groups_brook.bootstrap)
        try:
            listed = {g["group_id"]: g for g in kp.list_groups()}
            assert listed[stable]["group_state"] == "Stable"
            assert listed[empty]["group_state"] == "Empty"
            described = kp.describe_groups([stable])[stable]
            assert described["protocol_data"] == "range"
            [m] = described["members"]
            assert m["member_metadata"]["topics"] == [topic]
            assert m["member_assignment"]["assigned_partitions"] == [
                {"topic": topic, "partitions": [0, 1]}
            ]
            offsets = kp.list_group_offsets({empty: None})[empty]
            assert offsets[TopicPartition(topic, 0)].offset == 3
            assert offsets[TopicPartition(topic, 0)].metadata == "meta"
            assert kp.delete_groups([empty, stable, f"nope-{suffix}"]) == {
                empty: "OK",
                stable: "NonEmptyGroupError",
                f"nope-{suffix}": "GroupIdNotFoundError",
            }
        finally:
            kp.close()

        ck = AdminClient({"bootstrap.servers": groups_brook.bootstrap})
        states = {g.group_id: g.state for g in ck.list_consumer_groups().result().valid}
        assert states[stable] == ConsumerGroupState.STABLE
        group = ck.describe_consumer_groups([stable])[stable].result()
        assert group.partition_assignor == "range"
        assert [m.host for m in group.members] == ["/127.0.0.1"]
        assert {tp.partition for tp in group.members[0].assignment.topic_partitions} == {0, 1}
        assert leave(c, stable, member.member_id).error_code == 0
        until(lambda: describe(c, stable).group_state == "Empty", 10, "an empty group")
        ck.delete_consumer_groups([stable])[stable].result()
        assert describe(c, stable).group_state == "Dead"
