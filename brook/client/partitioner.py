"""Producer partitioning: which partition each record goes to (KIP-794 and the keyed path).

Pure decision logic with no I/O, shared by the producer's send path, its record accumulator and
its sender. Who calls what, and when:

1. **Send path, once per record.** :func:`select_partition` returns the explicit partition, else
   the custom partitioner's answer (``partitioner.class``), else ``murmur2(key)`` over all the
   topic's partitions, else :data:`UNKNOWN_PARTITION` (-1): "let the accumulator choose".

2. **Accumulator append, for a record with UNKNOWN_PARTITION.** One :class:`BuiltInPartitioner`
   per topic holds the current sticky partition. The append loop (Java's
   ``RecordAccumulator.append``) is::

       while True:
           info = bip.peek_current_partition(cluster)     # before taking any deque lock
           dq = deque_for(info.partition)
           with dq.lock:
               if bip.partition_changed(info, all_batches_full(dq), cluster):
                   continue                 # raced with a switch, or a held-back one fired
               appended = try_append_to_last_batch(dq)    # size after - size before, or None
               if appended is not None:
                   bip.update_partition_info(info, appended, cluster, all_batches_full(dq))
                   return
           if abort_on_new_batch:
               return ABORTED                             # see 4.
           buffer = allocate()                            # outside the lock: may block
           with dq.lock:
               if bip.partition_changed(info, all_batches_full(dq), cluster):
                   continue
               appended = append_new_batch(dq, buffer)    # its whole estimate, 61-byte header in
               bip.update_partition_info(info, appended, cluster, all_batches_full(dq))
               return

   ``all_batches_full(dq)`` is "the deque is empty or its last batch is full"; a batch that
   refused a record must count as full from then on (Java closes it for appends), or the second
   check could never complete a held-back switch. Sizes are *estimated wire bytes* (with
   compression: header + uncompressed bytes x estimated ratio), never the user's value length.
   For a record whose partition is already known pass ``info=None``: both calls then do
   nothing, so one code path serves keyed and unkeyed records.

   The partitioner moves on once ``batch.size`` bytes went to the sticky partition, but only when
   no batch is left half-filled; past ``2 x batch.size`` it moves on regardless. A switch held back
   by a half-filled batch fires inside a later ``partition_changed`` once that batch is full.

3. **Sender, every ready() pass, per topic** (Java's ``partitionReady``)::

       collector = LoadStatsCollector(len(deques), len(cluster.partitions_for(topic)),
                                      adaptive=adaptive_enabled and custom_partitioner is None)
       for partition_id, dq in deques.items():            # every deque, empty ones too
           leader = leader_of(topic, partition_id)
           collector.add(partition_id, leader is not None, len(dq),
                         node_excluded=leader is not None and tracker.excludes(leader))
       collector.publish(bip)

   Queue lengths (batches per deque) become weights ``max + 1 - length``. With
   ``partitioner.availability.timeout.ms`` > 0, a :class:`NodeLatencyTracker` leaves out the
   partitions of a node that has had data ready but undrainable for longer than the timeout;
   the sender calls ``tracker.record(node, now_ms, can_drain)`` for each node ready() returned.

4. **Custom partitioners.** :func:`load_partitioner` turns ``partitioner.class`` into an object.
   If it has ``on_new_batch`` (:func:`aborts_on_new_batch`), append is run so that, instead of
   creating a new batch, it returns "aborted"; the send path then calls
   ``on_new_batch(topic, cluster, prev_partition)``, asks :func:`select_partition` again and
   appends without aborting. Adaptive load stats are not collected with a custom partitioner.
   :class:`LegacyStickyPartitioner` is the pre-KIP-794 behaviour built on that hook.
"""

from __future__ import annotations

import bisect
import importlib
import logging
import random
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from brook.config.defs import ConfigError

log = logging.getLogger(__name__)

UNKNOWN_PARTITION = -1
PARTITIONER_CLASS = "partitioner.class"

