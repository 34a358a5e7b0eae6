"""Retention deletes whole old segments and moves the log start offset; fetching below it is
OFFSET_OUT_OF_RANGE, and ListOffsets(EARLIEST) follows it."""

from __future__ import annotations

import time
from pathlib import Path

from broker_checks import earliest_offset, eventually
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch


def test_retention_by_size_and_time(tmp_path: Path) -> None:
    with (
        BrookProcess(tmp_path / "d", {"log.retention.check.interval.ms": "200"}) as b,
        RawClient(b.bootstrap) as c,
    ):
        create_topic(c, "by-size", configs={"segment.bytes": "2000", "retention.bytes": "4000"})
        create_topic(c, "by-time", configs={"segment.bytes": "2000", "retention.ms": "1000"})
        for i in range(40):
            for topic in ("by-size", "by-time"):
                batch = build_simple_batch(
                    [b"%03d" % i + b"x" * 300], timestamp=int(time.time() * 1000)
                )
                produce(c, topic, 0, batch)
        assert eventually(lambda: earliest_offset(c, "by-size") > 0)
        start = earliest_offset(c, "by-size")
        assert 20 < start < 40  # whole old segments went, the newest stayed
        assert (
            fetch(c, "by-size", 0, 0).responses[0].partitions[0].error_code
            == Errors.OFFSET_OUT_OF_RANGE
        )
        assert fetch(c, "by-size", 0, start).responses[0].partitions[0].error_code == 0
        # time-based: every segment ages out; the log end offset stays where it was
        assert eventually(lambda: earliest_offset(c, "by-time") == 40)
        part = fetch(c, "by-time", 0, 40).responses[0].partitions[0]
        assert part.error_code == 0 and part.high_watermark == 40 and part.log_start_offset == 40
        produce(c, "by-time", 0, build_simple_batch([b"after"]))
        assert fetch(c, "by-time", 0, 40).responses[0].partitions[0].records
