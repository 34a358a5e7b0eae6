"""The offsets topic's creation rule: never with fewer replicas than configured."""

from __future__ import annotations

from brook.broker.group.offsets_topic import OFFSETS, offsets_topic_spec
from brook.config.server import parse_server_config


def test_too_few_brokers_is_kafkas_message() -> None:
    assert OFFSETS.too_few_brokers(3, 3) is None
    assert OFFSETS.too_few_brokers(4, 3) is None
    assert OFFSETS.too_few_brokers(1, 3) == (
        "Number of alive brokers '1' does not meet the required replication factor '3' for "
        "the offsets topic (configured via 'offsets.topic.replication.factor'). This error "
        "can be ignored if the cluster is starting up and not all brokers are up yet."
    )


def test_spec_takes_the_configured_factor() -> None:
    spec = offsets_topic_spec(parse_server_config({"offsets.topic.num.partitions": "7"}))
    assert (spec.name, spec.num_partitions, spec.replication_factor) == ("__consumer_offsets", 7, 3)
    assert spec.configs["cleanup.policy"] == "compact"
