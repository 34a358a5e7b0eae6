"""confluent-kafka (librdkafka) and KIP-467: a batch holding keyless records for a compacted
topic is refused whole, as Kafka refuses it, and the Produce response names the bad records.

What librdkafka 2.16 makes of that list (the same response Kafka sends, checked byte for byte
in tests/integration/broker/test_record_errors.py): with several bad records, each gets
INVALID_RECORD and the rest of the batch _INVALID_DIFFERENT_RECORD ("an invalid record in the
same batch caused the failure of this message too"), so an application can retry only those;
with a single bad record, every record of the batch gets the partition's INVALID_RECORD.
confluent-kafka's delivery report shows the code's text, not the broker's per-record message.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from support import BrookProcess

INVALID = KafkaError.INVALID_RECORD
DIFFERENT = KafkaError._INVALID_DIFFERENT_RECORD


def _compacted_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, 1, 1, config={"cleanup.policy": "compact"})])
    futures[name].result(30)


def _send_one_batch(bootstrap: str, topic: str, keys: list[bytes | None]) -> list:
    # A long linger and one partition: librdkafka sends every record in one batch.
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000, "retries": 0})
    reports: list = [None] * len(keys)

    def report(index: int):  # type: ignore[no-untyped-def]
        return lambda err, msg: reports.__setitem__(index, err)

    for i, key in enumerate(keys):
        producer.produce(topic, value=b"v%d" % i, key=key, partition=0, on_delivery=report(i))
    assert producer.flush(30) == 0
    return reports


def _end_offset(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


@pytest.mark.parametrize(
    ("keys", "codes"),
    [
        pytest.param(
            [b"a", None, b"c", None, b"e"],
            [DIFFERENT, INVALID, DIFFERENT, INVALID, DIFFERENT],
            id="two-keyless",
        ),
        pytest.param([None, None], [INVALID, INVALID], id="all-keyless"),
        pytest.param([b"a", b"b", None], [INVALID, INVALID, INVALID], id="one-keyless"),
    ],
)
def test_delivery_reports_of_a_batch_with_keyless_records(
    brook_session: BrookProcess, unique_topic: str, keys: list[bytes | None], codes: list[int]
) -> None:
    _compacted_topic(brook_session.bootstrap, unique_topic)
    reports = _send_one_batch(brook_session.bootstrap, unique_topic, keys)
    assert [err.code() if err else None for err in reports] == codes
    assert _end_offset(brook_session.bootstrap, unique_topic) == 0  # nothing was written
    # keyed records alone go through
    assert _send_one_batch(brook_session.bootstrap, unique_topic, [b"a", b"b"]) == [None, None]
    assert _end_offset(brook_session.bootstrap, unique_topic) == 2
