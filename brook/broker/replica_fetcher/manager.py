"""The replica fetcher manager (Kafka's AbstractFetcherManager): which fetcher follows which
partition. A partition goes to the fetcher of (its leader, its fetcher id), the fetcher id a
stable hash of the partition modulo ``num.replica.fetchers``; a fetcher left with no partition
stops.

It learns roles from the replica manager's role listener: a partition this broker follows
(or follows under a new leader epoch) is added to its leader's fetcher at the offset the
state machine starts from; one it leads, no longer hosts, or that went offline leaves its
fetcher. Logs are never deleted here: a follower of a new leader truncates as the fetch
protocol says.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from brook.metadata.image import MetadataImage

from .fetcher import FetcherConfig, ReplicaFetcher
from .session import TopicPartition

if TYPE_CHECKING:
    from ..partition import Partition

log = logging.getLogger(__name__)

FetcherKey = tuple[int, int]  # (source broker, fetcher id)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def fetcher_id(topic: str, partition: int, num_fetchers: int) -> int:
    """Kafka's getFetcherId: abs(31 * topic.hashCode + partition) mod num.replica.fetchers."""
    value = (31 * java_string_hash(topic) + partition) & 0xFFFFFFFF
    value = value - (1 << 32) if value >= 1 << 31 else value
    # Utils.abs: Integer.MIN_VALUE maps to 0
    return (0 if value == -(1 << 31) else abs(value)) % num_fetchers


class ReplicaFetcherManager:
    def __init__(
        self,
        node_id: int,
        config: FetcherConfig,
        num_fetchers: int,
        *,
        image: Callable[[], MetadataImage],
        listener_name: Callable[[], str | None],
        broker_epoch: Callable[[], int],
        delay_ms: Callable[[], int],
        clock: Callable[[], int],
        hosted: Callable[[TopicPartition], Partition | None],
        replicated: Callable[[str, int], None] = lambda _topic, _size: None,
    ) -> None:
        self.node_id = node_id
        self._replicated = replicated
        self._hosted = hosted
        self.config = config
        self.num_fetchers = max(1, num_fetchers)
        self._image = image
        self._listener_name = listener_name
        self._broker_epoch = broker_epoch
        self._delay_ms = delay_ms
        self._clock = clock
        self.fetchers: dict[FetcherKey, ReplicaFetcher] = {}
        self._assigned: dict[TopicPartition, FetcherKey] = {}
        self._started = False
        self._stopping: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------ role changes
    def on_role_change(self, partition: Partition, is_leader: bool) -> None:
        """The replica manager's role listener."""
        tp = (partition.topic, partition.partition)
        if (
            is_leader
            or partition.leader_id < 0
            or partition.leader_id == self.node_id
            or self._hosted(tp) is not partition  # removed, or offline
        ):
            self.remove(tp)
        else:
            self.follow(partition)

    def follow(self, partition: Partition) -> None:
        tp = (partition.topic, partition.partition)
        key = (
            partition.leader_id,
            fetcher_id(partition.topic, partition.partition, self.num_fetchers),
        )
        if self._assigned.get(tp) not in (None, key):
            self.remove(tp)
        fetcher = self.fetchers.get(key)
        if fetcher is None:
            fetcher = self.fetchers[key] = self._new_fetcher(*key)
            if self._started:
                fetcher.start()
        fetcher.add(partition)
        self._assigned[tp] = key

    def remove(self, tp: TopicPartition) -> None:
        key = self._assigned.pop(tp, None)
        if key is None:
            return
        fetcher = self.fetchers.get(key)
        if fetcher is None:
            return
        fetcher.remove(tp)
        if not fetcher.partitions:
            del self.fetchers[key]
            self._stopping.append(asyncio.get_running_loop().create_task(fetcher.stop()))
            self._stopping = [t for t in self._stopping if not t.done()]

    def _new_fetcher(self, source: int, fid: int) -> ReplicaFetcher:
        def endpoint() -> tuple[str, int] | None:
            broker = self._image().brokers.get(source)
            name = self._listener_name()
            if broker is None:
                return None
            ep = broker.endpoint(name) if name else None
            if ep is None and broker.endpoints and not name:
                ep = broker.endpoints[0]
            return None if ep is None else (ep.host, ep.port)

        return ReplicaFetcher(
            source,
            fid,
            self.config,
            endpoint=endpoint,
            broker_epoch=self._broker_epoch,
            delay_ms=self._delay_ms,
            clock=self._clock,
            replicated=self._replicated,
        )

    def fetcher_of(self, tp: TopicPartition) -> ReplicaFetcher | None:
        key = self._assigned.get(tp)
        return None if key is None else self.fetchers.get(key)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._started = True
        for fetcher in self.fetchers.values():
            fetcher.start()

    async def stop(self) -> None:
        self._started = False
        fetchers = list(self.fetchers.values())
        self.fetchers.clear()
        self._assigned.clear()
        await asyncio.gather(*(f.stop() for f in fetchers), *self._stopping)
        self._stopping = []
