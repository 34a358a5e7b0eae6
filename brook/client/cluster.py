"""The client's cache of cluster metadata: brokers, topics, partitions and their leaders.

Fed by Metadata responses of any version and by KIP-951 leader hints; like Java's
``Metadata`` it never lets a partition's leader epoch go backwards. No I/O.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

__all__ = [
    "BrokerNode",
    "ClusterMetadata",
    "PartitionInfo",
    "TopicInfo",
    "TopicPartition",
]

_ZERO_UUID = uuid.UUID(int=0)
# Metadata v9 (Kafka 2.4) is the first whose leader epochs stay right during reassignments;
# older responses are used without epochs, as Java's MetadataResponse.hasReliableLeaderEpochs.
_RELIABLE_EPOCH_VERSION = 9


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int  # -1 when there is none
    leader_epoch: int = -1  # -1 when unknown
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    error: int = 0


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: Mapping[int, PartitionInfo]  # by partition id, ascending; do not mutate


class ClusterMetadata:
    """What the client knows of the cluster; ``version`` grows with every change."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerNode] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.topics: dict[str, TopicInfo] = {}
        # Topic-level errors of the last response that named the topic (e.g. unknown topic).
        self.topic_errors: dict[str, int] = {}
        self.version = 0
        self.update_requested = False
        # Called by request_update(); the network client sets it to wake its refresher.
        self.on_update_request: Callable[[], None] | None = None
        self._last_seen_epochs: dict[TopicPartition, int] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}
        self._partition_ids: dict[str, tuple[int, ...]] = {}
        self._available: dict[str, tuple[int, ...]] = {}
        self._waiters: list[tuple[int, asyncio.Future[int]]] = []

    # -- queries (the partitioner's ClusterView among them) --------------------------------

    def partitions_for(self, topic: str) -> tuple[int, ...]:
        """All partition ids of ``topic`` (empty when the topic is not known)."""
        return self._partition_ids.get(topic, ())

    def available_partitions_for(self, topic: str) -> tuple[int, ...]:
        """Partition ids of ``topic`` whose leader is a known broker."""
        return self._available.get(topic, ())

    def partition(self, tp: tuple[str, int]) -> PartitionInfo | None:
        topic = self.topics.get(tp[0])
        return None if topic is None else topic.partitions.get(tp[1])

    def leader_for(self, tp: tuple[str, int]) -> int | None:
        """The leader's node id, or None when there is no leader or it is not a known broker."""
        info = self.partition(tp)
        if info is None or info.leader < 0 or info.leader not in self.brokers:
            return None
        return info.leader

    def leader_epoch(self, tp: tuple[str, int]) -> int:
        info = self.partition(tp)
        return -1 if info is None else info.leader_epoch

    def last_seen_leader_epoch(self, tp: tuple[str, int]) -> int | None:
        return self._last_seen_epochs.get(TopicPartition(*tp))

    def node(self, node_id: int) -> BrokerNode | None:
        return self.brokers.get(node_id)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        info = self.topics.get(topic)
        return None if info is None else info.topic_id

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._names_by_id.get(topic_id)

    def __repr__(self) -> str:
        return (
            f"<ClusterMetadata v{self.version} cluster={self.cluster_id} "
            f"brokers={sorted(self.brokers)} topics={len(self.topics)}>"
        )

    # -- updates ---------------------------------------------------------------------------

    def update(self, response: Any, *, topics: Collection[str] | None = None) -> None:
        """Apply a Metadata response of any version.

        ``topics`` are the names the request asked for; None means it asked for all topics,
        so topics missing from the response are dropped. Otherwise only those topics are
        taken (as Java's producer metadata retains only its own; some brokers answer an
        empty list with every topic). A partition whose reported leader epoch is older than
        one already seen keeps its cached state.
        """
        version = int(getattr(type(response), "__version__", 0))
        reliable = version >= _RELIABLE_EPOCH_VERSION
        brokers = {
            int(b.node_id): BrokerNode(int(b.node_id), b.host, int(b.port), b.rack)
            for b in response.brokers
        }
        new_topics: dict[str, TopicInfo] = {} if topics is None else dict(self.topics)
        errors: dict[str, int] = {} if topics is None else dict(self.topic_errors)
        wanted = None if topics is None else set(topics)
        for t in response.topics:
            name = t.name
            if name is None or (wanted is not None and name not in wanted):
                continue
            code = int(t.error_code)
            if code != 0:
                errors[name] = code
                new_topics.pop(name, None)
                continue
            errors.pop(name, None)
            topic_id = getattr(t, "topic_id", None)
            if topic_id == _ZERO_UUID:
                topic_id = None
            old = self.topics.get(name)
            recreated = (
                old is not None
                and old.topic_id is not None
                and topic_id is not None
                and old.topic_id != topic_id
            )
            parts: dict[int, PartitionInfo] = {}
            for p in sorted(t.partitions, key=lambda p: int(p.partition_index)):
                index = int(p.partition_index)
                tp = TopicPartition(name, index)
                epoch = int(getattr(p, "leader_epoch", -1)) if reliable else -1
                info = PartitionInfo(
                    name,
                    index,
                    int(p.leader_id),
                    epoch,
                    tuple(int(r) for r in p.replica_nodes),
                    tuple(int(r) for r in p.isr_nodes),
                    tuple(int(r) for r in getattr(p, "offline_replicas", ())),
                    int(p.error_code),
                )
                if epoch >= 0:
                    seen = self._last_seen_epochs.get(tp)
                    if seen is None or epoch >= seen or recreated:
                        self._last_seen_epochs[tp] = epoch
                    else:
                        cached = old.partitions.get(index) if old is not None else None
                        if cached is not None:
                            info = cached
                else:
                    self._last_seen_epochs.pop(tp, None)
                parts[index] = info
            new_topics[name] = TopicInfo(name, topic_id, bool(t.is_internal), parts)
        if topics is None:
            self._last_seen_epochs = {
                tp: e for tp, e in self._last_seen_epochs.items() if tp.topic in new_topics
            }
        self.brokers = brokers
        self.cluster_id = getattr(response, "cluster_id", None)
        self.controller_id = int(getattr(response, "controller_id", -1))
        self.topics = new_topics
        self.topic_errors = errors
        self.update_requested = False
        self._reindex()

    def update_partition_leadership(
        self,
        hints: Mapping[tuple[str, int], tuple[int, int]],
        node_endpoints: Mapping[int, tuple[str, int, str | None]],
    ) -> set[TopicPartition]:
        """Apply KIP-951 leader hints; returns the partitions whose leader was changed.

        ``hints`` maps (topic, partition) to (leader id, leader epoch) from CurrentLeader;
        ``node_endpoints`` maps node id to (host, port, rack) from NodeEndpoints, which take
        precedence over cached brokers. A hint is ignored when (1) its leader id or epoch is
        missing (-1), (2) a leader epoch is known for the partition and the hint's is not
        strictly greater, (3) its leader is neither in ``node_endpoints`` nor a cached broker,
        or (4) the partition is not in the cache.
        """
        nodes = dict(self.brokers)
        nodes_changed = False
        for node_id, (host, port, rack) in node_endpoints.items():
            if node_id < 0 or not host or port < 0:
                continue  # Node.noNode()
            node = BrokerNode(int(node_id), host, int(port), rack)
            if nodes.get(node.node_id) != node:
                nodes[node.node_id] = node
                nodes_changed = True
        updated: set[TopicPartition] = set()
        changed: dict[str, dict[int, PartitionInfo]] = {}
        for (topic, partition), (leader, epoch) in hints.items():
            if leader is None or epoch is None or leader < 0 or epoch < 0:
                continue
            info = self.partition((topic, partition))
            if info is None:
                continue
            tp = TopicPartition(topic, partition)
            seen = self._last_seen_epochs.get(tp)
            if seen is not None and epoch <= seen:
                continue
            if leader not in nodes:
                continue
            parts = changed.setdefault(topic, dict(self.topics[topic].partitions))
            parts[partition] = replace(info, leader=int(leader), leader_epoch=int(epoch))
            self._last_seen_epochs[tp] = int(epoch)
            updated.add(tp)
        if not updated and not nodes_changed:
            return updated
        self.brokers = nodes
        for topic, parts in changed.items():
            self.topics[topic] = replace(self.topics[topic], partitions=parts)
        self._reindex()
        return updated

    def _reindex(self) -> None:
        brokers = self.brokers
        self._partition_ids = {name: tuple(t.partitions) for name, t in self.topics.items()}
        self._available = {
            name: tuple(
                p for p, info in t.partitions.items() if info.leader >= 0 and info.leader in brokers
            )
            for name, t in self.topics.items()
        }
        self._names_by_id = {
            t.topic_id: name for name, t in self.topics.items() if t.topic_id is not None
        }
        self.version += 1
        if self._waiters:
            version = self.version
            keep: list[tuple[int, asyncio.Future[int]]] = []
            for threshold, future in self._waiters:
                if future.done():
                    continue
                if version > threshold:
                    future.set_result(version)
                else:
                    keep.append((threshold, future))
            self._waiters = keep

    # -- waiting for updates ---------------------------------------------------------------

    def request_update(self) -> int:
        """Ask for a metadata refresh; returns the version a newer one must exceed."""
        self.update_requested = True
        if self.on_update_request is not None:
            self.on_update_request()
        return self.version

    async def wait_for_version(self, newer_than: int, timeout: float | None = None) -> int:
        """Wait until ``version`` > ``newer_than``; TimeoutError after ``timeout`` seconds."""
        if self.version > newer_than:
            return self.version
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append((newer_than, future))
        try:
            async with asyncio.timeout(timeout):
                return await future
        finally:
            if not future.done():
                future.cancel()

    def fail_waiters(self, error: BaseException) -> None:
        """Wake every waiter with ``error`` (the client is closing)."""
        waiters, self._waiters = self._waiters, []
        for _, future in waiters:
            if not future.done():
                future.set_exception(error)
