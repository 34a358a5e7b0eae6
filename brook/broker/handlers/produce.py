"""Produce (0), v3-13 served, v0 advertised as the minimum (as Kafka 4 does, so librdkafka
before 2.11.1 keeps compression on); v0-2 requests close the connection.

A transactional id needs WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every
partition). Per partition: WRITE on the topic (TOPIC_AUTHORIZATION_FAILED, before anything
tells whether the topic exists), internal topics refused (INVALID_TOPIC_EXCEPTION, as Kafka
answers clients; the group coordinator appends to ``__consumer_offsets`` directly),
leadership, then the log's validation (CRC, one magic-2 batch, sizes, idempotent sequences,
every record) and append. A batch with invalid records is refused whole with KIP-467's
``record_errors`` (v8+): the index and message of each bad record, so a client fails exactly
those. acks=all is refused with NOT_ENOUGH_REPLICAS before anything is written while the ISR
is below the effective min ISR, then waits in the replica manager (brook.broker.delayed)
until the high watermark passes the records: NOT_ENOUGH_REPLICAS_AFTER_APPEND,
REQUEST_TIMED_OUT at the request's timeout or NOT_LEADER_OR_FOLLOWER when it does not end
well; acks=0 sends nothing back and closes the connection if any partition failed (Kafka's
way of telling the client).
NOT_LEADER_OR_FOLLOWER carries the leader hint and endpoint for v10+ (KIP-951). v13 names
topics by id. The response is hand-encoded (see brook.protocol.produce_codec).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Awaitable
from typing import Any

from brook.log.log import AppendResult
from brook.log.record_errors import RecordValidationError
from brook.metadata.topics import is_internal
from brook.protocol.api import ApiKey
from brook.protocol.batch import MAGIC
from brook.protocol.compression import Codec
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.produce_codec import PartitionProduceResult, encode_produce_response
from brook.security.acl import AclOperation, ResourceType

from .. import authz, produce_verification
from ..delayed import DelayedProduce, PendingAcks
from ..partition import Partition
from ..produce_verification import Verified
from ..registry import RequestContext, handler
from .common import leader_hint

ZERO_UUID = uuid.UUID(int=0)


@handler(ApiKey.PRODUCE, (3, 13), advertised_min=0)
def handle(ctx: RequestContext, request: Any) -> Any:
    pending = produce_verification.start(ctx, request)
    if pending is None:
        return _produce(ctx, request, None)
    return _produce_verified(ctx, request, pending)


async def _produce_verified(ctx: RequestContext, request: Any, pending: Awaitable[Verified]) -> Any:
    """The produce once its coordinator has answered for the partitions that needed it."""
    result = _produce(ctx, request, await pending)
    if inspect.isawaitable(result):
        return await result
    return result


def _produce(ctx: RequestContext, request: Any, verified: Verified | None) -> Any:
    broker = ctx.broker
    version = ctx.api_version
    acks = request.acks
    now = int(time.time() * 1000)
    rm = broker.replica_manager
    counters = broker.counters
    topics: list[tuple[str | uuid.UUID, list[PartitionProduceResult]]] = []
    appended: list[tuple[Partition, PartitionProduceResult, AppendResult]] = []
    hints: dict[int, tuple[int, str, int, str | None]] = {}
    any_error = False
    verify = produce_verification.enabled(broker)
    # Kafka refuses the whole request (every partition) without WRITE on its transactional id
    txn_denied = request.transactional_id is not None and not authz.authorize(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    )
    for topic_data in request.topic_data:
        if version >= 13:
            # kio reads the all-zero id as None; Kafka answers it UNKNOWN_TOPIC_ID like any
            # id it does not know, and the response names it as sent.
            key: str | uuid.UUID = topic_data.topic_id or ZERO_UUID
            info = broker.image.topics_by_id.get(key)
            name = info.name if info else None
        else:
            key = name = topic_data.name
        results: list[PartitionProduceResult] = []
        topics.append((key, results))
        denied = name is not None and not authz.authorize(
            ctx, AclOperation.WRITE, ResourceType.TOPIC, name
        )
        for pdata in topic_data.partition_data:
            result = PartitionProduceResult(pdata.index)
            results.append(result)
            if name is None:
                result.error_code = Errors.UNKNOWN_TOPIC_ID
                any_error = True
                continue
            if txn_denied or denied:
                result.error_code = (
                    Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                    if txn_denied
                    else Errors.TOPIC_AUTHORIZATION_FAILED
                )
                any_error = True
                continue
            if acks not in (-1, 0, 1):
                result.error_code = Errors.INVALID_REQUIRED_ACKS
                any_error = True
                continue
            if is_internal(name) and broker.image.partition(name, pdata.index) is not None:
                # ReplicaManager.appendToLocalLog: only the node writes its internal topics.
                result.error_code = Errors.INVALID_TOPIC_EXCEPTION
                result.error_message = f"Cannot append to internal topic {name}"
                any_error = True
                continue
            partition, error = rm.leader_partition(name, pdata.index)
            if partition is None:
                result.error_code = error
                any_error = True
                if error == Errors.NOT_LEADER_OR_FOLLOWER and version >= 10:
                    (leader, epoch), endpoint = leader_hint(broker, name, pdata.index, ctx.listener)
                    result.current_leader = (leader, epoch)
                    if endpoint is not None:
                        hints[leader] = (
                            leader,
                            endpoint.host,
                            endpoint.port,
                            broker.image.brokers[leader].rack,
                        )
                continue
            guard = None
            if verified is not None:
                refusal = verified.refused.get((name, pdata.index))
                if refusal is not None:
                    counters.produce_request(name, failed=True)
                    result.error_code, result.error_message = refusal
                    any_error = True
                    continue
                guard = verified.guards.get((name, pdata.index))
            try:
                check_records(pdata.records, version)
                append = partition.append_as_leader(pdata.records, acks, now, verify, guard)
            except KafkaError as exc:
                counters.produce_request(name, failed=True)
                result.error_code = exc.code
                result.error_message = exc.message
                if isinstance(exc, RecordValidationError):
                    # Kafka answers these with the log start offset and KIP-467's list.
                    result.record_errors = list(exc.record_errors)
                    result.log_start_offset = partition.log.log_start_offset
                any_error = True
                continue
            counters.produce_request(name, failed=False)
            if not append.duplicate:
                counters.produced(name, append.records_count, len(pdata.records))
            result.base_offset = append.first_offset
            result.log_append_time_ms = append.log_append_time_ms
            result.log_start_offset = append.log_start_offset
            appended.append((partition, result, append))
    if acks == 0:
        if any_error:
            ctx.connection.close("acks=0 produce failed for at least one partition")
        return None
    delay_ms = broker.fault_produce_delay_ms
    needs_flush = [
        (p, r)
        for p, r, a in appended
        if not a.duplicate and p.log.unflushed_messages() >= p.log.config.flush_messages
    ]
    acks_of: dict[int, tuple[PartitionProduceResult, PendingAcks]] = {}
    delayed = None
    if acks == -1:
        for partition, result, append in appended:
            acks_of[id(result)] = (result, PendingAcks(partition, append.last_offset + 1))
        delayed = rm.delayed_produce([item for _, item in acks_of.values()])
        if not delayed.waiting:
            _apply_acks(acks_of)
            delayed = None
    if delayed is None and not needs_flush and not delay_ms:
        return encode_produce_response(version, topics, list(hints.values()))
    return _complete(
        version,
        topics,
        list(hints.values()),
        delayed,
        acks_of,
        needs_flush,
        request.timeout,
        delay_ms,
    )


def _apply_acks(acks_of: dict[int, tuple[PartitionProduceResult, PendingAcks]]) -> None:
    for result, item in acks_of.values():
        if item.error_code != Errors.NONE:
            result.error_code = item.error_code


def check_records(records: bytes | None, version: int) -> None:
    """Kafka's ProduceRequest.validateRecords: one magic-2 batch, zstd needs v7+."""
    if not records or len(records) < 17:
        raise KafkaError(Errors.INVALID_RECORD, "Produce request has no record batch")
    if records[16] != MAGIC:
        raise KafkaError(
            Errors.INVALID_RECORD,
            f"Produce requests with version {version} are only allowed to contain record "
            f"batches with magic version 2",
        )
    if version < 7 and len(records) >= 23 and records[22] & 0x07 == Codec.ZSTD:
        raise KafkaError(
            Errors.UNSUPPORTED_COMPRESSION_TYPE,
            "Produce requests with version below 7 cannot use zstd compression",
        )


