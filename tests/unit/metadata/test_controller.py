"""Controller decisions: Kafka's validation and error codes, replica placement, configs."""

from __future__ import annotations

import random
import uuid

import pytest

from brook.config.server import parse_server_config
from brook.metadata.controller import (
    MAX_PARTITIONS_PER_BATCH,
    ConfigOp,
    Controller,
    CreateTopicSpec,
    OpType,
)
from brook.metadata.image import MetadataImage
from brook.metadata.records import (
    ConfigResourceType,
    Endpoint,
    RegisterBrokerRecord,
    TopicRecord,
)
from brook.metadata.topics import place_replicas, topic_name_error
from brook.protocol.errors import Errors


def _cluster(brokers: int = 3, **server: str) -> Controller:
    image = MetadataImage()
    for b in range(1, brokers + 1):
        ep = (Endpoint("PLAINTEXT", "h", 9000 + b),)
        image.apply(RegisterBrokerRecord(b, uuid.uuid4(), b, ep, fenced=False), b)
    return Controller(image, parse_server_config(server), random.Random(1))


def _commit(controller: Controller, decision) -> None:  # type: ignore[no-untyped-def]
    for i, record in enumerate(decision.records):
        controller.image.apply(record, controller.image.offset + 1 + i)


def test_create_topic_records_and_defaults() -> None:
    c = _cluster(3, **{"num.partitions": "4", "default.replication.factor": "2"})
    d = c.create_topics([CreateTopicSpec("orders", configs={"retention.ms": "1000"})])
    result = d.results[0]
    assert result.ok and result.num_partitions == 4 and result.replication_factor == 2
    _commit(c, d)
    topic = c.image.topics["orders"]
    assert topic.topic_id == result.topic_id and len(topic.partitions) == 4
    assert all(
        len(p.replicas) == 2 and p.leader == p.replicas[0] for p in topic.partitions.values()
    )
    assert c.image.topic_configs("orders") == {"retention.ms": "1000"}


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        (CreateTopicSpec("bad name"), Errors.INVALID_TOPIC_EXCEPTION),
        (CreateTopicSpec("x" * 250), Errors.INVALID_TOPIC_EXCEPTION),
        (CreateTopicSpec(".."), Errors.INVALID_TOPIC_EXCEPTION),
        (CreateTopicSpec("t", num_partitions=0), Errors.INVALID_PARTITIONS),
        (CreateTopicSpec("t", replication_factor=0), Errors.INVALID_REPLICATION_FACTOR),
        (CreateTopicSpec("t", replication_factor=4), Errors.INVALID_REPLICATION_FACTOR),
        (CreateTopicSpec("t", configs={"no.such": "1"}), Errors.INVALID_CONFIG),
        (CreateTopicSpec("t", configs={"retention.ms": "abc"}), Errors.INVALID_CONFIG),
        (CreateTopicSpec("t", configs={"cleanup.policy": "shred"}), Errors.INVALID_CONFIG),
        (
            CreateTopicSpec("t", replication_factor=3, configs={"quorum.required.acks": "3"}),
            Errors.INVALID_CONFIG,
        ),
        (CreateTopicSpec("t", num_partitions=1, assignments={0: [1]}), Errors.INVALID_REQUEST),
        (CreateTopicSpec("t", assignments={0: [1], 2: [2]}), Errors.INVALID_REPLICA_ASSIGNMENT),
        (CreateTopicSpec("t", assignments={0: [9]}), Errors.INVALID_REPLICA_ASSIGNMENT),
        (CreateTopicSpec("t", assignments={0: [1, 1]}), Errors.INVALID_REPLICA_ASSIGNMENT),
    ],
)
def test_create_topic_errors(spec: CreateTopicSpec, code: int) -> None:
    d = _cluster().create_topics([spec])
    assert d.results[0].error_code == code and d.results[0].error_message
    assert not d.records


def test_exists_collides_and_validate_only() -> None:
    c = _cluster()
    _commit(c, c.create_topics([CreateTopicSpec("a.b")]))
    assert (
        c.create_topics([CreateTopicSpec("a.b")]).results[0].error_code
        == Errors.TOPIC_ALREADY_EXISTS
    )
    assert (
        c.create_topics([CreateTopicSpec("a_b")]).results[0].error_code
        == Errors.INVALID_TOPIC_EXCEPTION
    )
    d = c.create_topics([CreateTopicSpec("new")], validate_only=True)
    assert d.results[0].ok and not d.records


