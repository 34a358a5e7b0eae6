"""The settings one partition log runs with (Kafka's ``LogConfig``), built from an effective
topic-config dict keyed by Kafka's topic config names; missing keys take the table's defaults.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from brook.config.topic import TOPIC_CONFIG


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int
    segment_ms: int
    segment_jitter_ms: int
    segment_index_bytes: int
    index_interval_bytes: int
    retention_bytes: int
    retention_ms: int
    max_message_bytes: int
    flush_messages: int
    flush_ms: int
    file_delete_delay_ms: int
    message_timestamp_type: str
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    cleanup_policy: tuple[str, ...]
    compression_type: str
    min_insync_replicas: int
    quorum_required_acks: int
    delete_retention_ms: int
    min_cleanable_dirty_ratio: float
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int

    @classmethod
    def from_topic_config(cls, values: Mapping[str, Any]) -> LogConfig:
        """Parse and validate ``values``; keys this table does not know are ignored."""

        def get(name: str) -> Any:
            if name in values:
                return TOPIC_CONFIG.parse_one(name, values[name])
            return TOPIC_CONFIG.key(name).default

        return cls(
            segment_bytes=get("segment.bytes"),
            segment_ms=get("segment.ms"),
            segment_jitter_ms=get("segment.jitter.ms"),
            segment_index_bytes=get("segment.index.bytes"),
            index_interval_bytes=get("index.interval.bytes"),
            retention_bytes=get("retention.bytes"),
            retention_ms=get("retention.ms"),
            max_message_bytes=get("max.message.bytes"),
            flush_messages=get("flush.messages"),
            flush_ms=get("flush.ms"),
            file_delete_delay_ms=get("file.delete.delay.ms"),
            message_timestamp_type=get("message.timestamp.type"),
            message_timestamp_before_max_ms=get("message.timestamp.before.max.ms"),
            message_timestamp_after_max_ms=get("message.timestamp.after.max.ms"),
            cleanup_policy=tuple(get("cleanup.policy")),
            compression_type=get("compression.type"),
            min_insync_replicas=get("min.insync.replicas"),
            quorum_required_acks=get("quorum.required.acks"),
            delete_retention_ms=get("delete.retention.ms"),
            min_cleanable_dirty_ratio=get("min.cleanable.dirty.ratio"),
            min_compaction_lag_ms=get("min.compaction.lag.ms"),
            max_compaction_lag_ms=get("max.compaction.lag.ms"),
        )

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def compacted(self) -> bool:
        """``cleanup.policy`` includes compact: records must carry keys."""
        return "compact" in self.cleanup_policy

    @property
    def delete_enabled(self) -> bool:
        """Whether retention by time and size applies (``cleanup.policy`` includes delete)."""
        return "delete" in self.cleanup_policy

    @property
    def roll_ms(self) -> int:
        """How long a segment stays active (Kafka's maxSegmentMs): segment.ms, and for a
        compacted log at most max.compaction.lag.ms, since the active segment is never
        cleaned and its records would otherwise wait past that lag."""
        if self.compacted:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    def random_segment_jitter(self) -> int:
        """A new segment's share of segment.jitter.ms, so partitions do not all roll at once."""
        if self.segment_jitter_ms <= 0:
            return 0
        return random.randrange(min(self.segment_jitter_ms, self.segment_ms))
