"""How ``__transaction_state`` is created: on the first FindCoordinator for a transactional
id, with ``transaction.state.log.replication.factor`` replicas and not before that many
brokers are alive (as ``__consumer_offsets``), compacted, uncompressed, its own segment size
and ``min.insync.replicas`` (Kafka's TransactionStateManager.transactionTopicConfigs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from brook.metadata.controller import CreateTopicSpec

from .log_records import TRANSACTION_STATE_TOPIC


def too_few_brokers(live: int, replication_factor: int) -> str | None:
    """Kafka's message when the alive brokers cannot hold the topic; None when they can."""
    if live >= replication_factor:
        return None
    return (
        f"Number of alive brokers '{live}' does not meet the required replication factor "
        f"'{replication_factor}' for the transactions state topic (configured via "
        "'transaction.state.log.replication.factor'). This error can be ignored if the "
        "cluster is starting up and not all brokers are up yet."
    )


def transaction_topic_spec(config: Mapping[str, Any]) -> CreateTopicSpec:
    return CreateTopicSpec(
        TRANSACTION_STATE_TOPIC,
        int(config["transaction.state.log.num.partitions"]),
        int(config["transaction.state.log.replication.factor"]),
        configs={
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
            "segment.bytes": str(config["transaction.state.log.segment.bytes"]),
            "unclean.leader.election.enable": "false",
        },
    )
