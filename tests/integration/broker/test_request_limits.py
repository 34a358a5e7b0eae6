"""Per-request limits of the admin APIs: Kafka's controller refuses a CreateTopics request for
more than 10,000 partitions in all with POLICY_VIOLATION for every topic, validate_only or not;
Brook applies the same bound to the partitions a CreatePartitions request adds."""

from __future__ import annotations

from typing import Any

import pytest
from rawclient import RawClient, create_topic
from support import BrookProcess

from brook.protocol.errors import Errors

MESSAGE = "Excessively large number of partitions per request."


def _create(c: RawClient, topics: dict[str, int], validate_only: bool) -> list[Any]:
    resp = c.request(
        19,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": count,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
                for name, count in topics.items()
            ],
            "timeout": 30000,
            "validate_only": validate_only,
        },
    )
    return list(resp.topics)


def _grow(c: RawClient, topics: dict[str, int], validate_only: bool) -> list[Any]:
    resp = c.request(
        37,
        3,
        {
            "topics": [
                {"name": name, "count": count, "assignments": None}
                for name, count in topics.items()
            ],
            "timeout": 30000,
            "validate_only": validate_only,
        },
    )
    return list(resp.results)


def _partitions(c: RawClient, name: str) -> int | None:
    resp = c.request(
        3,
        12,
        {
            "topics": [{"name": name, "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    topic = resp.topics[0]
    return None if topic.error_code else len(topic.partitions)


@pytest.mark.parametrize("validate_only", [True, False])
def test_create_topics_over_ten_thousand_partitions(
    brook_session: BrookProcess, unique_topic: str, validate_only: bool
) -> None:
    with RawClient(brook_session.bootstrap, timeout=60) as c:
        [huge] = _create(c, {unique_topic: 100_000}, validate_only)
        assert (huge.error_code, huge.error_message) == (Errors.POLICY_VIOLATION, MESSAGE)
        names = {f"{unique_topic}-a": 6000, f"{unique_topic}-b": 4001}
        results = _create(c, names, validate_only)
        assert [(t.name, t.error_code, t.error_message) for t in results] == [
            (name, Errors.POLICY_VIOLATION, MESSAGE) for name in names
        ]
        assert all(_partitions(c, name) is None for name in [unique_topic, *names])
        # at the limit the request goes through
        [ok] = _create(c, {f"{unique_topic}-c": 10_000}, True)
        assert ok.error_code == 0 and ok.num_partitions == 10_000


@pytest.mark.parametrize("validate_only", [True, False])
def test_create_partitions_over_ten_thousand_new_partitions(
    brook_session: BrookProcess, unique_topic: str, validate_only: bool
) -> None:
    with RawClient(brook_session.bootstrap, timeout=60) as c:
        create_topic(c, unique_topic, partitions=2)
        [huge] = _grow(c, {unique_topic: 100_000}, validate_only)
        assert (huge.error_code, huge.error_message) == (Errors.POLICY_VIOLATION, MESSAGE)
        assert _partitions(c, unique_topic) == 2
        [ok] = _grow(c, {unique_topic: 4}, validate_only)
        assert ok.error_code == 0
        assert _partitions(c, unique_topic) == (2 if validate_only else 4)