async def _complete(
    version: int,
    topics: list[tuple[str | uuid.UUID, list[PartitionProduceResult]]],
    hints: list[tuple[int, str, int, str | None]],
    delayed: DelayedProduce | None,
    acks_of: dict[int, tuple[PartitionProduceResult, PendingAcks]],
    needs_flush: list[tuple[Partition, PartitionProduceResult]],
    timeout_ms: Any,
    delay_ms: int,
) -> bytes:
    if needs_flush:
        flushed = await asyncio.gather(
            *(asyncio.to_thread(p.log.flush) for p, _ in needs_flush), return_exceptions=True
        )
        for (_, result), outcome in zip(needs_flush, flushed, strict=True):
            if isinstance(outcome, BaseException):
                # Not durable as flush.messages asks: not acknowledged (KAFKA_STORAGE_ERROR).
                if not isinstance(outcome, KafkaError):
                    outcome = KafkaError(Errors.UNKNOWN_SERVER_ERROR, str(outcome))
                result.error_code, result.error_message = outcome.code, outcome.message
                result.base_offset = -1
                entry = acks_of.pop(id(result), None)
                if entry is not None and delayed is not None:
                    delayed.drop(entry[1])
    if delayed is not None:
        await delayed.wait(_ms(timeout_ms))
        _apply_acks(acks_of)
    if delay_ms:
        await asyncio.sleep(delay_ms / 1000)
    return encode_produce_response(version, topics, hints)


def _ms(value: Any) -> int:
    if hasattr(value, "total_seconds"):
        return int(value.total_seconds() * 1000)
    return int(value)
