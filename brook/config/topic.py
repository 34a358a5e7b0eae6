"""Topic-level configs (Kafka's ``LogConfig``), each with the server key that sets its default.

A topic's effective value is its own override if set, else the broker's ``server_default``
key (for example ``segment.bytes`` falls back to ``log.segment.bytes``), else the default
declared here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .defs import ConfigDef, ConfigKey, Type, at_least, between, one_of

LONG_MAX = 2**63 - 1
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

# topic name -> server key that supplies its default
SERVER_DEFAULT: dict[str, str] = {
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "index.interval.bytes": "log.index.interval.bytes",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "min.insync.replicas": "min.insync.replicas",
    "preallocate": "log.preallocate",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
    "segment.index.bytes": "log.index.size.max.bytes",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.ms": "log.roll.ms",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}

TOPIC_CONFIG = ConfigDef(
    "topic",
    [
        ConfigKey(
            "cleanup.policy",
            Type.LIST,
            ["delete"],
            one_of("delete", "compact"),
            "delete: old segments are removed by retention; compact: the log cleaner keeps the "
            "latest record of each key (both: compacted, and old segments removed by retention)",
        ),
        ConfigKey(
            "compression.type",
            Type.STRING,
            "producer",
            one_of(*COMPRESSION_TYPES),
            "Final compression of the topic's data; 'producer' keeps what the producer sent",
        ),
        ConfigKey(
            "delete.retention.ms",
            Type.LONG,
            86400000,
            at_least(0),
            "How long a compacted topic keeps a tombstone (a record with a null value) after "
            "the cleaning that first saw it, so consumers reading the log see the delete",
        ),
        ConfigKey(
            "file.delete.delay.ms",
            Type.LONG,
            60000,
            at_least(0),
            "Delay before a deleted segment's files are removed from disk",
        ),
        ConfigKey(
            "flush.messages",
            Type.LONG,
            LONG_MAX,
            at_least(1),
            "fsync the log after this many messages",
        ),
        ConfigKey(
            "flush.ms",
            Type.LONG,
            LONG_MAX,
            at_least(0),
            "fsync the log when its oldest unflushed message is this old",
        ),
        ConfigKey(
            "index.interval.bytes",
            Type.INT,
            4096,
            at_least(0),
            "Bytes between entries of the offset index",
        ),
        ConfigKey(
            "max.message.bytes",
            Type.INT,
            1048588,
            at_least(0),
            "Largest record batch the topic accepts",
        ),
        ConfigKey(
            "message.timestamp.type",
            Type.STRING,
            "CreateTime",
            one_of("CreateTime", "LogAppendTime"),
            "CreateTime keeps the producer's timestamps; LogAppendTime stamps the broker's",
        ),
        ConfigKey(
            "message.timestamp.before.max.ms",
            Type.LONG,
            LONG_MAX,
            at_least(0),
            "Largest allowed age of a CreateTime timestamp",
        ),
        ConfigKey(
            "message.timestamp.after.max.ms",
            Type.LONG,
            LONG_MAX,
            at_least(0),
            "Largest allowed distance of a CreateTime timestamp into the future",
        ),
        ConfigKey(
            "min.cleanable.dirty.ratio",
            Type.DOUBLE,
            0.5,
            between(0, 1),
            "The log cleaner cleans a compacted log once its dirty part (written since the last "
            "cleaning) is more than this fraction of the log",
        ),
        ConfigKey(
            "min.compaction.lag.ms",
            Type.LONG,
            0,
            at_least(0),
            "A record stays uncompacted at least this long (a segment is cleaned only once its "
            "newest record is this old)",
        ),
        ConfigKey(
            "max.compaction.lag.ms",
            Type.LONG,
            LONG_MAX,
            at_least(1),
            "A record is compacted at the latest this long after it was written: its segment "
            "is rolled and cleaned whatever the dirty ratio",
        ),
        ConfigKey(
            "min.insync.replicas",
            Type.INT,
            1,
            at_least(1),
            "Replicas that must acknowledge an acks=all produce",
        ),
        ConfigKey(
            "preallocate",
            Type.BOOLEAN,
            False,
            None,
            "Preallocate segment files (accepted, no effect)",
            inert=True,
        ),
        ConfigKey(
            "retention.bytes",
            Type.LONG,
            -1,
            None,
            "Largest size of a partition's log before old segments are deleted; -1 = none",
        ),
        ConfigKey(
            "retention.ms",
            Type.LONG,
            604800000,
            at_least(-1),
            "Age after which a segment is deleted; -1 = forever",
        ),
        ConfigKey(
            "segment.bytes", Type.INT, 1073741824, at_least(14), "Size of a log segment file"
        ),
        ConfigKey(
            "segment.index.bytes",
            Type.INT,
            10485760,
            at_least(4),
            "Largest size of a segment's offset index",
        ),
        ConfigKey(
            "segment.jitter.ms",
            Type.LONG,
            0,
            at_least(0),
            "Random jitter subtracted from segment.ms",
        ),
        ConfigKey(
            "segment.ms",
            Type.LONG,
            604800000,
            at_least(1),
            "Roll a new segment after this long (the active segment of a compacted topic is "
            "never cleaned, so this also bounds how long its records wait for compaction)",
        ),
        ConfigKey(
            "unclean.leader.election.enable",
            Type.BOOLEAN,
            False,
            None,
            "Allow out-of-sync replicas to become leader",
        ),
        ConfigKey(
            "quorum.required.acks",
            Type.INT,
            -1,
            None,
            "KIP-250: acknowledge acks=all produces once this many replicas have them "
            "(1 < value < replicas); -1 disables",
        ),
    ],
)


def effective_topic_config(
    overrides: Mapping[str, Any], server_defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """Each topic key's value: the topic's override, else the broker default, else the table's."""
    out: dict[str, Any] = {}
    for key in TOPIC_CONFIG:
        if key.name in overrides:
            out[key.name] = overrides[key.name]
        elif key.name in server_defaults:
            out[key.name] = server_defaults[key.name]
        else:
            out[key.name] = key.default
    return out