# ---------------------------------------------------------------------------------------------
# Keyed path: murmur2, bit-exact with the Java client (the same key must land on the same
# partition whichever client produced it).
# ---------------------------------------------------------------------------------------------

_MASK32 = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """32-bit MurmurHash2 of ``data`` as a signed int32, equal to Java's ``Utils.murmur2``."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    words = length >> 2
    if words:
        for k in struct.unpack_from(f"<{words}I", data):
            k = (k * _M) & _MASK32
            k ^= k >> 24
            k = (k * _M) & _MASK32
            h = ((h * _M) & _MASK32) ^ k
    tail = length & 3
    if tail:
        base = length - tail
        if tail == 3:
            h ^= data[base + 2] << 16
        if tail >= 2:
            h ^= data[base + 1] << 8
        h ^= data[base]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def to_positive(x: int) -> int:
    """Java's ``Utils.toPositive``: clear the sign bit (not ``abs``; MIN_VALUE maps to 0)."""
    return x & 0x7FFFFFFF


def partition_for_key(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The keyed partition; ``num_partitions`` counts all partitions, available or not."""
    if num_partitions < 1:
        raise ValueError(f"cannot hash a key onto {num_partitions} partitions")
    return to_positive(murmur2(key)) % num_partitions


# ---------------------------------------------------------------------------------------------
# What the partitioners see of the cluster, and the custom partitioner contract.
# ---------------------------------------------------------------------------------------------


class ClusterView(Protocol):
    """The slice of cluster metadata a partitioner needs."""

    def partitions_for(self, topic: str) -> Sequence[int]:
        """All partition ids of the topic."""
        ...

    def available_partitions_for(self, topic: str) -> Sequence[int]:
        """Partition ids of the topic whose leader is known."""
        ...


@runtime_checkable
class Partitioner(Protocol):
    """A custom partitioner (``partitioner.class``); must return a partition id >= 0.

    It may also define ``configure(configs)`` (called once with the producer's configs) and the
    deprecated ``on_new_batch(topic, cluster, prev_partition)`` hook (see :class:`NewBatchHook`).
    """

    def partition(
        self, topic: str, key: bytes | None, value: bytes | None, cluster: ClusterView
    ) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class NewBatchHook(Protocol):
    """The optional hook that makes the accumulator abort and re-partition on a new batch."""

    def on_new_batch(self, topic: str, cluster: ClusterView, prev_partition: int) -> None: ...


class InvalidPartitionError(ValueError):
    """A custom partitioner returned something that is not a partition id."""


def aborts_on_new_batch(partitioner: object | None) -> bool:
    """Whether appends for this partitioner must stop short of creating a new batch."""
    return partitioner is not None and callable(getattr(partitioner, "on_new_batch", None))


def select_partition(
    topic: str,
    key: bytes | None,
    value: bytes | None,
    cluster: ClusterView,
    *,
    partition: int | None = None,
    partitioner: Partitioner | None = None,
    ignore_keys: bool = False,
) -> int:
    """The producer's per-record decision; UNKNOWN_PARTITION hands it to BuiltInPartitioner.

    An explicit ``partition`` is returned as given: checking it against the topic's partition
    count belongs to the send path, which has waited for metadata.
    """
    if partition is not None:
        return partition
    if partitioner is not None:
        chosen = partitioner.partition(topic, key, value, cluster)
        if isinstance(chosen, bool) or not isinstance(chosen, int) or chosen < 0:
            raise InvalidPartitionError(
                f"{PARTITIONER_CLASS} {_describe(partitioner)} returned invalid partition "
                f"{chosen!r} for topic {topic!r}; a partition number must be an int >= 0"
            )
        return chosen
    if key is not None and not ignore_keys:
        return partition_for_key(key, len(cluster.partitions_for(topic)))
    return UNKNOWN_PARTITION


# ---------------------------------------------------------------------------------------------
# KIP-794 built-in sticky partitioner.
# ---------------------------------------------------------------------------------------------


class StickyPartitionInfo:
    """The current sticky partition and the estimated bytes produced to it so far.

    Compared by identity: a new object is made on every switch, which is how an append that
    raced with a switch notices (:meth:`BuiltInPartitioner.is_partition_changed`).
    """

    __slots__ = ("partition", "produced_bytes")

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.produced_bytes = 0

    def __repr__(self) -> str:
        return f"StickyPartitionInfo(partition={self.partition}, produced={self.produced_bytes})"


@dataclass(frozen=True)
class PartitionLoadStats:
    """Cumulative frequency table over the eligible partitions, in the same order as the ids."""

    cumulative_frequency_table: tuple[int, ...]
    partition_ids: tuple[int, ...]

    @property
    def range_end(self) -> int:
        return self.cumulative_frequency_table[-1]

    def pick(self, r: int) -> int:
        """The partition for a random ``r >= 0``: the first CFT entry strictly greater wins."""
        index = bisect.bisect_right(self.cumulative_frequency_table, r % self.range_end)
        return self.partition_ids[index]


def build_load_stats(
    queue_sizes: Sequence[int] | None, partition_ids: Sequence[int] | None, length: int
) -> PartitionLoadStats | None:
    """Turn queue lengths into a CFT, or None where selection should stay uniform.

    ``queue_sizes`` / ``partition_ids`` have one slot per deque of the topic; only the first
    ``length`` slots are eligible (leaderless and latency-excluded partitions are beyond it).
    """
    if queue_sizes is None:
        return None
    if partition_ids is None or len(partition_ids) != len(queue_sizes):
        raise ValueError("partition_ids must be given with one id per queue size")
    if length > len(queue_sizes):
        raise ValueError(f"length {length} exceeds the {len(queue_sizes)} queue sizes given")
    # Adaptive selection needs at least two deques; yet when partitions were dropped for latency
    # even a single survivor must go through it, so that the dropped ones are avoided.
    if length < 1 or len(queue_sizes) < 2:
        return None
    eligible = queue_sizes[:length]
    if length == len(queue_sizes) and all(size == eligible[0] for size in eligible):
        return None
    max_plus_1 = max(eligible) + 1
    running = 0
    table = []
    for size in eligible:
        # Linear weights: the longest queue gets 1, an empty one max + 1; all stay >= 1, so the
        # table is strictly increasing and every eligible partition keeps a chance.
        running += max_plus_1 - size
        table.append(running)
    return PartitionLoadStats(tuple(table), tuple(partition_ids[:length]))


class BuiltInPartitioner:
    """KIP-794's strictly uniform sticky partitioner for one topic (Java's BuiltInPartitioner).

    Thread-safe: a small lock guards the switch itself; callers still follow the deque-lock
    protocol described in the module docstring so that a switch lines up with a batch.
    """

    def __init__(
        self, topic: str, sticky_batch_size: int, rng: random.Random | None = None
    ) -> None:
        if sticky_batch_size < 1:
            raise ValueError(f"sticky_batch_size must be >= 1, got {sticky_batch_size}")
        self.topic = topic
        self.sticky_batch_size = sticky_batch_size
        self._rng = rng if rng is not None else random.Random()
        self._lock = threading.Lock()
        # The sticky partition now (None before the first draw); the accumulator reads it
        # directly on its per-record path, as peek_current_partition / is_partition_changed.
        self.current: StickyPartitionInfo | None = None
        self._load_stats: PartitionLoadStats | None = None

    @property
    def load_stats(self) -> PartitionLoadStats | None:
        """The adaptive stats in force, None while selection is uniform."""
        return self._load_stats

    def random_int(self) -> int:
        """A non-negative random int31, as ``toPositive(nextInt())``."""
        return to_positive(self._rng.getrandbits(32))

    def next_partition(self, cluster: ClusterView) -> int:
        """Draw the next sticky partition: weighted by the load stats, else uniform."""
        r = self.random_int()
        stats = self._load_stats
        if stats is not None:
            # Leaderless partitions never made it into the stats, so no availability check.
            return stats.pick(r)
        available = cluster.available_partitions_for(self.topic)
        if available:
            return available[r % len(available)]
        count = len(cluster.partitions_for(self.topic))
        if count < 1:
            raise ValueError(f"topic {self.topic!r} has no partitions to choose from")
        # No leader known anywhere: any partition will do; the batch waits for a leader.
        return r % count

    def peek_current_partition(self, cluster: ClusterView) -> StickyPartitionInfo:
        """The current sticky partition, drawing the first one on first use."""
        current = self.current
        if current is not None:
            return current
        with self._lock:
            if self.current is None:
                self.current = StickyPartitionInfo(self.next_partition(cluster))
            return self.current

    def is_partition_changed(self, info: StickyPartitionInfo | None) -> bool:
        """True when ``info`` is no longer current (another append switched meanwhile)."""
        return info is not None and self.current is not info

    def update_partition_info(
        self,
        info: StickyPartitionInfo | None,
        appended_bytes: int,
        cluster: ClusterView,
        enable_switch: bool = True,
    ) -> None:
        """Count ``appended_bytes`` for the sticky partition and switch when enough went there.

        Call under the deque lock of ``info.partition``, right after the append.
        ``enable_switch`` is False while that deque still has a batch that is not full: leaving
        it would strand a small batch (with a high linger.ms, a stream of small tail batches).
        """
        if info is None:
            return
        with self._lock:
            if self.current is not info:
                # Only the holder of the current info may switch; a stale one would undo a
                # switch made by someone else.
                return
            info.produced_bytes += appended_bytes
            produced = info.produced_bytes
            # Twice the batch size switches regardless, so a half-filled batch (for instance one
            # started by a keyed record) cannot pin the partition forever.
            if (produced >= self.sticky_batch_size and enable_switch) or (
                produced >= 2 * self.sticky_batch_size
            ):
                self.current = StickyPartitionInfo(self.next_partition(cluster))

    def partition_changed(
        self, info: StickyPartitionInfo | None, all_batches_full: bool, cluster: ClusterView
    ) -> bool:
        """Check made right after taking the deque lock; True means "peek again and retry".

        Also completes a switch that an earlier append held back because its batch was not
        full: once the deque's batches are all full, the bytes already counted suffice.
        """
        if self.is_partition_changed(info):
            return True
        if all_batches_full:
            self.update_partition_info(info, 0, cluster, enable_switch=True)
            return self.is_partition_changed(info)
        return False

    def update_partition_load_stats(
        self, queue_sizes: list[int] | None, partition_ids: list[int] | None, length: int
    ) -> None:
        """Replace the adaptive stats (see :func:`build_load_stats`); the lists are not kept."""
        stats = build_load_stats(queue_sizes, partition_ids, length)
        self._load_stats = stats
        if stats is not None:
            log.debug(
                "topic %s load stats: CFT=%s ids=%s",
                self.topic,
                stats.cumulative_frequency_table,
                stats.partition_ids,
            )

    def load_stats_range_end(self) -> int | None:
        """The exclusive upper end of the weighted draw, None while uniform."""
        stats = self._load_stats
        return None if stats is None else stats.range_end


# ---------------------------------------------------------------------------------------------
# What the sender gathers for the adaptive stats.
# ---------------------------------------------------------------------------------------------


def node_latency_excluded(
    ready_time_ms: int, drain_time_ms: int, availability_timeout_ms: int
) -> bool:
    """Whether a node has had data ready but undrainable for longer than the timeout (0 = off)."""
    return availability_timeout_ms > 0 and ready_time_ms - drain_time_ms > availability_timeout_ms


@dataclass
class NodeLatencyStats:
    ready_time_ms: int
    drain_time_ms: int


class NodeLatencyTracker:
    """Per-node ready/drain times behind ``partitioner.availability.timeout.ms``."""

    def __init__(self, availability_timeout_ms: int) -> None:
        if availability_timeout_ms < 0:
            raise ValueError("partitioner.availability.timeout.ms must be >= 0")
        self.availability_timeout_ms = availability_timeout_ms
        self._stats: dict[int, NodeLatencyStats] = {}

    def record(self, node_id: int, now_ms: int, can_drain: bool) -> None:
        """Sender: ``node_id`` had ready data now; ``can_drain`` if it could be sent now."""
        if self.availability_timeout_ms <= 0:
            return
        stats = self._stats.get(node_id)
        if stats is None:
            stats = self._stats[node_id] = NodeLatencyStats(now_ms, now_ms)
        # Drain time first: an unsynchronised reader then never sees a fresh ready time paired
        # with a stale drain time and excludes a healthy node by mistake.
        if can_drain:
            stats.drain_time_ms = now_ms
        stats.ready_time_ms = now_ms

    def stats(self, node_id: int) -> NodeLatencyStats | None:
        return self._stats.get(node_id)

    def excludes(self, node_id: int) -> bool:
        """Whether partitions led by ``node_id`` should leave the adaptive draw."""
        stats = self._stats.get(node_id)
        if stats is None:
            return False
        ready = stats.ready_time_ms
        return node_latency_excluded(ready, stats.drain_time_ms, self.availability_timeout_ms)


class LoadStatsCollector:
    """Builds the arguments of ``update_partition_load_stats`` as Java's partitionReady does.

    Create one per topic per ready() pass and ``add`` every deque the topic has.
    """

    def __init__(self, num_deques: int, num_partitions: int, adaptive: bool = True) -> None:
        # Until every partition has a deque the stats would not know the missing ones and could
        # never pick them, so selection stays uniform.
        self.enabled = adaptive and num_deques >= num_partitions
        self._sizes: list[int] | None = [0] * num_deques if self.enabled else None
        self._ids: list[int] | None = [0] * num_deques if self.enabled else None
        self._index = -1

    def add(
        self, partition_id: int, leader_known: bool, queue_size: int, node_excluded: bool = False
    ) -> None:
        """One deque: its batch count, whether its leader is known and excluded for latency."""
        if self._sizes is None or self._ids is None or not leader_known:
            return
        self._index += 1
        if self._index >= len(self._sizes):
            raise ValueError("more deques added than announced")
        self._ids[self._index] = partition_id
        # Java skips this write for an empty deque, so a slot vacated by an excluded partition
        # keeps that partition's length; an empty queue is the best target and gets max weight.
        self._sizes[self._index] = queue_size
        # An empty deque has nothing waiting on the slow node, so it stays eligible.
        if queue_size > 0 and node_excluded:
            self._index -= 1

    def result(self) -> tuple[list[int] | None, list[int] | None, int]:
        return self._sizes, self._ids, self._index + 1

    def publish(self, partitioner: BuiltInPartitioner) -> None:
        partitioner.update_partition_load_stats(*self.result())


# ---------------------------------------------------------------------------------------------
# Pre-KIP-794 sticky partitioner (Kafka 2.4-3.2 DefaultPartitioner / UniformStickyPartitioner).
# ---------------------------------------------------------------------------------------------


class LegacyStickyPartitioner:
    """Sticks unkeyed records to one partition per topic and moves on every new batch.

    The next partition is a random available one, different from the current one when two or
    more are available. Keyed records are hashed with murmur2 unless ``hash_keys`` is False.
    """

    def __init__(self, hash_keys: bool = True, rng: random.Random | None = None) -> None:
        self.hash_keys = hash_keys
        self._rng = rng if rng is not None else random.Random()
        self._lock = threading.Lock()
        self._sticky: dict[str, int] = {}

    def partition(
        self, topic: str, key: bytes | None, value: bytes | None, cluster: ClusterView
    ) -> int:
        if key is not None and self.hash_keys:
            return partition_for_key(key, len(cluster.partitions_for(topic)))
        current = self._sticky.get(topic)
        if current is not None:
            return current
        return self._next(topic, cluster, UNKNOWN_PARTITION)

    def on_new_batch(self, topic: str, cluster: ClusterView, prev_partition: int) -> None:
        self._next(topic, cluster, prev_partition)

    def close(self) -> None:
        pass

    def _next(self, topic: str, cluster: ClusterView, prev_partition: int) -> int:
        with self._lock:
            old = self._sticky.get(topic)
            # A new batch on a partition we already left (a keyed record, or a second thread
            # reporting the same batch) must not move the sticky partition again.
            if old is not None and old != prev_partition:
                return old
            available = cluster.available_partitions_for(topic)
            if not available:
                count = len(cluster.partitions_for(topic))
                if count < 1:
                    raise ValueError(f"topic {topic!r} has no partitions to choose from")
                new = to_positive(self._rng.getrandbits(32)) % count
            elif len(available) == 1:
                new = available[0]
            else:
                new = old
                while new is None or new == old:
                    new = available[to_positive(self._rng.getrandbits(32)) % len(available)]
            self._sticky[topic] = new
            return new


class LegacyUniformStickyPartitioner(LegacyStickyPartitioner):
    """UniformStickyPartitioner: the legacy sticky behaviour for every record, keyed or not."""

    def __init__(self, rng: random.Random | None = None) -> None:
        super().__init__(hash_keys=False, rng=rng)


# ---------------------------------------------------------------------------------------------
# partitioner.class loading.
# ---------------------------------------------------------------------------------------------

_ALIASES: dict[str, type] = {
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner": LegacyStickyPartitioner,
    "org.apache.kafka.clients.producer.UniformStickyPartitioner": LegacyUniformStickyPartitioner,
}

_DEPRECATED_HINT: dict[type, str] = {
    LegacyStickyPartitioner: "",
    LegacyUniformStickyPartitioner: " and set partitioner.ignore.keys=true",
}


def load_partitioner(
    spec: str | type | Partitioner | None, configs: Mapping[str, Any] | None = None
) -> Partitioner | None:
    """Resolve ``partitioner.class``: None (or "") means the built-in KIP-794 logic.

    ``spec`` is a class, an instance, or an import path ``"module:Class"`` / ``"module.Class"``;
    Kafka's two deprecated Java class names map to the legacy sticky partitioners. A created
    instance gets ``configure(configs)`` when it defines it and ``configs`` is given.
    """
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        return None
    if isinstance(spec, str):
        name = spec.strip()
        cls: Any = _ALIASES.get(name)
        if cls is None:
            cls = _import_class(name)
        else:
            log.warning(
                "%s is deprecated: clear %s to get the KIP-794 partitioner%s",
                name.rsplit(".", 1)[-1],
                PARTITIONER_CLASS,
                _DEPRECATED_HINT[cls],
            )
    else:
        cls = spec
    if isinstance(cls, type):
        try:
            instance = cls()
        except Exception as exc:
            raise ConfigError(
                f"Invalid value {_describe(spec)} for configuration {PARTITIONER_CLASS}: "
                f"cannot instantiate it: {exc}"
            ) from exc
        configure = getattr(instance, "configure", None)
        if configs is not None and callable(configure):
            configure(dict(configs))
    else:
        instance = cls
    for method in ("partition", "close"):
        if not callable(getattr(instance, method, None)):
            raise ConfigError(
                f"Invalid value {_describe(spec)} for configuration {PARTITIONER_CLASS}: "
                f"it has no {method}() method"
            )
    return instance


def _import_class(name: str) -> Any:
    if ":" in name:
        module_name, _, attr = name.partition(":")
    else:
        module_name, _, attr = name.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(
            f"Invalid value {name} for configuration {PARTITIONER_CLASS}: "
            "expected 'module:Class' or 'module.Class'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"Invalid value {name} for configuration {PARTITIONER_CLASS}: "
            f"cannot import module {module_name!r}: {exc}"
        ) from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(
                f"Invalid value {name} for configuration {PARTITIONER_CLASS}: "
                f"{module_name!r} has no attribute {attr!r}"
            ) from None
    return obj


def _describe(obj: object) -> str:
    if isinstance(obj, str):
        return obj
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"
