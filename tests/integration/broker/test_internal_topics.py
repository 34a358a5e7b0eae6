"""Internal topics belong to the node: a client cannot write, delete, create or grow them, and
the group coordinator's own writes to ``__consumer_offsets`` keep working.

Kafka answers a Produce to an internal topic and a DeleteRecords on one with
INVALID_TOPIC_EXCEPTION, and refuses to create ``__cluster_metadata`` with INVALID_REQUEST;
Brook also refuses deleting, creating or growing any internal topic (Kafka leaves those to its
authorizer), and leaves their configs alterable, as Kafka does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_checks import eventually
from rawclient import RawClient, create_topic, produce
from support import BrookProcess

from brook.broker.group.store import (
    OffsetAndMetadata,
    encode_offset_value,
    offset_key,
    partition_for,
)
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch

OFFSETS = "__consumer_offsets"
PARTITIONS = 4
GROUP = "billing"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrookProcess]:
    overrides = {
        "offsets.topic.num.partitions": str(PARTITIONS),
        "auto.create.topics.enable": "false",
    }
    with BrookProcess(tmp_path / "data", overrides) as process:
        yield process


def _coordinator_ready(c: RawClient, group: str) -> bool:
    found = c.request(10, 3, {"key": group, "key_type": 0})
    if found.error_code:
        return False
    probe = c.request(9, 7, {"group_id": group, "topics": None, "require_stable": False})
    return probe.error_code == Errors.NONE


def _commit(c: RawClient, group: str, topic: str, offset: int) -> int:
    resp = c.request(
        8,
        8,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time": -1,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        },
    )
    return int(resp.topics[0].partitions[0].error_code)


def _committed(c: RawClient, group: str, topic: str) -> int:
    resp = c.request(
        9,
        7,
        {
            "group_id": group,
            "topics": [{"name": topic, "partition_indexes": [0]}],
            "require_stable": False,
        },
    )
    assert resp.error_code == 0, resp
    return int(resp.topics[0].partitions[0].committed_offset)


def _forged_commit(group: str, topic: str, offset: int) -> bytes:
    now = int(time.time() * 1000)
    value = encode_offset_value(OffsetAndMetadata(offset, -1, "", now, None))
    return build_simple_batch([(offset_key(group, topic, 0), value)])


def _metadata(c: RawClient, name: str) -> Any:
    resp = c.request(
        3,
        12,
        {
            "topics": [{"name": name, "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    return resp.topics[0]


def test_a_forged_offset_commit_is_refused_and_the_commit_survives_a_restart(
    broker: BrookProcess,
) -> None:
    with RawClient(broker.bootstrap) as c:
        create_topic(c, "invoices")
        assert eventually(lambda: _coordinator_ready(c, GROUP))
        assert _commit(c, GROUP, "invoices", 5) == Errors.NONE
        index = partition_for(GROUP, PARTITIONS)
        for version in (3, 9):
            resp = produce(c, OFFSETS, index, _forged_commit(GROUP, "invoices", 999_999), version)
            part = resp.responses[0].partition_responses[0]
            assert part.error_code == Errors.INVALID_TOPIC_EXCEPTION
            if version >= 8:
                assert part.error_message == f"Cannot append to internal topic {OFFSETS}"
        # acks=0: nothing to answer with, so the connection closes (Kafka's way)
        with RawClient(broker.bootstrap) as quiet:
            produce(quiet, OFFSETS, index, _forged_commit(GROUP, "invoices", 999_999), acks=0)
            assert quiet.is_closed()
        assert _committed(c, GROUP, "invoices") == 5
    broker.restart()
    with RawClient(broker.bootstrap) as c:
        assert eventually(lambda: _coordinator_ready(c, GROUP))
        assert _committed(c, GROUP, "invoices") == 5
        # the coordinator's own writes go on: a real commit still lands and replays
        assert _commit(c, GROUP, "invoices", 7) == Errors.NONE
        assert _committed(c, GROUP, "invoices") == 7
        meta = _metadata(c, OFFSETS)
        assert meta.error_code == 0 and meta.is_internal


def test_clients_cannot_delete_create_or_grow_internal_topics(broker: BrookProcess) -> None:
    with RawClient(broker.bootstrap) as c:
        create_topic(c, "invoices")
        assert eventually(lambda: _coordinator_ready(c, GROUP))
        assert _commit(c, GROUP, "invoices", 5) == Errors.NONE
        offsets_id = _metadata(c, OFFSETS).topic_id

        by_name = c.request(20, 5, {"topic_names": [OFFSETS], "timeout": 5000})
        [result] = by_name.responses
        assert (result.error_code, result.error_message) == (
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Cannot delete internal topic {OFFSETS}",
        )
        by_id = c.request(
            20, 6, {"topics": [{"name": None, "topic_id": offsets_id}], "timeout": 5000}
        )
        assert by_id.responses[0].error_code == Errors.INVALID_TOPIC_EXCEPTION

        for name in (OFFSETS, "__transaction_state", "__cluster_metadata"):
            for validate_only in (False, True):
                created = c.request(
                    19,
                    7,
                    {
                        "topics": [
                            {
                                "name": name,
                                "num_partitions": 1,
                                "replication_factor": 1,
                                "assignments": [],
                                "configs": [],
                            }
                        ],
                        "timeout": 5000,
                        "validate_only": validate_only,
                    },
                )
                [topic] = created.topics
                assert (topic.error_code, topic.error_message) == (
                    Errors.INVALID_REQUEST,
                    f"Creation of internal topic {name} is prohibited.",
                )
        unknown = _metadata(c, "__transaction_state")
        assert unknown.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION and unknown.is_internal

        grown = c.request(
            37,
            3,
            {
                "topics": [{"name": OFFSETS, "count": PARTITIONS + 2, "assignments": None}],
                "timeout": 5000,
                "validate_only": False,
            },
        )
        assert (grown.results[0].error_code, grown.results[0].error_message) == (
            Errors.INVALID_TOPIC_EXCEPTION,
            f"Cannot add partitions to internal topic {OFFSETS}",
        )

        index = partition_for(GROUP, PARTITIONS)
        trimmed = c.request(
            21,
            2,
            {
                "topics": [
                    {"name": OFFSETS, "partitions": [{"partition_index": index, "offset": -1}]}
                ],
                "timeout": 5000,
            },
        )
        assert trimmed.topics[0].partitions[0].error_code == Errors.INVALID_TOPIC_EXCEPTION

        # Configs stay the operator's to tune, as in Kafka.
        altered = c.request(
            44,
            1,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": OFFSETS,
                        "configs": [
                            {"name": "retention.ms", "config_operation": 0, "value": "86400000"}
                        ],
                    }
                ],
                "validate_only": False,
            },
        )
        assert altered.responses[0].error_code == 0

        meta = _metadata(c, OFFSETS)
        assert meta.error_code == 0 and meta.topic_id == offsets_id
        assert len(meta.partitions) == PARTITIONS
        assert _committed(c, GROUP, "invoices") == 5
        assert _commit(c, GROUP, "invoices", 6) == Errors.NONE
        assert _committed(c, GROUP, "invoices") == 6
