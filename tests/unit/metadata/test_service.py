"""The controller shell over a quorum of one: decisions are committed to the metadata log
(fsynced) before they apply, and replaying the log, after a clean stop or a crash, rebuilds
the same image."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from brook.config.server import parse_server_config
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata.controller import ConfigOp, Controller, CreateTopicSpec, OpType
from brook.metadata.image import MetadataImage, PartitionChanged, TopicRemoved
from brook.metadata.quorum import LocalQuorum
from brook.metadata.records import ConfigResourceType, Endpoint
from brook.metadata.service import MetadataService

CONFIG = LogConfig.from_topic_config({"segment.bytes": 4000})


def _service(directory: Path, clean: bool = True) -> tuple[MetadataService, PartitionLog]:
    log = PartitionLog.open(directory, CONFIG, had_clean_shutdown=clean)
    image = MetadataImage()
    controller = Controller(image, parse_server_config({}), random.Random(7))
    return MetadataService(LocalQuorum(log, 1), controller), log


def _snapshot(image: MetadataImage) -> Any:
    return (
        image.cluster_id,
        image.brokers,
        {name: (t.topic_id, t.partitions) for name, t in image.topics.items()},
        image.configs,
        image.next_producer_id,
        image.offset,
    )


async def _populate(service: MetadataService) -> list[Any]:
    changes: list[Any] = []
    service.add_listener(changes.extend)
    await service.bootstrap("cluster-1")
    epoch = await service.register_broker(1, [Endpoint("PLAINTEXT", "127.0.0.1", 9092)], None)
    created = await service.submit(
        lambda c: c.create_topics(
            [
                CreateTopicSpec("orders", 3, 1, configs={"retention.ms": "1000"}),
                CreateTopicSpec("gone"),
            ]
        )
    )
    assert all(r.ok for r in created.results)
    await service.submit(
        lambda c: c.alter_configs(
            [(ConfigResourceType.TOPIC, "orders", [ConfigOp("segment.ms", OpType.SET, "5000")])],
            incremental=True,
        )
    )
    await service.submit(lambda c: c.create_partitions([("orders", 4, None)]))
    await service.submit(lambda c: c.delete_topics(["gone"], [None]))
    for _ in range(30):  # enough records to roll the metadata log's segments
        await service.submit_with(lambda c: c.allocate_producer_ids(1, epoch))
    return changes


@pytest.mark.parametrize("clean", [True, False])
def test_replay_rebuilds_the_image(tmp_path: Path, clean: bool) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    service, log = _service(directory)
    changes = asyncio.run(_populate(service))
    image = service.image
    assert sorted(image.topics) == ["orders"] and len(image.topics["orders"].partitions) == 4
    assert image.topic_configs("orders") == {"retention.ms": "1000", "segment.ms": "5000"}
    assert image.next_producer_id == 30 * 1000
    assert sum(isinstance(c, PartitionChanged) for c in changes) == 5
    assert sum(isinstance(c, TopicRemoved) for c in changes) == 1
    assert len(log.segments()) > 1
    # every commit was fsynced before it applied: nothing is left to flush
    assert log.recovery_point == log.log_end_offset
    if clean:
        log.close()
    else:
        log.close_files()  # as after kill -9: no checkpoint, no snapshot
    replayed, reopened = _service(directory, clean=clean)
    try:
        replayed.replay()
        assert _snapshot(replayed.image) == _snapshot(image)
        assert replayed.quorum.epoch == service.quorum.epoch
    finally:
        reopened.close_files()
