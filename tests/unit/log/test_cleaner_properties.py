"""Property tests of the log cleaner over generated key histories across many segments (any
keys, values and tombstones, batch sizes, codecs, segment rolls, cleanings between writes,
offset maps too small for the dirty part): the latest record of every key wins, every kept
record keeps its offset, key, value and timestamp, the log reads the same after a crash,
and tombstones are kept before their delete.retention.ms and gone after."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_cleaning import NOW, Node, append, compacted, read_all

from brook.log.log import PartitionLog
from brook.log.offset_map import ENTRY_BYTES

RETENTION = 10_000
Record = tuple[int, bytes, bytes | None, int]  # offset, key, value, timestamp

entries = st.tuples(
    st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h"]),
    st.one_of(st.none(), st.binary(min_size=0, max_size=40)),
)
steps = st.lists(
    st.tuples(
        st.lists(entries, min_size=1, max_size=4),  # one batch
        st.sampled_from([0, 0, 0, 1, 3, 4]),  # its codec
        st.booleans(),  # roll after it
        st.integers(0, 5),  # clean after it when 0
    ),
    min_size=1,
    max_size=60,
)


def _latest_below(history: list[Record], below: int) -> list[Record]:
    latest: dict[bytes, Record] = {}
    for record in history:
        if record[0] < below:
            latest[record[1]] = record
    return sorted(latest.values())


def _write(node: Node, plog: PartitionLog, script: list) -> list[Record]:
    history: list[Record] = []
    for n, (batch, codec, roll, clean) in enumerate(script):
        timestamp = NOW + n * 10
        base = append(plog, batch, timestamp, codec=codec)
        history.extend(
            (base + i, key, value, timestamp + i) for i, (key, value) in enumerate(batch)
        )
        if roll:
            plog.roll(NOW)
        if clean == 0:
            node.clean()
    return history


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    script=steps, map_keys=st.sampled_from([2, 3, 1000]), segment_bytes=st.sampled_from([300, 2000])
)
def test_the_latest_record_of_each_key_wins_at_its_offset(
    script: list, map_keys: int, segment_bytes: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        node = Node(Path(tmp), dedupe_buffer_size=ENTRY_BYTES * (map_keys + 1))
        config = compacted(segment_bytes=segment_bytes, delete_retention_ms=RETENTION)
        plog = node.log(config)
        history = _write(node, plog, script)
        node.clean_until_done()
        active = plog.segments()[-1].base_offset
        expected = _latest_below(history, active) + [r for r in history if r[0] >= active]
        assert read_all(plog) == expected
        assert plog.log_end_offset == history[-1][0] + 1
        # whole after a crash: recovery from the start accepts every cleaned segment
        node.manager.close_files()
        reopened = PartitionLog.open(plog.dir, config, recovery_point=0)
        try:
            assert read_all(reopened) == expected
            assert reopened.log_end_offset == plog.log_end_offset
        finally:
            reopened.close_files()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=steps)
def test_tombstones_are_kept_before_delete_retention_and_gone_after(script: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        node = Node(Path(tmp))
        plog = node.log(compacted(segment_bytes=1000, delete_retention_ms=RETENTION))
        history = _write(node, plog, script)
        plog.roll(NOW)  # everything written is cleanable
        node.clean_until_done()
        latest = _latest_below(history, plog.log_end_offset)
        values = [r for r in latest if r[2] is not None]

        def clean_at(now: int) -> list[Record]:
            """Clean again at ``now`` (a dirty record of its own key makes it clean)."""
            node.now = now
            append(plog, [(b"other", b"x")], NOW)
            plog.roll(NOW)
            node.clean_until_done()
            return [r for r in read_all(plog) if r[1] != b"other"]

        # every horizon was set by a cleaning at NOW: NOW + delete.retention.ms
        assert clean_at(NOW + RETENTION - 1) == latest
        assert clean_at(NOW + RETENTION) == values
