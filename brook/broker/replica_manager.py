"""The partitions this broker hosts: created, led, followed and removed as the metadata image
says, with their high watermarks checkpointed.

Request handlers reach partitions only through here, and nothing here knows whether the
cluster has one node or many: leadership and the ISR come from the metadata image. A
partition whose log directory failed, or whose log could not be opened, is offline (Kafka's
``HostedPartition.Offline``): requests for it get KAFKA_STORAGE_ERROR until the node restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from brook.config.defs import Config
from brook.config.topic import TOPIC_CONFIG, effective_topic_config
from brook.log.config import LogConfig
from brook.log.manager import LogManager
from brook.metadata.controller_api import ControllerApi
from brook.metadata.image import (
    BrokerChanged,
    BrokerInfo,
    Change,
    ConfigChanged,
    MetadataImage,
    PartitionChanged,
    PartitionInfo,
    TopicRemoved,
)
from brook.metadata.records import (
    METADATA_TOPIC,
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionRecord,
    TopicRecord,
)
from brook.protocol.errors import Errors, KafkaError

from . import delayed, topic_config
from .alter_partition_manager import AlterPartitionManager
from .delayed import DelayedProduce, PendingAcks
from .fetch_session import FetchSession
from .leader_state import IsrUpdate, Kind
from .partition import Partition

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Told (partition, is_leader) when this broker becomes leader of a partition (or leader again
# under a new epoch) and when it stops leading it; the group coordinator loads its groups so.
LeadershipListener = Callable[[Partition, bool], None]
# Told (partition, is_leader) on every role change of a hosted partition: becoming leader
# (or leader again under a new epoch), becoming a follower (or following a new leader or
# epoch), and being removed or going offline (is_leader False). The replica fetcher starts
# and stops fetching so.
RoleListener = Callable[[Partition, bool], None]


def now_ms() -> int:
    return int(time.time() * 1000)


class ReplicaManager:
    def __init__(
        self, node_id: int, server_config: Config, log_manager: LogManager, image: MetadataImage
    ) -> None:
        self.node_id = node_id
        self.server_config = server_config
        self.log_manager = log_manager
        self.image = image
        self.partitions: dict[TopicPartition, Partition] = {}
        # partitions assigned here that cannot be served, with the error requests get
        self.offline: dict[TopicPartition, int] = {}
        self._checkpointed_hw: dict[TopicPartition, int] = {}
        self._leadership_listeners: list[LeadershipListener] = []
        self._role_listeners: list[RoleListener] = []
        self.lag_time_max_ms = int(server_config["replica.lag.time.max.ms"])
        self.clock: Callable[[], int] = now_ms
        # Where the partitions' ISR updates go (the AlterPartition manager, set by the node).
        self.submit_isr_update: Callable[[Partition, IsrUpdate], None] | None = None
        self.alter_partition_manager: AlterPartitionManager | None = None
        # ISR updates of partitions led here, once committed (IsrShrinksPerSec and
        # IsrExpandsPerSec of Kafka's ReplicaManager)
        self.isr_shrinks = 0
        self.isr_expands = 0
        self._shrink_task: asyncio.Task[None] | None = None
        # Set (and replaced) after every batch of metadata changes applied here.
        self._metadata_applied = asyncio.Event()

    def add_leadership_listener(self, listener: LeadershipListener) -> None:
        self._leadership_listeners.append(listener)

    def add_role_listener(self, cb: RoleListener) -> None:
        """``cb(partition, is_leader)`` on every role change of a partition hosted here,
        becoming a follower included (see ``RoleListener``)."""
        self._role_listeners.append(cb)

    def _notify_role(self, partition: Partition, is_leader: bool) -> None:
        for listener in self._role_listeners:
            listener(partition, is_leader)

    def _broker(self, broker_id: int) -> BrokerInfo | None:
        return self.image.brokers.get(broker_id)

    def start_isr_management(
        self, controller: ControllerApi, broker_epoch: Callable[[], int]
    ) -> AlterPartitionManager:
        """Send this broker's ISR updates to the controller and check every
        ``replica.lag.time.max.ms`` / 2 for ISR members that fell behind."""
        manager = AlterPartitionManager(controller, self.node_id, broker_epoch)
        self.alter_partition_manager = manager
        self.submit_isr_update = manager.submit
        self._shrink_task = asyncio.get_running_loop().create_task(self._shrink_loop())
        return manager

    async def _shrink_loop(self) -> None:
        interval = max(self.lag_time_max_ms / 2, 10) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.shrink_isrs()
            except Exception:
                log.exception("the ISR shrink check failed")

    # ------------------------------------------------------------------ waiting for replicas
    def delayed_produce(self, pending: Sequence[PendingAcks]) -> DelayedProduce:
        """acks=all: the partitions of a produce waiting until the HW passes their records
        (``delayed.py``)."""
        return DelayedProduce(pending)

    async def wait_for_data(
        self,
        partitions: Sequence[Partition],
        *,
        follower: bool,
        max_wait_ms: int,
        enough: Callable[[], bool],
        session: FetchSession | None = None,
        session_marks: int = 0,
    ) -> None:
        """A long-polling fetch: wait for something new to read (``delayed.py``)."""
        await delayed.wait_for_data(
            partitions,
            follower=follower,
            max_wait_ms=max_wait_ms,
            enough=enough,
            session=session,
            session_marks=session_marks,
        )

    def shrink_isrs(self) -> int:
        """Kafka's isr-expiration task (every ``replica.lag.time.max.ms`` / 2): each led
        partition drops the ISR members that have not caught up for the lag time. Returns
        how many partitions asked for a shrink."""
        asked = 0
        for partition in self.partitions.values():
            if partition.is_leader and partition.maybe_shrink_isr() is not None:
                asked += 1
        return asked

    def _notify_leadership(self, partition: Partition, is_leader: bool) -> None:
        for listener in self._leadership_listeners:
            listener(partition, is_leader)

    # ------------------------------------------------------------------ lifecycle
    def startup(self) -> None:
        self._checkpointed_hw = self.log_manager.read_high_watermarks()
        self._set_aside_stray_logs()
        # A log directory that failed to load may hold logs of partitions assigned here: a
        # fresh, empty log for one of them elsewhere would hand its offsets out again.
        unloaded = self.log_manager.failures.offline_dirs()
        configs: dict[str, LogConfig] = {}
        for topic in self.image.topics.values():
            for info in topic.partitions.values():
                tp = (topic.name, info.partition)
                if (
                    unloaded
                    and self.node_id in info.replicas
                    and self.log_manager.get_log(*tp) is None
                ):
                    log.error(
                        "partition %s-%d is offline: its log may be in the log directories that "
                        "failed to load (%s)",
                        *tp,
                        ", ".join(map(str, unloaded)),
                    )
                    self.offline[tp] = Errors.KAFKA_STORAGE_ERROR
                    continue
                self._apply_partition(topic.name, info, configs)

    def shutdown(self) -> None:
        if self._shrink_task is not None:
            self._shrink_task.cancel()
        if self.alter_partition_manager is not None:
            self.alter_partition_manager.close()
        self.checkpoint_high_watermarks()
        for partition in self.partitions.values():
            partition.close()

    def checkpoint_high_watermarks(self) -> None:
        self.log_manager.write_high_watermarks(
            {tp: p.high_watermark for tp, p in self.partitions.items()}
        )

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return {tp: p.high_watermark for tp, p in self.partitions.items()}

    def _set_aside_stray_logs(self) -> None:
        """Kafka's stray logs: those of partitions the image does not assign to this broker,
        or that belong to another topic id than the image's (a topic deleted and created
        again). Moved aside, not deleted: see ``LogManager.set_aside_stray_log``."""
        for plog in list(self.log_manager.logs()):
            if plog.topic == METADATA_TOPIC:
                continue
            topic = self.image.topics.get(plog.topic)
            info = topic.partitions.get(plog.partition) if topic is not None else None
            if info is not None and self.node_id in info.replicas:
                if plog.topic_id is None or plog.topic_id == info.topic_id:
                    continue
                why = f"it belongs to topic id {plog.topic_id}, not {info.topic_id}"
            else:
                why = "the metadata does not assign it to this broker"
            try:
                aside = self.log_manager.set_aside_stray_log(plog.topic, plog.partition)
            except KafkaError:
                continue  # its directory is offline: it stays as it is
            if aside is None:
                log.info("deleted the empty stray log %s (%s)", plog.dir.name, why)
            else:
                log.warning("moved the stray log %s aside to %s (%s)", plog.dir.name, aside, why)

    # ------------------------------------------------------------------ metadata
    def on_metadata_changes(self, changes: Iterable[Change]) -> None:
        # The image is the same for every change of a batch: one log config per topic.
        configs: dict[str, LogConfig] = {}
        for change in changes:
            if isinstance(change, PartitionChanged):
                self._apply_partition(change.topic, change.info, configs)
            elif isinstance(change, TopicRemoved):
                for p in list(change.topic.partitions):
                    self._remove((change.topic.name, p))
            elif isinstance(change, ConfigChanged):
                self._reload_configs(change)
            elif isinstance(change, BrokerChanged):
                self._broker_changed(change.broker_id)
        self._metadata_applied.set()
        self._metadata_applied = asyncio.Event()

    def knows_epoch(self, topic: str, index: int, leader_epoch: int) -> bool:
        """Whether this broker's metadata has reached ``leader_epoch`` of the partition (a
        request naming a later epoch, or a topic not known here, was sent by someone whose
        metadata is ahead)."""
        partition = self.partitions.get((topic, index))
        if partition is not None:
            return partition.leader_epoch >= leader_epoch
        info = self.image.partition(topic, index) if topic else None
        return info is not None and info.leader_epoch >= leader_epoch

    async def wait_for_metadata(self, caught_up: Callable[[], bool], timeout_ms: int) -> None:
        """Wait until ``caught_up()`` holds after a metadata change, or ``timeout_ms``."""
        deadline = time.monotonic() + timeout_ms / 1000
        while not caught_up():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._metadata_applied.wait(), remaining)

    def _broker_changed(self, broker_id: int) -> None:
        """A broker registered, was unfenced or changed state: the partitions led here that
        it follows out of their ISR may take it in now (``Partition.maybe_expand_isr_for``)."""
        for partition in self.partitions.values():
            if partition.is_leader and broker_id not in partition.isr:
                partition.maybe_expand_isr_for(broker_id)

    def _apply_partition(
        self, topic: str, info: PartitionInfo, configs: dict[str, LogConfig] | None = None
    ) -> None:
        """``configs``: log configs already computed from the current image, by topic."""
        tp = (topic, info.partition)
        if topic == METADATA_TOPIC:
            return  # the metadata log is the quorum's, never a partition served here
        if self.node_id not in info.replicas:
            if tp in self.partitions or tp in self.offline:
                self._remove(tp)
            return
        if tp in self.offline:
            return
        partition = self.partitions.get(tp)
        if partition is None:
            config = None if configs is None else configs.get(topic)
            if config is None:
                config = topic_config.log_config(
                    self.server_config, self.image, self.node_id, topic
                )
                if configs is not None:
                    configs[topic] = config
            try:
                plog = self.log_manager.get_or_create_log(
                    topic, info.partition, config, info.topic_id
                )
            except KafkaError as exc:
                # Kafka marks the partition offline and goes on with the others.
                log.error("partition %s-%d cannot be hosted: %s", topic, info.partition, exc)
                self.offline[tp] = exc.code
                return
            hw = self._checkpointed_hw.get(tp, 0)
            partition = Partition(
                topic,
                info.partition,
                info.topic_id,
                self.node_id,
                plog,
                high_watermark=max(plog.log_start_offset, min(hw, plog.log_end_offset)),
                lag_time_max_ms=self.lag_time_max_ms,
                clock=self.clock,
                broker=self._broker,
                submit_isr_update=self._submit_isr_update,
                isr_committed=self._count_isr_update,
            )
            self.partitions[tp] = partition
            was_leader, old_epoch, old_leader = False, -1, -2
        else:
            was_leader, old_epoch = partition.is_leader, partition.leader_epoch
            old_leader = partition.leader_id
        partition.update(info)
        if partition.is_leader != was_leader or (
            partition.is_leader and partition.leader_epoch != old_epoch
        ):
            self._notify_leadership(partition, partition.is_leader)
        if (
            partition.is_leader != was_leader
            or partition.leader_epoch != old_epoch
            or partition.leader_id != old_leader
        ):
            self._notify_role(partition, partition.is_leader)

    def _submit_isr_update(self, partition: Partition, update: IsrUpdate) -> None:
        if self.submit_isr_update is not None:
            self.submit_isr_update(partition, update)

    def _count_isr_update(self, update: IsrUpdate) -> None:
        if update.kind is Kind.SHRINK:
            self.isr_shrinks += 1
        else:
            self.isr_expands += 1

    def _remove(self, tp: TopicPartition) -> None:
        self.offline.pop(tp, None)
        partition = self.partitions.pop(tp, None)
        if partition is None:
            return
        if partition.is_leader:
            self._notify_leadership(partition, False)
        partition.leader_id = -1
        partition.leader_state = None
        self._notify_role(partition, False)
        partition.close(Errors.NOT_LEADER_OR_FOLLOWER)
        try:
            self.log_manager.delete_log(*tp)
        except KafkaError as exc:  # the directory went offline; the next start sets it aside
            log.error("could not delete the log of %s-%d: %s", *tp, exc)

    def _reload_configs(self, change: ConfigChanged) -> None:
        if change.resource_type == ConfigResourceType.TOPIC:
            targets = [p for tp, p in self.partitions.items() if tp[0] == change.resource_name]
        elif change.resource_type == ConfigResourceType.BROKER:
            targets = list(self.partitions.values())
        else:
            return
        for partition in targets:
            partition.update_config(
                topic_config.log_config(
                    self.server_config, self.image, self.node_id, partition.topic
                )
            )

    # ------------------------------------------------------------------ failures
    def on_log_dir_failure(self, directory: Path) -> list[TopicPartition]:
        """Stop serving the partitions whose logs are in a failed directory (Kafka's
        ``handleLogDirFailure``): requests for them get KAFKA_STORAGE_ERROR, acks=all
        waiters fail, group coordinators let go of them. Returns them."""
        gone = self.log_manager.handle_dir_failure(directory)
        for tp in gone:
            if tp[0] == METADATA_TOPIC:
                continue
            self.offline[tp] = Errors.KAFKA_STORAGE_ERROR
            partition = self.partitions.pop(tp, None)
            if partition is None:
                continue
            if partition.is_leader:
                self._notify_leadership(partition, False)
            partition.mark_offline()
            self._notify_role(partition, False)
        return gone

    # ------------------------------------------------------------------ log creation
    def prepare_logs(self, records: Sequence[MetadataRecord]) -> Callable[[], None]:
        """Create the logs of the new partitions ``records`` assign to this broker, before
        the records are committed, so that a topic whose logs cannot be created is never
        committed (KAFKA_STORAGE_ERROR is raised and nothing is left). Returns the undo for
        a commit that then fails."""
        names = {r.topic_id: r.name for r in records if isinstance(r, TopicRecord)}
        created: list[TopicPartition] = []

        def undo() -> None:
            for tp in created:
                if tp not in self.partitions:
                    self.log_manager.discard_new_log(*tp)

        try:
            for record in records:
                if not isinstance(record, PartitionRecord) or self.node_id not in record.replicas:
                    continue
                name = names.get(record.topic_id) or self._topic_name(record.topic_id)
                if name is None or self.log_manager.get_log(name, record.partition_id):
                    continue
                config = self._pending_log_config(name, records)
                self.log_manager.get_or_create_log(
                    name, record.partition_id, config, record.topic_id
                )
                created.append((name, record.partition_id))
        except KafkaError:
            undo()
            raise
        return undo

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self.image.topics_by_id.get(topic_id)
        return topic.name if topic is not None else None

    def _pending_log_config(self, topic: str, records: Sequence[MetadataRecord]) -> LogConfig:
        """The topic's log config once ``records`` (its new config overrides) apply."""
        overrides = topic_config.topic_overrides(self.image, topic)
        for record in records:
            if (
                isinstance(record, ConfigRecord)
                and record.resource_type == ConfigResourceType.TOPIC
                and record.resource_name == topic
                and record.value is not None
                and record.name in TOPIC_CONFIG
            ):
                overrides[record.name] = TOPIC_CONFIG.parse_one(record.name, record.value)
        defaults = topic_config.broker_defaults(self.server_config, self.image, self.node_id)
        return LogConfig.from_topic_config(effective_topic_config(overrides, defaults))

    # ------------------------------------------------------------------ lookups
    def leader_partition(
        self, topic: str, index: int, leader_epoch: int = -1
    ) -> tuple[Partition | None, int]:
        """The partition if this broker leads it, else the error a client should get. As
        Kafka's getLocalLog, a hosted partition checks ``leader_epoch`` (-1: none) before
        leadership: a follower replica answers an older epoch FENCED_LEADER_EPOCH and a newer
        one UNKNOWN_LEADER_EPOCH, not NOT_LEADER_OR_FOLLOWER."""
        partition = self.partitions.get((topic, index))
        if partition is not None:
            code = partition.check_leader_epoch(leader_epoch)
            if code:
                return None, code
            if partition.is_leader:
                return partition, Errors.NONE
        offline = self.offline.get((topic, index))
        if offline is not None:
            return None, offline
        if self.image.partition(topic, index) is None:
            return None, Errors.UNKNOWN_TOPIC_OR_PARTITION
        return None, Errors.NOT_LEADER_OR_FOLLOWER

    def run_retention(self) -> int:
        starts = {tp: p.log.log_start_offset for tp, p in self.partitions.items()}
        deleted = self.log_manager.run_retention(now_ms(), self.high_watermarks())
        if deleted:
            # followers' sessions learn the new log starts with their next fetch
            for tp, partition in self.partitions.items():
                if partition.log.log_start_offset != starts.get(tp):
                    partition.notify_log_start_moved()
        return deleted
