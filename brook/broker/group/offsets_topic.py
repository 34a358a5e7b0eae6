"""When and how ``__consumer_offsets`` is created: on the first FindCoordinator, with
``offsets.topic.replication.factor`` replicas, and not before that many brokers are alive.

(brook/broker/internal_topic.py creates it). A node run
without a config file (``make run``) starts from Kafka's quickstart ``server.properties``,
which sets the factor to 1 (see ``QUICKSTART_DEFAULTS`` in brook/config/server.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from brook.metadata.controller import CreateTopicSpec

from ..internal_topic import InternalTopic
from .store import OFFSETS_TOPIC


def offsets_topic_spec(config: Mapping[str, Any]) -> CreateTopicSpec:
    """The topic as Kafka's group coordinator creates it: compacted, its own segment size,
    the producer's compression kept."""
    return CreateTopicSpec(
        OFFSETS_TOPIC,
        int(config["offsets.topic.num.partitions"]),
        int(config["offsets.topic.replication.factor"]),
        configs={
            "cleanup.policy": "compact",
            "segment.bytes": str(config["offsets.topic.segment.bytes"]),
            "compression.type": "producer",
        },
    )


OFFSETS = InternalTopic(
    OFFSETS_TOPIC, "offsets topic", "offsets.topic.replication.factor", offsets_topic_spec
)
