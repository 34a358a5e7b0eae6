"""A request that would create more than 10,000 partitions is refused whole with
POLICY_VIOLATION, as Kafka's controller refuses it, before any placement is computed (placing
2^31 partitions would exhaust memory first: tests/integration/broker/test_malformed_frames.py
sends that to a real broker)."""

from __future__ import annotations

import random

from brook.config.server import parse_server_config
from brook.metadata.controller import MAX_PARTITIONS_PER_REQUEST, Controller, CreateTopicSpec
from brook.metadata.image import MetadataImage
from brook.metadata.records import Endpoint, RegisterBrokerRecord
from brook.protocol.errors import Errors


def _controller() -> Controller:
    image = MetadataImage()
    image.apply(RegisterBrokerRecord(1, "x", 1, (Endpoint("PLAINTEXT", "h", 9001),)), 1)
    return Controller(image, parse_server_config({}), random.Random(1))


def test_create_topics_over_the_limit_fails_every_topic_of_the_request() -> None:
    c = _controller()
    specs = [
        CreateTopicSpec("small", num_partitions=1),
        CreateTopicSpec("big", num_partitions=MAX_PARTITIONS_PER_REQUEST),
    ]
    decision = c.create_topics(specs)
    assert decision.records == []
    assert [r.error_code for r in decision.results] == [Errors.POLICY_VIOLATION] * 2
    assert {r.error_message for r in decision.results} == {
        "Excessively large number of partitions per request."
    }
    assert [r.name for r in decision.results] == ["small", "big"]


def test_create_topics_at_the_limit_is_served() -> None:
    c = _controller()
    decision = c.create_topics(
        [CreateTopicSpec("t", num_partitions=MAX_PARTITIONS_PER_REQUEST)], validate_only=True
    )
    assert decision.results[0].ok
    assert decision.results[0].num_partitions == MAX_PARTITIONS_PER_REQUEST


def test_create_partitions_over_the_limit_fails_the_whole_request() -> None:
    c = _controller()
    for record in c.create_topics([CreateTopicSpec("t", num_partitions=1)]).records:
        c.image.apply(record, c.image.offset + 1)
    decision = c.create_partitions([("t", 2, None), ("t", 2 + MAX_PARTITIONS_PER_REQUEST, None)])
    assert decision.records == []
    assert [o.error_code for o in decision.results] == [Errors.POLICY_VIOLATION] * 2
    assert decision.results[0].error_message == (
        "Unable to perform excessively large batch operation."
    )
    # one at the limit goes through
    ok = c.create_partitions([("t", 1 + MAX_PARTITIONS_PER_REQUEST, None)], validate_only=True)
    assert ok.results[0].ok
