"""LogConfig from an effective topic-config dict."""

from __future__ import annotations

import pytest

from brook.config.defs import ConfigError
from brook.log.config import LogConfig


def test_defaults_are_kafkas() -> None:
    config = LogConfig.from_topic_config({})
    assert config.segment_bytes == 1073741824
    assert config.segment_ms == 604800000
    assert config.segment_index_bytes == 10485760
    assert config.index_interval_bytes == 4096
    assert config.retention_bytes == -1
    assert config.retention_ms == 604800000
    assert config.max_message_bytes == 1048588
    assert config.message_timestamp_type == "CreateTime"
    assert config.cleanup_policy == ("delete",)
    assert config.compression_type == "producer"
    assert config.min_insync_replicas == 1
    assert not config.log_append_time
    assert config.delete_enabled


def test_values_are_parsed_and_validated() -> None:
    config = LogConfig.from_topic_config(
        {
            "segment.bytes": "4096",
            "cleanup.policy": "compact",
            "message.timestamp.type": "LogAppendTime",
            "retention.ms": -1,
            "an.unknown.key": "ignored",
        }
    )
    assert config.segment_bytes == 4096
    assert config.cleanup_policy == ("compact",)
    assert config.log_append_time
    assert not config.delete_enabled
    assert config.retention_ms == -1
    with pytest.raises(ConfigError, match=r"segment\.bytes"):
        LogConfig.from_topic_config({"segment.bytes": 1})


def test_segment_jitter_stays_below_the_smaller_bound() -> None:
    assert LogConfig.from_topic_config({}).random_segment_jitter() == 0
    config = LogConfig.from_topic_config({"segment.jitter.ms": 1000, "segment.ms": 10})
    assert all(0 <= config.random_segment_jitter() < 10 for _ in range(200))
