"""KIP-890 part 1 in a produce request: before the first transactional batch of a producer's
transaction is written to a partition this node leads (no transaction of that producer open
there), the coordinator is asked whether the partition is in the transaction
(``TxnVerifier``), and each such partition's verification guard is taken
(``log/txn_verification.py``). The produce then appends with the guards; a partition the
coordinator did not verify is refused with the error Kafka's ReplicaManager gives
(``txn_verify.produce_error``): INVALID_TXN_STATE (TRANSACTION_ABORTABLE from produce v11),
NOT_ENOUGH_REPLICAS for the coordinator's retriable answers.

Off with ``transaction.partition.verification.enable=false`` (a dynamic broker config, read
on every produce), and for a request without a transactional id (its transactional batches
are refused at the append instead: nothing verified them, as in Kafka).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from brook.config.defs import ConfigError
from brook.config.server import SERVER_CONFIG, VERIFICATION_KEY
from brook.log.txn_verification import VerificationGuard, needs_verification
from brook.metadata.records import ConfigResourceType
from brook.metadata.topics import is_internal
from brook.protocol.batch import MAGIC, CorruptBatch, read_header
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from . import authz
from .txn_verify import TopicPartition, produce_error


@dataclass(slots=True)
class Verified:
    """What verification decided per partition: the guard to append with, or a refusal
    (error code, message) to answer instead of appending."""

    guards: dict[TopicPartition, VerificationGuard] = field(default_factory=dict)
    refused: dict[TopicPartition, tuple[int, str | None]] = field(default_factory=dict)


def enabled(broker: Any) -> bool:
    """``transaction.partition.verification.enable`` in force: server.properties, overlaid
    by the cluster-wide dynamic default and then this node's own (dynamic, as in Kafka)."""
    value = bool(broker.config[VERIFICATION_KEY])
    configs = broker.image.configs
    for scope in ("", str(broker.node_id)):
        raw = configs.get((ConfigResourceType.BROKER, scope), {}).get(VERIFICATION_KEY)
        if raw is not None:
            try:
                value = bool(SERVER_CONFIG.parse_one(VERIFICATION_KEY, raw))
            except ConfigError:  # stored before values were checked: keep the previous one
                pass
    return value


def start(ctx: Any, request: Any) -> Awaitable[Verified] | None:
    """Start verifying the request's partitions that need it; None if none does (the
    produce goes on at once)."""
    broker = ctx.broker
    tid = request.transactional_id
    if tid is None or broker.txn_verifier is None or not enabled(broker):
        return None
    if not authz.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        return None
    rm = broker.replica_manager
    producers: set[tuple[int, int]] = set()
    wanted: list[tuple[TopicPartition, Any, Any]] = []
    everything: list[TopicPartition] = []
    for topic_data in request.topic_data:
        name = _topic_name(broker, topic_data, ctx.api_version)
        if name is None or is_internal(name):
            continue
        if not authz.authorize(ctx, AclOperation.WRITE, ResourceType.TOPIC, name):
            continue
        for pdata in topic_data.partition_data:
            tp = (name, int(pdata.index))
            everything.append(tp)
            header = _header(pdata.records)
            if header is None or not header.is_transactional or header.producer_id < 0:
                continue
            producers.add((header.producer_id, header.producer_epoch))
            partition, _ = rm.leader_partition(name, tp[1])
            if partition is None:
                continue
            entry = partition.log.producer_state.last_entry(header.producer_id)
            open_txn = entry is not None and entry.current_txn_first_offset is not None
            if needs_verification(header.is_transactional, header.is_control, open_txn):
                wanted.append((tp, partition, header))
    if len(producers) > 1:
        # Kafka: "Transactional records contained more than one producer ID"
        refusal = (Errors.INVALID_PRODUCER_ID_MAPPING, "more than one producer id")
        return _done(Verified(refused=dict.fromkeys(everything, refusal)))
    if not wanted:
        return None
    now = int(time.time() * 1000)
    verified = Verified()
    for tp, partition, header in wanted:
        verified.guards[tp] = partition.log.producer_state.verifications.start(
            header.producer_id, header.base_sequence, header.producer_epoch, now
        )
    (pid, epoch), *_ = producers
    return _ask(broker, tid, pid, epoch, verified, ctx.api_version)


async def _done(verified: Verified) -> Verified:
    return verified


async def _ask(
    broker: Any, tid: str, pid: int, epoch: int, verified: Verified, version: int
) -> Verified:
    errors = await broker.txn_verifier.verify(tid, pid, epoch, list(verified.guards))
    for tp, error in errors.items():
        verified.refused[tp] = produce_error(error, version)
    return verified


def _header(records: bytes | None) -> Any:
    if not records:
        return None
    try:
        header = read_header(records)
    except CorruptBatch:
        return None
    return header if header.magic == MAGIC else None


def _topic_name(broker: Any, topic_data: Any, version: int) -> str | None:
    if version >= 13:
        key = topic_data.topic_id or uuid.UUID(int=0)
        info = broker.image.topics_by_id.get(key)
        return info.name if info else None
    return str(topic_data.name)