def test_delete_and_create_partitions() -> None:
    c = _cluster()
    _commit(c, c.create_topics([CreateTopicSpec("t", num_partitions=2, replication_factor=1)]))
    assert c.create_partitions([("t", 2, None)]).results[0].error_code == Errors.INVALID_PARTITIONS
    assert c.create_partitions([("t", 1, None)]).results[0].error_code == Errors.INVALID_PARTITIONS
    assert (
        c.create_partitions([("u", 5, None)]).results[0].error_code
        == Errors.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert (
        c.create_partitions([("t", 4, [[1]])]).results[0].error_code
        == Errors.INVALID_REPLICA_ASSIGNMENT
    )
    d = c.create_partitions([("t", 4, [[1], [2]])])
    assert d.results[0].ok
    _commit(c, d)
    assert sorted(c.image.topics["t"].partitions) == [0, 1, 2, 3]
    assert c.image.topics["t"].partitions[3].replicas == (2,)
    d = c.delete_topics(["t", "nope", None], [None, None, uuid.uuid4()])
    assert [o.error_code for _, _, o in d.results] == [
        Errors.NONE,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
    ]
    _commit(c, d)
    assert "t" not in c.image.topics


def test_incremental_config_ops() -> None:
    c = _cluster()
    _commit(c, c.create_topics([CreateTopicSpec("t")]))
    topic = ConfigResourceType.TOPIC
    d = c.alter_configs(
        [
            (
                topic,
                "t",
                [
                    ConfigOp("retention.ms", OpType.SET, "5"),
                    ConfigOp("cleanup.policy", OpType.APPEND, "compact"),
                ],
            )
        ],
        incremental=True,
    )
    assert d.results[0].ok
    _commit(c, d)
    assert c.image.topic_configs("t") == {"retention.ms": "5", "cleanup.policy": "delete,compact"}
    d = c.alter_configs(
        [
            (
                topic,
                "t",
                [
                    ConfigOp("cleanup.policy", OpType.SUBTRACT, "delete"),
                    ConfigOp("retention.ms", OpType.DELETE, None),
                ],
            )
        ],
        True,
    )
    _commit(c, d)
    assert c.image.topic_configs("t") == {"cleanup.policy": "compact"}
    bad = c.alter_configs([(topic, "t", [ConfigOp("retention.ms", OpType.APPEND, "1")])], True)
    assert bad.results[0].error_code == Errors.INVALID_CONFIG
    missing = c.alter_configs([(topic, "zz", [ConfigOp("retention.ms", OpType.SET, "1")])], True)
    assert missing.results[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    legacy = c.alter_configs([(topic, "t", [ConfigOp("segment.ms", OpType.SET, "100")])], False)
    _commit(c, legacy)
    assert c.image.topic_configs("t") == {"segment.ms": "100"}
    broker = c.alter_configs(
        [(ConfigResourceType.BROKER, "", [ConfigOp("log.retention.ms", OpType.SET, "60000")])], True
    )
    assert broker.results[0].ok
    refused = c.alter_configs(
        [(ConfigResourceType.BROKER, "", [ConfigOp("listeners", OpType.SET, "PLAINTEXT://:1")])],
        True,
    )
    assert refused.results[0].error_code == Errors.INVALID_REQUEST
    assert refused.results[0].error_message == (
        "Cannot update these configs dynamically: Set(listeners)"
    )


def test_dynamic_broker_configs_are_checked_as_kafka_checks_them() -> None:
    """The fault delays are dynamic; a value a node could not parse is refused with Kafka's
    INVALID_REQUEST (DynamicBrokerConfig's ConfigException) and nothing is written."""
    c = _cluster()
    broker = ConfigResourceType.BROKER
    ok = c.alter_configs(
        [
            (broker, "2", [ConfigOp("brook.fault.produce.delay.ms", OpType.SET, "200")]),
            (broker, "", [ConfigOp("brook.fault.follower.fetch.delay.ms", OpType.SET, "50")]),
        ],
        True,
    )
    assert [r.error_code for r in ok.results] == [Errors.NONE, Errors.NONE]
    _commit(c, ok)
    assert c.image.broker_configs(2) == {"brook.fault.produce.delay.ms": "200"}
    assert c.image.broker_configs("") == {"brook.fault.follower.fetch.delay.ms": "50"}
    for name, value, message in [
        (
            "brook.fault.produce.delay.ms",
            "-1",
            "Invalid value -1 for configuration brook.fault.produce.delay.ms: must be >= 0",
        ),
        ("brook.fault.follower.fetch.delay.ms", "soon", "brook.fault.follower.fetch.delay.ms"),
        ("log.retention.ms", "a week", "log.retention.ms"),
    ]:
        bad = c.alter_configs([(broker, "2", [ConfigOp(name, OpType.SET, value)])], True)
        assert bad.results[0].error_code == Errors.INVALID_REQUEST, (name, value)
        assert message in (bad.results[0].error_message or "")
        assert bad.records == []
    assert c.image.broker_configs(2) == {"brook.fault.produce.delay.ms": "200"}


def test_elections_and_reassignments() -> None:
    c = _cluster()
    _commit(c, c.create_topics([CreateTopicSpec("t", assignments={0: [1, 2]})]))
    d = c.elect_leaders(0, [("t", 0), ("t", 9)])
    assert [o.error_code for _, _, o in d.results] == [
        Errors.ELECTION_NOT_NEEDED,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    d = c.alter_partition_reassignments([("t", 0, [2, 3])])
    assert d.results[0][2].ok
    _commit(c, d)
    info = c.image.partition("t", 0)
    assert info is not None and info.adding_replicas == (3,) and info.removing_replicas == (1,)
    assert c.list_partition_reassignments(None) == [("t", 0, (2, 3, 1), (3,), (1,))]
    d = c.alter_partition_reassignments([("t", 0, None)])
    _commit(c, d)
    info = c.image.partition("t", 0)
    assert info is not None and set(info.replicas) == {1, 2} and not info.adding_replicas


def test_max_broker_partitions_refuses_what_a_broker_cannot_host() -> None:
    """KIP-578's per-broker limit, with Kafka's policy error: counted over every topic
    (internal ones too) and over the request's earlier topics; a refused topic writes no
    record, validate_only included."""
    c = _cluster(1, **{"max.broker.partitions": "10"})
    _commit(c, c.create_topics([CreateTopicSpec("__consumer_offsets", num_partitions=3)]))
    d = c.create_topics(
        [
            CreateTopicSpec("fits", num_partitions=5),
            CreateTopicSpec("too-many", num_partitions=3),
            CreateTopicSpec("still-fits", num_partitions=2),
        ]
    )
    codes = [r.error_code for r in d.results]
    assert codes == [Errors.NONE, Errors.POLICY_VIOLATION, Errors.NONE]
    message = d.results[1].error_message
    assert "max.broker.partitions=10" in message and "hosts 8" in message
    _commit(c, d)
    assert "too-many" not in c.image.topics and len(c.image.topics["still-fits"].partitions) == 2
    full = c.create_topics([CreateTopicSpec("one-more", num_partitions=1)], validate_only=True)
    assert full.results[0].error_code == Errors.POLICY_VIOLATION and not full.records
    grown = c.create_partitions([("fits", 6, None)])
    assert grown.results[0].error_code == Errors.POLICY_VIOLATION and not grown.records


def test_max_broker_partitions_is_per_broker() -> None:
    c = _cluster(2, **{"max.broker.partitions": "4"})
    d = c.create_topics([CreateTopicSpec("t", num_partitions=4, replication_factor=2)])
    assert d.results[0].error_code == Errors.NONE
    _commit(c, d)
    moved = c.create_topics([CreateTopicSpec("u", assignments={0: [1]})])
    assert moved.results[0].error_code == Errors.POLICY_VIOLATION
    assert "to broker 1" in moved.results[0].error_message
    c = _cluster(3, **{"max.broker.partitions": "1"})
    _commit(c, c.create_topics([CreateTopicSpec("a", assignments={0: [1]})]))
    _commit(c, c.create_topics([CreateTopicSpec("b", assignments={0: [2]})]))
    d = c.alter_partition_reassignments([("a", 0, [1, 2]), ("a", 0, [1, 3])])
    assert [o.error_code for _, _, o in d.results] == [Errors.POLICY_VIOLATION, Errors.NONE]


def test_placement_is_balanced() -> None:
    plan = place_replicas([1, 2, 3], 6, 3, rng=random.Random(3))
    leaders = [r[0] for r in plan]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    assert all(len(set(r)) == 3 for r in plan)


def test_topic_names() -> None:
    assert topic_name_error("ok.name_1-2") is None
    assert topic_name_error("") and topic_name_error("a/b") and topic_name_error(".")


def test_internal_topics_are_the_nodes_own() -> None:
    c = _cluster()
    for name in ("__consumer_offsets", "__transaction_state", "__cluster_metadata"):
        d = c.create_topics([CreateTopicSpec(name)], internal_topics_allowed=False)
        assert (d.results[0].error_code, d.results[0].error_message) == (
            Errors.INVALID_REQUEST,
            f"Creation of internal topic {name} is prohibited.",
        )
        assert not d.records
    # the group coordinator creates __consumer_offsets itself
    d = c.create_topics([CreateTopicSpec("__consumer_offsets", num_partitions=3)])
    assert d.results[0].ok
    _commit(c, d)
    d = c.delete_topics(["__consumer_offsets"], [None])
    assert d.results[0][2].error_code == Errors.INVALID_TOPIC_EXCEPTION and not d.records
    topic_id = c.image.topics["__consumer_offsets"].topic_id
    d = c.delete_topics([None], [topic_id])
    assert d.results[0][2].error_code == Errors.INVALID_TOPIC_EXCEPTION and not d.records
    for count in (5, 100_000):
        d = c.create_partitions([("__consumer_offsets", count, None)])
        assert d.results[0].error_code == Errors.INVALID_TOPIC_EXCEPTION and not d.records
    d = c.alter_configs(
        [(ConfigResourceType.TOPIC, "__consumer_offsets", [ConfigOp("retention.ms", 0, "1")])],
        incremental=True,
    )
    assert d.results[0].ok  # configs stay alterable, as in Kafka


@pytest.mark.parametrize("validate_only", [False, True])
def test_create_topics_beyond_ten_thousand_partitions_refuses_the_whole_request(
    validate_only: bool,
) -> None:
    c = _cluster(**{"num.partitions": "3"})
    specs = [
        CreateTopicSpec("a", num_partitions=5000),
        CreateTopicSpec("b", num_partitions=4996),
        CreateTopicSpec("c"),  # the default, 3
        CreateTopicSpec("d", assignments={0: [1], 1: [2]}),
        CreateTopicSpec("e", num_partitions=0),  # refused on its own, counts nothing
    ]
    d = c.create_topics(specs, validate_only)  # 5000 + 4996 + 3 + 2 = 10001
    assert [(r.name, r.error_code, r.error_message) for r in d.results] == [
        (s.name, Errors.POLICY_VIOLATION, "Excessively large number of partitions per request.")
        for s in specs
    ]
    assert not d.records
    d = c.create_topics(specs[1:], validate_only)  # 5001: within the limit
    assert [r.error_code for r in d.results] == [0, 0, 0, Errors.INVALID_PARTITIONS]
    # refused before any placement is computed: placing 2^31 - 1 partitions would not end
    d = c.create_topics([CreateTopicSpec("huge", num_partitions=2**31 - 1)], validate_only)
    assert d.results[0].error_code == Errors.POLICY_VIOLATION and not d.records
    d = c.create_topics([CreateTopicSpec("full", num_partitions=MAX_PARTITIONS_PER_BATCH)])
    assert d.results[0].ok and d.results[0].num_partitions == MAX_PARTITIONS_PER_BATCH
    # a repeated name is created once, so it counts once
    twice = [CreateTopicSpec("x", num_partitions=6000)] * 2
    assert [r.error_code for r in c.create_topics(twice, validate_only).results] == [
        0,
        Errors.INVALID_REQUEST,
    ]
    thrice = [*twice, CreateTopicSpec("y", num_partitions=4001)]
    assert {r.error_code for r in c.create_topics(thrice, validate_only).results} == {
        Errors.POLICY_VIOLATION
    }


@pytest.mark.parametrize("validate_only", [False, True])
def test_create_partitions_beyond_ten_thousand_new_partitions_refuses_the_request(
    validate_only: bool,
) -> None:
    c = _cluster()
    _commit(c, c.create_topics([CreateTopicSpec(n, 2, 1) for n in ("t", "u")]))
    d = c.create_partitions([("t", 5002, None), ("u", 5003, None)], validate_only)
    assert [(o.error_code, o.error_message) for o in d.results] == [
        (Errors.POLICY_VIOLATION, "Excessively large number of partitions per request.")
    ] * 2
    assert not d.records
    d = c.create_partitions([("t", 2**31 - 1, None)], validate_only)
    assert d.results[0].error_code == Errors.POLICY_VIOLATION and not d.records
    d = c.create_partitions([("t", 5002, None), ("u", 5002, None)], validate_only)
    assert [o.error_code for o in d.results] == [0, 0]
    assert len(d.records) == (0 if validate_only else 10_000)


@pytest.mark.parametrize("validate_only", [False, True])
def test_the_metadata_topic_name_is_refused(validate_only: bool) -> None:
    """As Kafka's ControllerApis: INVALID_REQUEST, and nothing to commit (the name is the
    metadata log's own directory: a topic under it could never have a log of its own)."""
    c = _cluster(1)
    d = c.create_topics(
        [CreateTopicSpec("__cluster_metadata", 1, 1), CreateTopicSpec("fine", 1, 1)],
        validate_only,
    )
    refused, fine = d.results
    assert (refused.error_code, refused.error_message) == (
        Errors.INVALID_REQUEST,
        "Creation of internal topic __cluster_metadata is prohibited.",
    )
    assert fine.ok
    topics = [r.name for r in d.records if isinstance(r, TopicRecord)]
    assert topics == ([] if validate_only else ["fine"])


def test_quorum_acks_refuses_reassignments_that_break_it_and_unclean_elections() -> None:
    c = _cluster(4)
    d = c.create_topics(
        [
            CreateTopicSpec(
                "q", num_partitions=1, replication_factor=3, configs={"quorum.required.acks": "2"}
            )
        ]
    )
    _commit(c, d)
    shrink = c.alter_partition_reassignments([("q", 0, [1, 2])])
    outcome = shrink.results[0][2]
    assert outcome.error_code == Errors.INVALID_CONFIG and not shrink.records
    assert "quorum.required.acks" in (outcome.error_message or "")
    grow = c.alter_partition_reassignments([("q", 0, [1, 2, 3, 4])])
    assert grow.results[0][2].ok
    unclean = c.elect_leaders(1, [("q", 0)])
    assert unclean.results[0][2].error_code == Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert not unclean.records
    d = c.alter_configs(
        [(ConfigResourceType.TOPIC, "q", [ConfigOp("quorum.required.acks", 0, "3")])],
        incremental=True,
    )
    assert d.results[0].error_code == Errors.INVALID_CONFIG


def test_min_compaction_lag_above_max_is_refused_as_kafka_refuses_it() -> None:
    c = _cluster()
    spec = CreateTopicSpec(
        "t", configs={"min.compaction.lag.ms": "60000", "max.compaction.lag.ms": "1000"}
    )
    result = c.create_topics([spec]).results[0]
    assert result.error_code == Errors.INVALID_CONFIG
    assert result.error_message == (
        "conflict topic config setting min.compaction.lag.ms (60000) > max.compaction.lag.ms (1000)"
    )
    # against the broker's default of the other setting too
    broker = _cluster(**{"log.cleaner.max.compaction.lag.ms": "5000"})
    spec = CreateTopicSpec("t", configs={"min.compaction.lag.ms": "6000"})
    assert broker.create_topics([spec]).results[0].error_code == Errors.INVALID_CONFIG
    _commit(c, c.create_topics([CreateTopicSpec("ok", configs={"min.compaction.lag.ms": "10"})]))
    topic = ConfigResourceType.TOPIC
    bad = c.alter_configs(
        [(topic, "ok", [ConfigOp("max.compaction.lag.ms", OpType.SET, "5")])], True
    )
    assert bad.results[0].error_code == Errors.INVALID_CONFIG
