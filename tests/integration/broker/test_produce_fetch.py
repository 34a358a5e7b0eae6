"""Produce and fetch over every served version, through a real broker process."""

from __future__ import annotations

import threading
import time

from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.records import build_simple_batch, iter_records


def test_every_produce_and_fetch_version(brook_session: BrookProcess, unique_topic: str) -> None:
    with RawClient(brook_session.bootstrap) as c:
        created = create_topic(c, unique_topic)
        topic_id = (
            c.request(
                3,
                12,
                {
                    "topics": [{"name": unique_topic, "topic_id": None}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
            .topics[0]
            .topic_id
        )
        assert created.topics[0].error_code == 0
        expected = []
        for version in range(3, 14):
            value = f"v{version}".encode()
            expected.append(value)
            body = {
                "transactional_id": None,
                "acks": -1,
                "timeout": 5000,
                "topic_data": [
                    {
                        "name": unique_topic,
                        "topic_id": topic_id,
                        "partition_data": [
                            {"index": 0, "records": build_simple_batch([value, value])}
                        ],
                    }
                ],
            }
            expected.append(value)
            resp = c.request(0, version, body)
            part = resp.responses[0].partition_responses[0]
            assert part.error_code == 0, (version, part)
            assert part.base_offset == 2 * (version - 3)
        for version in range(4, 19):
            resp = fetch(c, unique_topic, 0, 0, version=version, topic_id=topic_id)
            part = resp.responses[0].partitions[0]
            assert part.error_code == 0, version
            assert part.high_watermark == len(expected)  # counted in records, not batches
            assert [r.value for _, r in iter_records(part.records)] == expected


def test_empty_partition_records_are_empty_bytes_not_null(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook_session.bootstrap) as c:
        topic_id = create_topic(c, unique_topic).topics[0].topic_id
        for version in (4, 11, 12, 16):
            resp = fetch(c, unique_topic, 0, 0, version=version, topic_id=topic_id)
            part = resp.responses[0].partitions[0]
            assert part.error_code == 0
            assert part.records == b""


def test_long_poll_waits_for_data_then_answers(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook_session.bootstrap) as c:
        create_topic(c, unique_topic)
    produced_at: list[float] = []

    def produce_later() -> None:
        time.sleep(0.5)
        with RawClient(brook_session.bootstrap) as p:
            produced_at.append(time.monotonic())
            produce(p, unique_topic, 0, build_simple_batch([b"late"]))

    thread = threading.Thread(target=produce_later)
    with RawClient(brook_session.bootstrap, timeout=30) as c:
        thread.start()
        resp = fetch(c, unique_topic, 0, 0, max_wait=20000, min_bytes=1)
        answered_at = time.monotonic()
    thread.join()
    part = resp.responses[0].partitions[0]
    assert [r.value for _, r in iter_records(part.records)] == [b"late"]
    assert answered_at >= produced_at[0]  # held until the data existed, not answered empty


def test_fetch_below_log_start_is_out_of_range_after_delete_records(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook_session.bootstrap) as c:
        create_topic(c, unique_topic)
        for i in range(5):
            produce(c, unique_topic, 0, build_simple_batch([str(i).encode()]))
        resp = c.request(
            21,
            2,
            {
                "topics": [
                    {"name": unique_topic, "partitions": [{"partition_index": 0, "offset": 3}]}
                ],
                "timeout": 5000,
            },
        )
        assert resp.topics[0].partitions[0].low_watermark == 3
        assert fetch(c, unique_topic, 0, 1).responses[0].partitions[0].error_code == 1
        part = fetch(c, unique_topic, 0, 3).responses[0].partitions[0]
        assert [r.value for _, r in iter_records(part.records)] == [b"3", b"4"]


def test_large_requests_and_responses(brook_session: BrookProcess, unique_topic: str) -> None:
    """Frames far larger than the connection's read buffer, pipelined back to back."""
    values = [bytes([i]) * 300_000 for i in range(3)]
    with RawClient(brook_session.bootstrap) as c:
        create_topic(c, unique_topic, configs={"max.message.bytes": "2000000"})
        for value in values:
            resp = produce(c, unique_topic, 0, build_simple_batch([value, value, value]))
            assert resp.responses[0].partition_responses[0].error_code == 0
        part = fetch(c, unique_topic, 0, 0, max_bytes=10_000_000).responses[0].partitions[0]
        got = [r.value for _, r in iter_records(part.records)]
        assert got == [v for v in values for _ in range(3)]


def test_first_batch_is_returned_whole_even_over_the_size_limits(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    """KIP-74: the first non-empty partition returns its first whole batch even when it is
    larger than max_bytes and partition_max_bytes; partitions after it stay within them."""
    big = [b"x" * 3000, b"y" * 3000]
    with RawClient(brook_session.bootstrap) as c:
        create_topic(c, unique_topic, partitions=2)
        for p in (0, 1):
            produce(c, unique_topic, p, build_simple_batch(big))
        resp = c.request(
            1,
            12,
            {
                "replica_id": -1,
                "max_wait": 0,
                "min_bytes": 1,
                "max_bytes": 100,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": unique_topic,
                        "partitions": [
                            {
                                "partition": p,
                                "current_leader_epoch": -1,
                                "fetch_offset": 0,
                                "last_fetched_epoch": -1,
                                "log_start_offset": -1,
                                "partition_max_bytes": 100,
                            }
                            for p in (0, 1)
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        first, second = resp.responses[0].partitions
        assert [r.value for _, r in iter_records(first.records)] == big
        assert second.error_code == 0 and second.records == b"" and second.high_watermark == 2


def test_api_versions_v3_advertises_the_table_without_default_tagged_fields(
    brook_session: BrookProcess,
) -> None:
    """Produce min 0 is advertised (librdkafka < 2.11.1 turns compression off otherwise), and
    the v3 body carries no tagged fields at their defaults (librdkafka < 2.2 cannot skip
    them)."""
    from brook.protocol.framing import encode_request
    from brook.protocol.primitives import read_uvarint

    with RawClient(brook_session.bootstrap) as c:
        body = b"\x04raw\x021\x00"  # client software name and version, no tagged fields
        c.send_bytes(encode_request(18, 3, 5, "raw", body))
        frame = c.recv_frame()
    assert frame[:4] == (5).to_bytes(4, "big")  # response header v0: no tagged fields
    assert frame[4:6] == b"\x00\x00"
    count, pos = read_uvarint(frame, 6)
    ranges = {}
    for _ in range(count - 1):
        key, low, high = (int.from_bytes(frame[pos + i : pos + i + 2], "big") for i in (0, 2, 4))
        assert frame[pos + 6] == 0  # no tagged fields on the entry
        ranges[key] = (low, high)
        pos += 7
    assert ranges[0] == (0, 13) and ranges[1] == (4, 18) and ranges[18] == (0, 4)
    assert frame[pos + 4 :] == b"\x00"  # throttle time, then an empty tagged-field section
