"""The admin client's transaction calls on asyncio (AsyncAdmin) against a running broker:
ListTransactions' state, producer id and duration filters, DescribeTransactions of several
ids (one unknown: AdminError with the others' results), DescribeProducers of partitions of
two topics, and an abort that ends a hanging transaction (the last stable offset moves)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from rawclient import RawClient, create_topic
from support import BrookProcess
from txn_support import READ_COMMITTED, UNVERIFIED, TxnProducer, latest

from brook.client.admin import (
    AbortTransactionSpec,
    AdminError,
    AsyncAdmin,
    KafkaError,
    TopicPartition,
)
from brook.protocol.errors import Errors


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrookProcess]:
    data: Path = tmp_path_factory.mktemp("admin-transactions") / "data"
    with BrookProcess(data, UNVERIFIED) as process:  # raw transactional batches
        yield process


def test_transaction_calls_on_asyncio(broker: BrookProcess) -> None:
    topic, other = f"adm-{uuid.uuid4().hex[:6]}", f"adm-{uuid.uuid4().hex[:6]}"
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=2)
        create_topic(c, other)
        hanging = TxnProducer(c, other)
        assert hanging.send(b"stuck") == (0, 0)
    tid, idle = f"tx-{uuid.uuid4().hex[:6]}", f"idle-{uuid.uuid4().hex[:6]}"
    live = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    live.init_transactions(30)
    live.begin_transaction()
    live.produce(topic, b"v", partition=1)
    live.flush(30)
    Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": idle}).init_transactions(
        30
    )

    async def main() -> None:
        async with AsyncAdmin({"bootstrap.servers": broker.bootstrap}) as admin:
            everything = await admin.list_transactions()
            assert list(everything) == [1]
            states = {t.transactional_id: t.state for t in everything[1]}
            assert states[tid] == "Ongoing" and states[idle] == "Empty"
            ongoing = await admin.list_transactions(states=["Ongoing"])
            assert tid in {t.transactional_id for t in ongoing[1]}
            assert idle not in {t.transactional_id for t in ongoing[1]}
            pid = next(t.producer_id for t in everything[1] if t.transactional_id == tid)
            (only,) = (await admin.list_transactions(producer_ids=[pid]))[1]
            assert (only.transactional_id, only.producer_id) == (tid, pid)
            assert tid not in {
                t.transactional_id
                for t in (await admin.list_transactions(duration_ms=3_600_000))[1]
            }
            with pytest.raises(KafkaError) as bad_state:
                await admin.list_transactions(states=["Running"])
            assert bad_state.value.code == Errors.INVALID_REQUEST
            assert "Running" in str(bad_state.value)

            described = await admin.describe_transactions([tid, idle])
            assert described[tid].state == "Ongoing"
            assert described[tid].topic_partitions == {TopicPartition(topic, 1)}
            assert described[tid].transaction_start_time_ms is not None
            assert described[idle].state == "Empty" and described[idle].topic_partitions == set()
            with pytest.raises(AdminError) as missing:
                await admin.describe_transactions([tid, "nobody"])
            assert set(missing.value.errors) == {"nobody"}
            assert missing.value.errors["nobody"].code == Errors.TRANSACTIONAL_ID_NOT_FOUND
            assert set(missing.value.results) == {tid}

            producers = await admin.describe_producers([(topic, 0), (topic, 1), (other, 0)])
            assert producers[TopicPartition(topic, 0)] == []
            (mine,) = producers[TopicPartition(topic, 1)]
            assert (mine.producer_id, mine.current_transaction_start_offset) == (pid, 0)
            (stuck,) = producers[TopicPartition(other, 0)]
            assert stuck.producer_id == hanging.pid and stuck.coordinator_epoch is None

            spec = AbortTransactionSpec(TopicPartition(other, 0), hanging.pid, hanging.epoch, 0)
            await admin.abort_transaction(spec)
            (ended,) = (await admin.describe_producers([(other, 0)]))[TopicPartition(other, 0)]
            assert ended.current_transaction_start_offset is None
            assert ended.coordinator_epoch == 0

    asyncio.run(main())
    with RawClient(broker.bootstrap) as c:
        assert latest(c, other, READ_COMMITTED) == 2
    live.abort_transaction(30)
