"""The partitions this broker hosts: created, led, followed and removed as the metadata image
says, with their high watermarks checkpointed.

Request handlers reach partitions only through here, and nothing here knows whether the
cluster has one node or many: leadership and the ISR come from the metadata image.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from brook.config.defs import Config
from brook.log.config import LogConfig
from brook.log.manager import LogManager
from brook.metadata.image import (
    Change,
    ConfigChanged,
    MetadataImage,
    PartitionChanged,
    PartitionInfo,
    TopicRemoved,
)
from brook.metadata.records import METADATA_TOPIC, ConfigResourceType
from brook.protocol.errors import Errors

from . import topic_config
from .partition import Partition

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Told (partition, is_leader) when this broker becomes leader of a partition (or leader again
# under a new epoch) and when it stops leading it; the group coordinator loads its groups so.
LeadershipListener = Callable[[Partition, bool], None]


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
        self._checkpointed_hw: dict[TopicPartition, int] = {}
        self._leadership_listeners: list[LeadershipListener] = []

    def add_leadership_listener(self, listener: LeadershipListener) -> None:
        self._leadership_listeners.append(listener)

    def _notify_leadership(self, partition: Partition, is_leader: bool) -> None:
        for listener in self._leadership_listeners:
            listener(partition, is_leader)

    # ------------------------------------------------------------------ lifecycle
    def startup(self) -> None:
        self._checkpointed_hw = self.log_manager.read_high_watermarks()
        configs: dict[str, LogConfig] = {}
        for topic in self.image.topics.values():
            for info in topic.partitions.values():
                self._apply_partition(topic.name, info, configs)
        self._remove_stray_logs()

    def shutdown(self) -> None:
        self.checkpoint_high_watermarks()
        for partition in self.partitions.values():
            partition.close()

    def checkpoint_high_watermarks(self) -> None:
        self.log_manager.write_high_watermarks(
            {tp: p.high_watermark for tp, p in self.partitions.items()}
        )

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return {tp: p.high_watermark for tp, p in self.partitions.items()}

    def _remove_stray_logs(self) -> None:
        for plog in list(self.log_manager.logs()):
            tp = (plog.topic, plog.partition)
            if plog.topic == METADATA_TOPIC or tp in self.partitions:
                continue
            log.info("deleting stray log %s-%d (not assigned to this broker)", *tp)
            self.log_manager.delete_log(*tp)

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

    def _apply_partition(
        self, topic: str, info: PartitionInfo, configs: dict[str, LogConfig] | None = None
    ) -> None:
        """``configs``: log configs already computed from the current image, by topic."""
        tp = (topic, info.partition)
        if self.node_id not in info.replicas:
            if tp in self.partitions:
                self._remove(tp)
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
            plog = self.log_manager.get_or_create_log(topic, info.partition, config, info.topic_id)
            hw = self._checkpointed_hw.get(tp, 0)
            partition = Partition(
                topic,
                info.partition,
                info.topic_id,
                self.node_id,
                plog,
                high_watermark=max(plog.log_start_offset, min(hw, plog.log_end_offset)),
            )
            self.partitions[tp] = partition
        was_leader, old_epoch = partition.is_leader, partition.leader_epoch
        partition.update(info)
        if partition.is_leader != was_leader or (
            partition.is_leader and partition.leader_epoch != old_epoch
        ):
            self._notify_leadership(partition, partition.is_leader)

    def _remove(self, tp: TopicPartition) -> None:
        partition = self.partitions.pop(tp, None)
        if partition is None:
            return
        if partition.is_leader:
            self._notify_leadership(partition, False)
        partition.close(Errors.NOT_LEADER_OR_FOLLOWER)
        self.log_manager.delete_log(*tp)

    def _reload_configs(self, change: ConfigChanged) -> None:
        if change.resource_type == ConfigResourceType.TOPIC:
            targets = [p for tp, p in self.partitions.items() if tp[0] == change.resource_name]
        elif change.resource_type == ConfigResourceType.BROKER:
            targets = list(self.partitions.values())
        else:
            return
        for partition in targets:
            partition.log.update_config(
                topic_config.log_config(
                    self.server_config, self.image, self.node_id, partition.topic
                )
            )

    # ------------------------------------------------------------------ lookups
    def leader_partition(self, topic: str, index: int) -> tuple[Partition | None, int]:
        """The partition if this broker leads it, else the error a client should get."""
        partition = self.partitions.get((topic, index))
        if partition is not None and partition.is_leader:
            return partition, Errors.NONE
        if self.image.partition(topic, index) is None:
            return None, Errors.UNKNOWN_TOPIC_OR_PARTITION
        return None, Errors.NOT_LEADER_OR_FOLLOWER

    def run_retention(self) -> int:
        return self.log_manager.run_retention(now_ms(), self.high_watermarks())
