"""Idempotent produce: InitProducerId, duplicates answered with the first offsets, gaps and
stale epochs refused with Kafka's errors, state kept across a restart."""

from __future__ import annotations

from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch, iter_records


def _batch(pid: int, epoch: int, seq: int, *values: bytes) -> bytes:
    return build_simple_batch(
        list(values), producer_id=pid, producer_epoch=epoch, base_sequence=seq
    )


def _init(c: RawClient, version: int = 4) -> tuple[int, int]:
    resp = c.request(
        22,
        version,
        {
            "transactional_id": None,
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    assert resp.error_code == 0
    return resp.producer_id, resp.producer_epoch


def _send(c: RawClient, topic: str, batch: bytes) -> tuple[int, int]:
    part = produce(c, topic, 0, batch).responses[0].partition_responses[0]
    return part.error_code, part.base_offset


def test_sequences_duplicates_and_gaps(brook: BrookProcess, unique_topic: str) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic)
        pid, epoch = _init(c)
        assert _init(c, version=0)[0] != pid  # v0 (aiokafka) works too, with a new id
        assert _send(c, unique_topic, _batch(pid, epoch, 0, b"a", b"b")) == (0, 0)
        assert _send(c, unique_topic, _batch(pid, epoch, 2, b"c")) == (0, 2)
        # a retry of an acknowledged batch: same offsets, nothing written twice
        assert _send(c, unique_topic, _batch(pid, epoch, 0, b"a", b"b")) == (0, 0)
        assert (
            _send(c, unique_topic, _batch(pid, epoch, 5, b"gap"))[0]
            == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        )
        assert _send(c, unique_topic, _batch(pid, epoch + 1, 0, b"d")) == (0, 3)
        assert (
            _send(c, unique_topic, _batch(pid, epoch, 3, b"old"))[0]
            == Errors.INVALID_PRODUCER_EPOCH
        )
    brook.restart(clean=False)
    with RawClient(brook.bootstrap) as c:
        # the producer state survives a kill -9: the retry is still recognised
        assert _send(c, unique_topic, _batch(pid, epoch + 1, 0, b"d")) == (0, 3)
        assert _send(c, unique_topic, _batch(pid, epoch + 1, 1, b"e")) == (0, 4)
        values = [
            r.value
            for _, r in iter_records(
                fetch(c, unique_topic, 0, 0).responses[0].partitions[0].records
            )
        ]
        assert values == [b"a", b"b", b"c", b"d", b"e"]
