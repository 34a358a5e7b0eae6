"""The controller shell over a quorum of one: decisions are committed to the metadata log
(fsynced) before they apply, and replaying the log, after a clean stop or a crash, rebuilds
the same image."""

from __future__ import annotations

import asyncio
import errno
import os
import random
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from brook.config.server import parse_server_config
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata import records as rec
from brook.metadata.controller import ConfigOp, Controller, CreateTopicSpec, OpType
from brook.metadata.image import MetadataImage, PartitionChanged, TopicRemoved
from brook.metadata.quorum import LocalQuorum
from brook.metadata.records import ConfigResourceType, Endpoint
from brook.metadata.service import MetadataService
from brook.protocol.errors import Errors, KafkaError

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


def test_replay_skips_what_it_cannot_apply(tmp_path: Path) -> None:
    """A metadata log holding records an older Brook let a client commit (a topic named
    after the metadata log itself) or that cannot apply at all: they are logged and skipped,
    and the rest of the log replays."""
    directory = tmp_path / "__cluster_metadata-0"
    service, log = _service(directory)
    reserved, unknown = uuid.uuid4(), uuid.uuid4()
    orders = uuid.uuid4()
    records: list[Any] = [
        rec.ClusterIdRecord("c"),
        rec.TopicRecord("orders", orders),
        rec.PartitionRecord(orders, 0, (1,), (1,), 1),
        rec.TopicRecord("__cluster_metadata", reserved),
        rec.PartitionRecord(reserved, 0, (1,), (1,), 1),
        rec.ConfigRecord(ConfigResourceType.TOPIC, "__cluster_metadata", "retention.ms", "1"),
        rec.PartitionChangeRecord(reserved, 0, leader=1),
        rec.PartitionRecord(unknown, 0, (1,), (1,), 1),  # no such topic
    ]
    values = [rec.encode(r) for r in records]
    values.insert(5, b"{not json")
    values.append(rec.encode(rec.TopicRecord("later", uuid.uuid4())))
    asyncio.run(service.quorum.append(values))
    log.close()
    replayed, reopened = _service(directory)
    try:
        changes = replayed.replay()
        image = replayed.image
        assert sorted(image.topics) == ["later", "orders"]
        assert reserved not in image.topics_by_id and unknown not in image.topics_by_id
        assert image.topic_configs("__cluster_metadata") == {}
        assert [c.topic for c in changes if isinstance(c, PartitionChanged)] == ["orders"]
        assert image.offset == len(values) - 1
    finally:
        reopened.close_files()


def test_a_storage_error_commits_nothing_and_fails_the_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    service, log = _service(directory)
    seen: list[Any] = []

    async def run() -> None:
        await service.bootstrap("c")
        await service.register_broker(1, [Endpoint("PLAINTEXT", "h", 1)], None)
        service.add_listener(seen.extend)
        end = log.log_end_offset
        real_write = os.write

        def torn(fd: int, parts: list[bytes]) -> int:
            real_write(fd, b"".join(parts)[:20])
            raise OSError(errno.ENOSPC, "No space left on device")

        with monkeypatch.context() as patch:
            patch.setattr(os, "writev", torn)
            decision = await service.submit(lambda c: c.create_topics([CreateTopicSpec("t")]))
        (result,) = decision.results
        assert result.error_code == Errors.KAFKA_STORAGE_ERROR
        assert "No space left on device" in (result.error_message or "")
        assert decision.records == [] and seen == [] and "t" not in service.image.topics
        assert log.log_end_offset == end
        # nothing is committed after the failure either, with room again
        later = await service.submit(lambda c: c.create_topics([CreateTopicSpec("u")]))
        assert later.results[0].error_code == Errors.KAFKA_STORAGE_ERROR
        with pytest.raises(KafkaError):
            await service.submit_with(lambda c: c.allocate_producer_ids(1, 0))
        assert log.log_end_offset == end

    asyncio.run(run())
    log.close_files()
    replayed, reopened = _service(directory, clean=False)
    try:
        replayed.replay()
        assert replayed.image.topics == {} and replayed.image.cluster_id == "c"
    finally:
        reopened.close_files()


def test_logs_are_prepared_before_the_commit_and_undone_when_it_fails(tmp_path: Path) -> None:
    service, log = _service(tmp_path / "__cluster_metadata-0")
    calls: list[str] = []

    def preparer(records: Any) -> Any:
        calls.append(f"prepare {len(records)} at {log.log_end_offset}")
        if any(isinstance(r, rec.TopicRecord) and r.name == "refused" for r in records):
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, "cannot create its logs")
        return lambda: calls.append("undo")

    async def run() -> None:
        await service.bootstrap("c")
        await service.register_broker(1, [Endpoint("PLAINTEXT", "h", 1)], None)
        service.set_preparer(preparer)
        end = log.log_end_offset
        decision = await service.submit(
            lambda c: c.create_topics([CreateTopicSpec("ok"), CreateTopicSpec("refused")])
        )
        # all or nothing: the decision's other topic is not committed either
        assert [r.error_code for r in decision.results] == [Errors.KAFKA_STORAGE_ERROR] * 2
        assert log.log_end_offset == end and service.image.topics == {}
        decision = await service.submit(lambda c: c.create_topics([CreateTopicSpec("ok")]))
        assert decision.results[0].ok and "ok" in service.image.topics
        assert calls == [f"prepare 4 at {end}", f"prepare 2 at {end}"]

        async def failing_append(values: list[bytes]) -> int:
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, "metadata log offline")

        service.quorum.append = failing_append  # type: ignore[method-assign]
        decision = await service.submit(lambda c: c.create_topics([CreateTopicSpec("late")]))
        assert decision.results[0].error_code == Errors.KAFKA_STORAGE_ERROR
        assert calls[-1] == "undo" and "late" not in service.image.topics

    asyncio.run(run())
    log.close_files()


def test_a_requester_leaving_does_not_cut_a_commit_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that disconnects cancels its request; the records it appended must still be
    applied, or the image would lack records the log holds."""
    directory = tmp_path / "__cluster_metadata-0"
    service, log = _service(directory)
    entered, release = threading.Event(), threading.Event()
    real_flush = log.flush

    def slow_flush(up_to: int | None = None) -> None:
        entered.set()
        release.wait(10)
        real_flush(up_to)

    async def run() -> None:
        await service.bootstrap("c")
        await service.register_broker(1, [Endpoint("PLAINTEXT", "h", 1)], None)
        monkeypatch.setattr(log, "flush", slow_flush)
        task = asyncio.ensure_future(
            service.submit(lambda c: c.create_topics([CreateTopicSpec("left")]))
        )
        while not entered.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        monkeypatch.setattr(log, "flush", real_flush)
        # the next decision waits for the first, and sees its topic
        decision = await service.submit(lambda c: c.create_topics([CreateTopicSpec("left")]))
        assert decision.results[0].error_code == Errors.TOPIC_ALREADY_EXISTS

    asyncio.run(run())
    log.close()
    replayed, reopened = _service(directory)
    try:
        replayed.replay()
        assert list(replayed.image.topics) == ["left"]
    finally:
        reopened.close_files()
