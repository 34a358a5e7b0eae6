"""KIP-467 on the wire: a produced batch with invalid records is refused whole, and the Produce
response (v8+) names each bad record's batch index and message, as Kafka's broker does."""

from __future__ import annotations

import time

import pytest
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch, iter_records

NO_KEY = "Compacted topic cannot accept message without key in topic partition {}-0"


@pytest.mark.parametrize("version", [3, 7, 8, 9, 12])
def test_keyless_records_to_a_compacted_topic_are_named(
    brook_session: BrookProcess, unique_topic: str, version: int
) -> None:
    with RawClient(brook_session.bootstrap) as c:
        create_topic(c, unique_topic, configs={"cleanup.policy": "compact"})
        assert (
            produce(c, unique_topic, 0, build_simple_batch([(b"k", b"kept")]))
            .responses[0]
            .partition_responses[0]
            .error_code
            == 0
        )
        mixed = build_simple_batch(
            [(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4")], codec=1
        )
        part = produce(c, unique_topic, 0, mixed, version).responses[0].partition_responses[0]
        assert part.error_code == Errors.INVALID_RECORD
        assert part.base_offset == -1
        if version >= 8:
            message = NO_KEY.format(unique_topic)
            errors = [(e.batch_index, e.batch_index_error_message) for e in part.record_errors]
            assert errors == [(1, message), (3, message)]
            assert part.error_message == (
                "One or more records have been rejected due to 2 record errors in total, and "
                "only showing the first three errors at most: "
                f"[RecordError(batchIndex=1, message='{message}'), "
                f"RecordError(batchIndex=3, message='{message}')]"
            )
            assert part.log_start_offset == 0
        # nothing of the batch was written, what was written before is there
        data = fetch(c, unique_topic, 0, 0).responses[0].partitions[0]
        assert data.high_watermark == 1
        assert [r.value for _, r in iter_records(data.records)] == [b"kept"]


def test_timestamp_errors_name_their_records(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook_session.bootstrap) as c:
        create_topic(c, unique_topic, configs={"message.timestamp.before.max.ms": "60000"})
        old = int(time.time() * 1000) - 3_600_000
        batch = build_simple_batch([b"fresh", b"fresh"], timestamp=old)
        part = produce(c, unique_topic, 0, batch, 9).responses[0].partition_responses[0]
        assert part.error_code == Errors.INVALID_TIMESTAMP
        assert part.error_message == (
            "One or more records have been rejected due to invalid timestamp"
        )
        assert [e.batch_index for e in part.record_errors] == [0, 1]
        assert all(
            e.batch_index_error_message.startswith(f"Timestamp {old} of message with offset ")
            for e in part.record_errors
        )
