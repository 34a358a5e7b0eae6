"""The group APIs over raw requests against a real broker: the flows clients rely on and the
exact Kafka error codes that client libraries hide behind retries and exceptions."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from group_support import (
    OVERRIDES,
    assignment,
    commit,
    committed,
    describe,
    fetch_offsets,
    fetch_offsets_groups,
    find_coordinator,
    heartbeat,
    join,
    leave,
    list_groups,
    parse_assignment,
    ready,
    sync,
)
from rawclient import RawClient, create_topic
from support import BrookProcess

from brook.protocol.errors import Errors


@pytest.fixture
def group() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def topic(groups_brook: BrookProcess) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    with RawClient(groups_brook.bootstrap) as c:
        create_topic(c, name, partitions=3)
    return name


def stable_member(c: RawClient, group: str, topic: str, version: int = 5) -> tuple[str, int]:
    """Join ``group`` alone and sync; returns (member id, generation)."""
    resp = join(c, group, version=version, topics=(topic,))
    if resp.error_code == Errors.MEMBER_ID_REQUIRED:
        resp = join(c, group, resp.member_id, version=version, topics=(topic,))
    assert resp.error_code == 0, resp
    assert resp.leader == resp.member_id
    got = sync(
        c,
        group,
        resp.member_id,
        resp.generation_id,
        {resp.member_id: assignment({topic: [0, 1, 2]})},
    )
    assert got.error_code == 0, got
    assert parse_assignment(got.assignment) == {(topic, 0), (topic, 1), (topic, 2)}
    return resp.member_id, resp.generation_id


def test_find_coordinator_every_version(groups_brook: BrookProcess, group: str) -> None:
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        for version in range(4):
            resp = find_coordinator(c, group, version)
            assert (resp.error_code, resp.node_id, resp.port) == (0, 1, groups_brook.port)
        resp = find_coordinator(c, group, 4)
        [coordinator] = resp.coordinators
        assert (coordinator.key, coordinator.error_code, coordinator.port) == (
            group,
            0,
            groups_brook.port,
        )
        resp = c.request(10, 6, {"key_type": 0, "coordinator_keys": ["a", "b", "c"]})
        assert [x.key for x in resp.coordinators] == ["a", "b", "c"]
        assert all(x.error_code == 0 and x.node_id == 1 for x in resp.coordinators)
        txn = c.request(10, 4, {"key_type": 1, "coordinator_keys": ["tx"]}).coordinators[0]
        assert (txn.error_code, txn.node_id) == (Errors.NONE, 1)  # the transaction coordinator
        meta = c.request(
            3, 4, {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": False}
        )
        [offsets_topic] = meta.topics
        assert offsets_topic.error_code == 0
        assert offsets_topic.is_internal
        assert len(offsets_topic.partitions) == 4


def test_join_v0_member_flow(groups_brook: BrookProcess, group: str, topic: str) -> None:
    """Old clients (JoinGroup v0, as older librdkafka sends) join without MEMBER_ID_REQUIRED."""
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        started = time.monotonic()
        resp = c.request(
            11,
            0,
            {
                "group_id": group,
                "session_timeout": 6000,
                "member_id": "",
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00"}],
            },
        )
        assert resp.error_code == 0
        # A new group's first rebalance waits group.initial.rebalance.delay.ms for members.
        assert (
            time.monotonic() - started >= int(OVERRIDES["group.initial.rebalance.delay.ms"]) / 1000
        )
        assert resp.member_id.startswith("raw-")
        assert (resp.generation_id, resp.leader, resp.protocol_name) == (
            1,
            resp.member_id,
            "range",
        )
        member, gen = resp.member_id, resp.generation_id
        got = c.request(
            14,
            0,
            {
                "group_id": group,
                "generation_id": gen,
                "member_id": member,
                "assignments": [{"member_id": member, "assignment": b"A"}],
            },
        )
        assert (got.error_code, got.assignment) == (0, b"A")
        assert (
            c.request(
                12, 0, {"group_id": group, "generation_id": gen, "member_id": member}
            ).error_code
            == 0
        )
        assert commit(
            c, group, {(topic, 0): (5, "v0")}, member_id=member, generation=gen, version=2
        ) == {(topic, 0): 0}
        assert committed(c, group) == {(topic, 0): (5, "v0")}
        assert c.request(13, 0, {"group_id": group, "member_id": member}).error_code == 0
        d = describe(c, group)
        assert (d.group_state, d.protocol_type, list(d.members)) == ("Empty", "consumer", [])


def test_member_id_required_only_from_v4(groups_brook: BrookProcess, group: str) -> None:
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        for version in (1, 2, 3):
            old_group = f"{group}-v{version}"
            ready(c, old_group)
            resp = join(c, old_group, version=version)
            assert resp.error_code == 0, (version, resp)
        first = join(c, group, version=4)
        assert first.error_code == Errors.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("raw-")
        second = join(c, group, first.member_id, version=4)
        assert second.error_code == 0
        assert second.member_id == first.member_id


def test_generation_fencing_and_unknown_members(
    groups_brook: BrookProcess, group: str, topic: str
) -> None:
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        member, gen = stable_member(c, group, topic)
        assert heartbeat(c, group, member, gen) == 0
        assert heartbeat(c, group, member, gen - 1) == Errors.ILLEGAL_GENERATION
        assert heartbeat(c, group, "nobody", gen) == Errors.UNKNOWN_MEMBER_ID
        assert sync(c, group, member, gen + 1).error_code == Errors.ILLEGAL_GENERATION
        assert sync(c, group, "nobody", gen).error_code == Errors.UNKNOWN_MEMBER_ID
        stale = commit(c, group, {(topic, 0): (1, None)}, member_id=member, generation=gen - 1)
        assert stale == {(topic, 0): Errors.ILLEGAL_GENERATION}
        unknown = commit(c, group, {(topic, 0): (1, None)}, member_id="x", generation=gen)
        assert unknown == {(topic, 0): Errors.UNKNOWN_MEMBER_ID}
        outsider = commit(c, group, {(topic, 0): (1, None)})
        assert outsider == {(topic, 0): Errors.UNKNOWN_MEMBER_ID}
        assert join(c, group, "nobody", topics=(topic,)).error_code == Errors.UNKNOWN_MEMBER_ID
        assert leave(c, group, "nobody").error_code == Errors.UNKNOWN_MEMBER_ID
        assert leave(c, group, member).error_code == 0
        assert heartbeat(c, group, member, gen) == Errors.UNKNOWN_MEMBER_ID


def test_commit_metadata_comes_back(groups_brook: BrookProcess, group: str, topic: str) -> None:
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        member, gen = stable_member(c, group, topic)
        codes = commit(
            c,
            group,
            {(topic, 0): (10, "first"), (topic, 1): (20, None), (topic, 2): (30, "x" * 5000)},
            member_id=member,
            generation=gen,
            version=9,
        )
        assert codes == {
            (topic, 0): 0,
            (topic, 1): 0,
            (topic, 2): Errors.OFFSET_METADATA_TOO_LARGE,
        }
        assert committed(c, group) == {(topic, 0): (10, "first"), (topic, 1): (20, "")}
        v1 = fetch_offsets(c, group, {topic: [0, 2]}, version=1)
        assert [
            (p.partition_index, p.committed_offset, p.metadata, p.error_code)
            for p in v1.topics[0].partitions
        ] == [(0, 10, "first", 0), (2, -1, "", 0)]
        multi = fetch_offsets_groups(c, {group: {topic: [0]}, "no-such-group": None}, version=8)
        by_group = {g.group_id: g for g in multi.groups}
        assert by_group[group].topics[0].partitions[0].metadata == "first"
        assert (by_group["no-such-group"].error_code, list(by_group["no-such-group"].topics)) == (
            0,
            [],
        )
        v9 = fetch_offsets_groups(c, {group: None}, version=9)
        assert {p.partition_index for p in v9.groups[0].topics[0].partitions} == {0, 1}
        unknown_topic = commit(
            c, group, {("no-such-topic", 0): (1, None)}, member_id=member, generation=gen
        )
        assert unknown_topic == {("no-such-topic", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}


def test_unknown_group(groups_brook: BrookProcess, group: str, topic: str) -> None:
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        assert heartbeat(c, group, "m", 1) == Errors.UNKNOWN_MEMBER_ID
        assert sync(c, group, "m", 1).error_code == Errors.UNKNOWN_MEMBER_ID
        assert join(c, group, "m").error_code == Errors.UNKNOWN_MEMBER_ID
        assert commit(c, group, {(topic, 0): (1, None)}, member_id="m", generation=1) == {
            (topic, 0): Errors.ILLEGAL_GENERATION
        }
        assert commit(
            c, group, {(topic, 0): (1, None)}, member_id="m", generation=1, version=9
        ) == {(topic, 0): Errors.GROUP_ID_NOT_FOUND}
        offsets = fetch_offsets(c, group, {topic: [0]})
        assert offsets.topics[0].partitions[0].committed_offset == -1
        d = describe(c, group)
        assert (d.error_code, d.group_state, list(d.members)) == (0, "Dead", [])
        deleted = c.request(42, 2, {"groups_names": [group]}).results[0]
        assert deleted.error_code == Errors.GROUP_ID_NOT_FOUND
        od = c.request(
            47,
            0,
            {
                "group_id": group,
                "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}],
            },
        )
        assert od.error_code == Errors.GROUP_ID_NOT_FOUND


def test_bad_join_input(groups_brook: BrookProcess, group: str, topic: str) -> None:
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        assert join(c, group, session_ms=100).error_code == Errors.INVALID_SESSION_TIMEOUT
        assert join(c, "").error_code == Errors.INVALID_GROUP_ID
        assert join(c, group, protocols=[]).error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
        stable_member(c, group, topic)
        other = join(c, group, protocol_type="connect", version=3)
        assert other.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
        sticky = join(c, group, protocols=[("sticky", b"")], version=3)
        assert sticky.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
        assert heartbeat(c, "", "m", 1) == Errors.INVALID_GROUP_ID


def test_two_members_split_partitions_and_rebalance(
    groups_brook: BrookProcess, group: str, topic: str
) -> None:
    with RawClient(groups_brook.bootstrap) as a, RawClient(groups_brook.bootstrap) as b:
        ready(a, group)
        results: dict[str, Any] = {}

        def join_b() -> None:
            results["b"] = join(b, group, version=3, topics=(topic,))

        thread = threading.Thread(target=join_b)
        thread.start()
        ra = join(a, group, version=3, topics=(topic,))
        thread.join(10)
        rb = results["b"]
        assert ra.generation_id == rb.generation_id == 1
        leader, follower = (a, b) if ra.leader == ra.member_id else (b, a)
        lead = ra if ra.leader == ra.member_id else rb
        other = rb if lead is ra else ra
        assert {m.member_id for m in lead.members} == {ra.member_id, rb.member_id}
        assert list(other.members) == []
        plan = {
            lead.member_id: assignment({topic: [0, 1]}),
            other.member_id: assignment({topic: [2]}),
        }

        def sync_follower() -> None:
            results["sync"] = sync(follower, group, other.member_id, 1)

        thread = threading.Thread(target=sync_follower)
        thread.start()
        mine = sync(leader, group, lead.member_id, 1, plan)
        thread.join(10)
        assert parse_assignment(mine.assignment) == {(topic, 0), (topic, 1)}
        assert parse_assignment(results["sync"].assignment) == {(topic, 2)}
        d = describe(a, group)
        assert d.group_state == "Stable" and len(d.members) == 2
        assert {m.client_host for m in d.members} == {"/127.0.0.1"}
        # The follower leaves: the leader learns it from its heartbeat and rejoins alone.
        assert leave(follower, group, other.member_id).error_code == 0
        assert heartbeat(leader, group, lead.member_id, 1) == Errors.REBALANCE_IN_PROGRESS
        again = join(leader, group, lead.member_id, version=3, topics=(topic,))
        assert (again.error_code, again.generation_id, len(again.members)) == (0, 2, 1)


def test_static_member_fencing(groups_brook: BrookProcess, group: str, topic: str) -> None:
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        first = join(c, group, version=5, instance="inst-1", topics=(topic,))
        assert first.error_code == 0
        member, gen = first.member_id, first.generation_id
        assert sync(c, group, member, gen, {member: b"A"}, instance="inst-1").error_code == 0
        # The same instance restarts: new member id, same generation, no rebalance.
        again = join(c, group, version=5, instance="inst-1", topics=(topic,))
        assert again.error_code == 0
        assert again.member_id != member
        assert again.generation_id == gen
        # Before v9, a returning leader is told the previous leader id so it does not assign.
        assert again.leader == member
        assert describe(c, group).group_state == "Stable"
        assert heartbeat(c, group, member, gen, "inst-1") == Errors.FENCED_INSTANCE_ID
        assert heartbeat(c, group, again.member_id, gen, "inst-1") == 0
        got = sync(c, group, again.member_id, gen, instance="inst-1")
        assert (got.error_code, got.assignment) == (0, b"A")
        v9 = join(c, group, version=9, instance="inst-1", topics=(topic,))
        assert (v9.error_code, v9.leader, v9.skip_assignment) == (0, v9.member_id, True)


def test_list_describe_delete_and_offset_delete(
    groups_brook: BrookProcess, group: str, topic: str
) -> None:
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        member, gen = stable_member(c, group, topic)
        listed = {g.group_id: g for g in list_groups(c).groups}
        assert (listed[group].protocol_type, listed[group].group_state) == ("consumer", "Stable")
        assert group not in {g.group_id for g in list_groups(c, ["empty"]).groups}
        assert group in {g.group_id for g in list_groups(c, ["STABLE"]).groups}
        d = describe(c, group)
        assert (d.group_state, d.protocol_data) == ("Stable", "range")
        assert [m.member_id for m in d.members] == [member]
        assert d.members[0].client_id == "raw"
        assert d.authorized_operations > 0
        commit(
            c,
            group,
            {(topic, 0): (1, None), (topic, 1): (2, None)},
            member_id=member,
            generation=gen,
        )
        assert c.request(42, 2, {"groups_names": [group]}).results[0].error_code == (
            Errors.NON_EMPTY_GROUP
        )
        od = c.request(
            47,
            0,
            {
                "group_id": group,
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": 0}]},
                    {"name": "no-such-topic", "partitions": [{"partition_index": 0}]},
                ],
            },
        )
        assert od.error_code == 0
        codes = {(t.name, p.partition_index): p.error_code for t in od.topics for p in t.partitions}
        assert codes == {
            (topic, 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC,
            ("no-such-topic", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert leave(c, group, member).error_code == 0
        od = c.request(
            47,
            0,
            {
                "group_id": group,
                "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}],
            },
        )
        assert (od.error_code, od.topics[0].partitions[0].error_code) == (0, 0)
        assert committed(c, group) == {(topic, 1): (2, "")}
        assert c.request(42, 2, {"groups_names": [group]}).results[0].error_code == 0
        assert describe(c, group).group_state == "Dead"
        assert committed(c, group) == {}


def test_batched_leave_group(groups_brook: BrookProcess, group: str, topic: str) -> None:
    """LeaveGroup v3+: several members at once, each with its own answer; a static member can
    be removed by its group.instance.id alone (administrative removal)."""
    with RawClient(groups_brook.bootstrap) as c:
        ready(c, group)
        static = join(c, group, version=5, instance="inst-a", topics=(topic,))
        assert static.error_code == 0
        assert sync(c, group, static.member_id, static.generation_id, instance="inst-a")
        assert describe(c, group).group_state == "Stable"
        resp = c.request(
            13,
            5,
            {
                "group_id": group,
                "members": [
                    {"member_id": "", "group_instance_id": "inst-a", "reason": "admin"},
                    {"member_id": "ghost", "group_instance_id": None, "reason": None},
                    {"member_id": "", "group_instance_id": "inst-unknown", "reason": None},
                ],
            },
        )
        assert resp.error_code == 0
        assert [(m.member_id, m.group_instance_id, m.error_code) for m in resp.members] == [
            ("", "inst-a", 0),
            ("ghost", None, Errors.UNKNOWN_MEMBER_ID),
            ("", "inst-unknown", Errors.UNKNOWN_MEMBER_ID),
        ]
        assert describe(c, group).group_state == "Empty"
