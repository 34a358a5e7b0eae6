"""Consumer: the blocking facade over AsyncConsumer; every call runs on Brook's client loop
thread (brook.client._sync), so fetch responses keep arriving while the caller works."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any

from .. import _sync
from ..cluster import PartitionInfo, TopicPartition
from ..metrics import MetricName
from .async_consumer import TP, AsyncConsumer, OffsetAndTimestamp
from .coordinator import (
    CommitCallback,
    ConsumerGroupMetadata,
    CoordinatorFactory,
    OffsetAndMetadata,
)
from .record import ConsumerRecord

__all__ = ["Consumer"]


class Consumer:
    """Blocking consumer: ``with Consumer({"bootstrap.servers": ...}) as c: c.assign(...)``.

    Connects in the constructor (an unreachable bootstrap raises there, naming each address
    and why it failed).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        coordinator_factory: CoordinatorFactory | None = None,
    ) -> None:
        self._consumer = AsyncConsumer(config, coordinator_factory=coordinator_factory)
        try:
            _sync.run(self._consumer.start())
        except BaseException:
            _sync.run(self._consumer.close())
            raise
        # Left open at interpreter exit: stopped as a crashed consumer would be (no commit).
        self._exit_key = _sync.on_exit(self._consumer.abandon)

    @property
    def async_consumer(self) -> AsyncConsumer:
        return self._consumer

    @property
    def config(self) -> Mapping[str, Any]:
        return self._consumer.config

    def close(self, timeout_ms: int | None = None) -> None:
        _sync.forget_on_exit(self._exit_key)
        _sync.run(self._consumer.close(timeout_ms))

    def __enter__(self) -> Consumer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def assign(self, partitions: Iterable[TP]) -> None:
        _sync.run(self._consumer.assign(list(partitions)))

    def assignment(self) -> set[TopicPartition]:
        return _sync.run(self._consumer.assignment())

    def subscribe(
        self, topics: Iterable[str] | str | re.Pattern[str], listener: Any = None
    ) -> None:
        if not isinstance(topics, str | re.Pattern):
            topics = list(topics)
        _sync.run(self._consumer.subscribe(topics, listener))

    def unsubscribe(self) -> None:
        _sync.run(self._consumer.unsubscribe())

    def subscription(self) -> set[str]:
        return _sync.run(self._consumer.subscription())

    def seek(self, partition: TP, offset: int) -> None:
        _sync.run(self._consumer.seek(partition, offset))

    def seek_to_beginning(self, partitions: Iterable[TP] | None = None) -> None:
        _sync.run(
            self._consumer.seek_to_beginning(None if partitions is None else list(partitions))
        )

    def seek_to_end(self, partitions: Iterable[TP] | None = None) -> None:
        _sync.run(self._consumer.seek_to_end(None if partitions is None else list(partitions)))

    def position(self, partition: TP, timeout_ms: int | None = None) -> int:
        return _sync.run(self._consumer.position(partition, timeout_ms))

    def poll(self, timeout_ms: int = 0, *, max_records: int | None = None) -> list[ConsumerRecord]:
        return _sync.run(self._consumer.poll(timeout_ms, max_records=max_records))

    def pause(self, partitions: Iterable[TP]) -> None:
        _sync.run(self._consumer.pause(list(partitions)))

    def resume(self, partitions: Iterable[TP]) -> None:
        _sync.run(self._consumer.resume(list(partitions)))

    def paused(self) -> set[TopicPartition]:
        return _sync.run(self._consumer.paused())

    def beginning_offsets(
        self, partitions: Iterable[TP], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        return _sync.run(self._consumer.beginning_offsets(list(partitions), timeout_ms))

    def end_offsets(
        self, partitions: Iterable[TP], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        return _sync.run(self._consumer.end_offsets(list(partitions), timeout_ms))

    def offsets_for_times(
        self, timestamps: Mapping[TP, int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return _sync.run(self._consumer.offsets_for_times(dict(timestamps), timeout_ms))

    def partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        return _sync.run(self._consumer.partitions_for_topic(topic))

    def list_topics(self) -> dict[str, list[PartitionInfo]]:
        return _sync.run(self._consumer.list_topics())

    def commit(
        self,
        offsets: Mapping[TP, OffsetAndMetadata | int] | None = None,
        *,
        asynchronous: bool = False,
        callback: CommitCallback | None = None,
    ) -> None:
        _sync.run(self._consumer.commit(offsets, asynchronous=asynchronous, callback=callback))

    def group_metadata(self) -> ConsumerGroupMetadata:
        """See :meth:`AsyncConsumer.group_metadata`."""
        return self._consumer.group_metadata()

    def committed(
        self, partitions: Iterable[TP], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return _sync.run(self._consumer.committed(list(partitions), timeout_ms))

    def metrics(self) -> dict[MetricName, float]:
        return _sync.run(self._consumer.metrics())

    def read_range(
        self, partition: TP, start: int, end: int, *, timeout_ms: int | None = None
    ) -> Iterator[list[ConsumerRecord]]:
        """Blocking twin of AsyncConsumer.read_range: lists of records in [start, end)."""
        chunks = self._consumer.read_range(partition, start, end, timeout_ms=timeout_ms)
        try:
            while True:
                try:
                    yield _sync.run(chunks.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            _sync.run(chunks.aclose())
