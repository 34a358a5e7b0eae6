"""How ``__transaction_state`` is created: on the first FindCoordinator for a transactional
id, with ``transaction.state.log.replication.factor`` replicas and not before that many
brokers are alive (as ``__consumer_offsets``), compacted, uncompressed, its own segment size
and ``min.insync.replicas`` (Kafka's TransactionStateManager.transactionTopicConfigs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from brook.metadata.controller import CreateTopicSpec

from ..internal_topic import InternalTopic
from .log_records import TRANSACTION_STATE_TOPIC


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


TRANSACTION_STATE = InternalTopic(
    TRANSACTION_STATE_TOPIC,
    "transactions state topic",
    "transaction.state.log.replication.factor",
    transaction_topic_spec,
)
