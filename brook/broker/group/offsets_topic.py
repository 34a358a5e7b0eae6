"""When and how ``__consumer_offsets`` is created: on the first FindCoordinator, with
``offsets.topic.replication.factor`` replicas, and not before that many brokers are alive.

Kafka refuses to create the topic with fewer replicas than configured (a topic created while
a cluster is starting one node at a time would otherwise keep one replica for good);
FindCoordinator answers COORDINATOR_NOT_AVAILABLE meanwhile, and clients retry. A node run
without a config file (``make run``) starts from Kafka's quickstart ``server.properties``,
which sets the factor to 1 (see ``QUICKSTART_DEFAULTS`` in brook/config/server.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from brook.metadata.controller import CreateTopicSpec

from .store import OFFSETS_TOPIC


def too_few_brokers(live: int, replication_factor: int) -> str | None:
    """Kafka's message when the alive brokers cannot hold the offsets topic; None when they
    can."""
    if live >= replication_factor:
        return None
    return (
        f"Number of alive brokers '{live}' does not meet the required replication factor "
        f"'{replication_factor}' for the offsets topic (configured via "
        "'offsets.topic.replication.factor'). This error can be ignored if the cluster is "
        "starting up and not all brokers are up yet."
    )


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
