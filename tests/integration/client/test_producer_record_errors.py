"""Brook's producer and KIP-467, as Java's producer: when the broker refuses a batch naming its
invalid records, each named record fails with the broker's message for it and its valid batch
mates with RecordNotAppendedError; nothing of the batch is written."""

from __future__ import annotations

import pytest
from support import BrookProcess

from brook import Producer
from brook.client.admin import Admin, NewTopic
from brook.client.producer import RecordNotAppendedError
from brook.protocol.errors import Errors, KafkaError


def _compacted(bootstrap: str, topic: str) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 1, 1, configs={"cleanup.policy": "compact"})])


@pytest.mark.parametrize(
    ("keys", "code"),
    [
        pytest.param([b"a", None, b"c", None], Errors.INVALID_RECORD, id="two-keyless"),
        pytest.param([b"a", b"b", None], Errors.INVALID_RECORD, id="one-keyless"),
    ],
)
def test_each_record_fails_for_its_own_reason(
    brook_session: BrookProcess, unique_topic: str, keys: list[bytes | None], code: int
) -> None:
    _compacted(brook_session.bootstrap, unique_topic)
    config = {"bootstrap.servers": brook_session.bootstrap, "linger.ms": 500, "retries": 0}
    reports: list[tuple[int, BaseException | None]] = []
    with Producer(config) as producer:
        futures = [
            producer.send(
                unique_topic,
                b"v",
                key=key,
                partition=0,
                on_delivery=lambda meta, err, i=i: reports.append((i, err)),
            )
            for i, key in enumerate(keys)
        ]
        producer.flush()
    message = (
        f"Compacted topic cannot accept message without key in topic partition {unique_topic}-0"
    )
    for key, future in zip(keys, futures, strict=True):
        error = future.exception(0)
        if key is None:
            assert isinstance(error, KafkaError) and error.code == code
            assert error.message == f"Produce to {unique_topic}-0: {message}"
        else:
            assert isinstance(error, RecordNotAppendedError)
        with pytest.raises(type(error)):
            future.result(0)
    # the delivery callbacks get the same errors as the futures
    assert sorted((i, type(e), str(e)) for i, e in reports) == [
        (i, type(f.exception(0)), str(f.exception(0))) for i, f in enumerate(futures)
    ]
    with Producer(config) as producer:
        assert producer.send(unique_topic, b"v", key=b"k", partition=0).result(10).offset == 0
