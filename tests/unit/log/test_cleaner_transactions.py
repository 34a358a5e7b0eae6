"""The log cleaner over transactions (cleaner.py, cleaned_txns.py): aborted records removed
without shadowing committed ones, markers kept while their transaction has batches and then
until their delete horizon, cleaning bounded by the first unstable offset, the aborts' `.txnindex`
entries carried into the cleaned segment (and across a restart), a fenced producer's last
marker kept, a follower copying the cleaned log; and generated histories of committed,
aborted and non-transactional writes cleaned at any point, read_committed then seeing each
key's latest committed record, also after a crash."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_cleaning import NOW, Node, append, batches, compacted, read_all

from brook.log.log import PartitionLog
from brook.log.txn_index import AbortedTxn
from brook.protocol.batch import DELETE_HORIZON_BIT
from brook.protocol.records import build_batch, encode_record, iter_records
from brook.protocol.txn_marker import TxnMarker

A, B = 4000, 5000
RETENTION = 10_000


class Producer:
    """A transactional producer writing keyed batches (its sequence kept)."""

    def __init__(self, plog: PartitionLog, pid: int, epoch: int = 0) -> None:
        self.plog, self.pid, self.epoch, self.seq = plog, pid, epoch, 0

    def send(self, *entries: tuple[bytes, bytes | None]) -> int:
        records = [encode_record(i, i, k, v, ()) for i, (k, v) in enumerate(entries)]
        batch = build_batch(
            records,
            base_timestamp=NOW,
            max_timestamp=NOW + len(entries) - 1,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.seq,
            transactional=True,
        )
        self.seq += len(entries)
        return self.plog.append_as_leader(batch, 0, NOW).first_offset

    def end(self, commit: bool) -> int:
        marker = TxnMarker(self.pid, self.epoch, commit, 0)
        result, _ = self.plog.append_marker(marker, 0, NOW)
        return result.first_offset


def _records(plog: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(o, k, v) for o, k, v, _ in read_all(plog)]


def _markers(plog: PartitionLog) -> list[int]:
    return [h.base_offset for h in batches(plog) if h.is_control]


def _clean_more(node: Node, plog: PartitionLog) -> None:
    """Something new to clean (a later cleaning only runs over dirty data), then a cleaning."""
    append(plog, [(b"filler", b"x")])
    plog.roll(NOW)
    assert node.clean()


def test_aborted_records_go_and_never_shadow_committed_ones(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(delete_retention_ms=RETENTION))
    a = Producer(plog, A)
    append(plog, [(b"k", b"committed"), (b"j", b"1")])  # 0, 1
    a.send((b"k", b"aborted"), (b"new", b"aborted"))  # 2, 3
    assert a.end(commit=False) == 4
    append(plog, [(b"j", b"2")])  # 5
    plog.roll(NOW)
    assert node.clean()
    # k keeps its committed value: the aborted record at 2 neither stays nor shadows it.
    assert _records(plog) == [(0, b"k", b"committed"), (5, b"j", b"2")]


def test_an_abort_marker_stays_with_its_index_entry_then_goes_after_the_horizon(
    tmp_path: Path,
) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(delete_retention_ms=RETENTION))
    a = Producer(plog, A)
    a.send((b"k", b"aborted"))  # 0
    a.end(commit=False)  # 1
    a.send((b"k", b"committed"))  # 2: the producer's last batch is a later one
    a.end(commit=True)  # 3
    plog.roll(NOW)
    entry = AbortedTxn(A, 0, 1, 2)
    assert plog.aborted_transactions(0, 4) == [entry]
    assert node.clean()
    # The aborted batch is gone; its marker stays (its batch was there in this cleaning),
    # and so does its .txnindex entry, in the cleaned segment.
    assert _records(plog) == [(2, b"k", b"committed")]
    assert _markers(plog) == [1, 3]
    assert plog.aborted_transactions(0, plog.log_end_offset) == [entry]
    assert plog.segments()[0].txn_index.path.exists()
    # The next cleaning finds no batch of it: the marker gets its delete horizon...
    _clean_more(node, plog)
    marker = next(h for h in batches(plog) if h.base_offset == 1)
    assert marker.attributes & DELETE_HORIZON_BIT
    assert marker.delete_horizon_ms == NOW + RETENTION
    assert plog.aborted_transactions(0, plog.log_end_offset) == []
    # ... and goes at the first cleaning past it; the commit marker of live data stays.
    node.now = NOW + RETENTION - 1
    _clean_more(node, plog)
    assert _markers(plog) == [1, 3]
    node.now = NOW + RETENTION
    _clean_more(node, plog)
    assert _markers(plog) == [3]
    assert _records(plog)[0] == (2, b"k", b"committed")


def test_a_commit_marker_goes_after_the_horizon_once_its_records_are_gone(
    tmp_path: Path,
) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(delete_retention_ms=RETENTION))
    a = Producer(plog, A)
    a.send((b"k", b"1"))  # 0
    a.end(commit=True)  # 1
    a.send((b"j", b"1"))  # 2
    a.end(commit=True)  # 3
    append(plog, [(b"k", b"2")])  # 4: supersedes the first transaction's only record
    plog.roll(NOW)
    assert node.clean()
    # The first transaction's batch went in this cleaning: its marker stays for now.
    assert _records(plog) == [(2, b"j", b"1"), (4, b"k", b"2")]
    assert _markers(plog) == [1, 3]
    assert not [h for h in batches(plog) if h.is_control and h.attributes & DELETE_HORIZON_BIT]
    _clean_more(node, plog)
    horizons = {h.base_offset: h.delete_horizon_ms for h in batches(plog) if h.is_control}
    assert horizons == {1: NOW + RETENTION, 3: None}
    node.now = NOW + RETENTION
    _clean_more(node, plog)
    assert _markers(plog) == [3]  # the second transaction's record is still there
    assert _records(plog)[:2] == [(2, b"j", b"1"), (4, b"k", b"2")]


def test_an_abort_whose_marker_is_in_the_active_segment(tmp_path: Path) -> None:
    # The abort is indexed in its marker's segment, past the cleanable range: the cleaning
    # must still know its batch is aborted.
    node = Node(tmp_path)
    plog = node.log()
    a = Producer(plog, A)
    append(plog, [(b"k", b"committed")])  # 0
    a.send((b"k", b"aborted"))  # 1
    plog.roll(NOW)
    a.end(commit=False)  # 2, in the active segment
    assert node.clean()
    assert _records(plog) == [(0, b"k", b"committed")]


def test_a_transaction_after_an_abort_in_the_dirty_part_is_not_aborted(tmp_path: Path) -> None:
    # The offset map is built from the first dirty offset, past an abort of the same
    # producer: the producer's next transaction is its own, committed.
    node = Node(tmp_path)
    plog = node.log()
    a = Producer(plog, A)
    append(plog, [(b"k", b"1")])  # 0
    a.send((b"k", b"aborted"))  # 1
    a.end(commit=False)  # 2
    plog.roll(NOW)
    assert node.clean()  # clean below 3
    a.send((b"k", b"2"))  # 3
    a.end(commit=True)  # 4
    plog.roll(NOW)
    assert node.clean()
    assert _records(plog) == [(3, b"k", b"2")]


def test_cleaning_stops_at_the_first_unstable_offset(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    a = Producer(plog, A)
    append(plog, [(b"k", b"1")])  # 0
    plog.roll(NOW)
    a.send((b"t", b"open"))  # 1: a transaction left open
    plog.roll(NOW)
    append(plog, [(b"k", b"2")])  # 2
    plog.roll(NOW)
    append(plog, [(b"k", b"3")])  # 3
    plog.roll(NOW)
    node.clean()
    # Nothing from the open transaction on is cleaned: k's older values stay.
    assert _records(plog) == [(0, b"k", b"1"), (1, b"t", b"open"), (2, b"k", b"2"), (3, b"k", b"3")]
    a.end(commit=True)  # 4
    plog.roll(NOW)
    assert node.clean()
    assert _records(plog) == [(1, b"t", b"open"), (3, b"k", b"3")]


def test_a_marker_not_yet_below_the_high_watermark_holds_cleaning_back(tmp_path: Path) -> None:
    hw = {"value": 0}
    node = Node(tmp_path)
    node.cleaner._high_watermark = lambda tp: hw["value"]
    plog = node.log()
    a = Producer(plog, A)
    a.send((b"k", b"aborted"))  # 0
    plog.roll(NOW)
    a.end(commit=False)  # 1
    plog.roll(NOW)
    append(plog, [(b"k", b"2")])  # 2
    plog.roll(NOW)
    hw["value"] = 1  # the abort marker is not replicated yet
    node.clean()
    assert (0, b"k", b"aborted") in _records(plog)
    hw["value"] = 3
    assert node.clean()
    assert _records(plog) == [(2, b"k", b"2")]


def test_the_cleaned_index_survives_a_restart(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    a, b = Producer(plog, A), Producer(plog, B)
    a.send((b"k", b"a"))  # 0
    b.send((b"j", b"b"))  # 1
    a.end(commit=False)  # 2
    b.end(commit=False)  # 3
    append(plog, [(b"k", b"1")])  # 4
    plog.roll(NOW)
    expected = plog.aborted_transactions(0, plog.log_end_offset)
    assert [t.producer_id for t in expected] == [A, B]
    assert node.clean()
    assert _records(plog) == [(4, b"k", b"1")]
    assert plog.aborted_transactions(0, plog.log_end_offset) == expected
    node.close()
    reopened = PartitionLog.open(plog.dir, compacted())
    try:
        assert reopened.aborted_transactions(0, reopened.log_end_offset) == expected
        reopened.on_high_watermark(reopened.log_end_offset)
        assert reopened.first_unstable_offset() is None
    finally:
        reopened.close_files()


def test_a_fenced_producers_last_marker_stays(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(delete_retention_ms=RETENTION))
    a = Producer(plog, A)
    a.send((b"k", b"zombie"))  # 0
    plog.append_marker(TxnMarker(A, 1, False, 0), 0, NOW)  # 1: the fencing abort, epoch 1
    append(plog, [(b"k", b"2")])  # 2
    plog.roll(NOW)
    assert node.clean()
    _clean_more(node, plog)
    node.now = NOW + 2 * RETENTION
    _clean_more(node, plog)
    # The marker carries the epoch that fences the zombie: it stays while it is the
    # producer's last write.
    assert _markers(plog) == [1]
    assert [h.producer_epoch for h in batches(plog) if h.is_control] == [1]


def test_a_follower_copies_a_cleaned_log_with_transactions(tmp_path: Path) -> None:
    node = Node(tmp_path)
    leader = node.log(compacted(delete_retention_ms=RETENTION), name="leader")
    a = Producer(leader, A)
    a.send((b"k", b"1"))  # 0
    a.end(commit=True)  # 1
    a.send((b"k", b"aborted"))  # 2
    a.end(commit=False)  # 3
    a.send((b"j", b"1"))  # 4
    a.end(commit=True)  # 5
    append(leader, [(b"k", b"2")])  # 6
    leader.roll(NOW)
    assert node.clean()
    _clean_more(node, leader)  # the markers that may go get their delete horizon
    assert [h.delete_horizon_ms for h in batches(leader) if h.is_control] == [
        NOW + RETENTION,
        NOW + RETENTION,
        None,
    ]
    follower = node.log(name="follower")
    offset = 0
    while offset < leader.log_end_offset:  # as the replica fetcher copies it
        data = leader.read(offset, 1 << 20).records
        assert isinstance(data, bytes)
        offset = follower.append_as_follower(data).last_offset + 1
    assert _records(follower) == _records(leader)
    follower.on_high_watermark(follower.log_end_offset)
    assert follower.first_unstable_offset() is None
    # the follower's producer state goes on from the leader's: the next transaction is
    # checked against the same sequence and epoch
    entry, copied = leader.producer_state.last_entry(A), follower.producer_state.last_entry(A)
    assert entry is not None and copied is not None
    assert (copied.epoch, copied.last_seq) == (entry.epoch, entry.last_seq)


# ---------------------------------------------------------------- generated histories
_keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e"])
_entries = st.lists(
    st.tuples(_keys, st.one_of(st.none(), st.binary(max_size=8))), min_size=1, max_size=3
)
_steps = st.lists(
    st.tuples(
        st.sampled_from([None, A, B]),  # who writes: no producer, or one of two transactional
        _entries,
        st.sampled_from([None, None, True, False]),  # then ends its transaction: commit/abort
        st.booleans(),  # roll after
        st.integers(0, 4),  # clean after when 0
    ),
    min_size=1,
    max_size=40,
)

Row = tuple[int, bytes | None, bytes | None]


def _read_committed(plog: PartitionLog) -> list[Row]:
    """What a read_committed reader gets: the stored records outside aborted transactions."""
    aborted = plog.aborted_transactions(0, plog.log_end_offset)
    out = []
    for header in batches(plog):
        if header.is_control or not header.records_count:
            continue
        data = plog.read(header.base_offset, 1 << 20).records
        assert isinstance(data, bytes)
        for h, r in iter_records(data):
            if h.base_offset != header.base_offset:
                break
            dropped = h.is_transactional and any(
                t.producer_id == h.producer_id and t.first_offset <= r.offset <= t.last_offset
                for t in aborted
            )
            if not dropped:
                out.append((r.offset, r.key, r.value))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=_steps, segment_bytes=st.sampled_from([250, 2000]))
def test_read_committed_sees_the_latest_committed_record_of_each_key(
    script: list, segment_bytes: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        node = Node(Path(tmp))
        config = compacted(segment_bytes=segment_bytes, delete_retention_ms=RETENTION)
        plog = node.log(config)
        producers = {A: Producer(plog, A), B: Producer(plog, B)}
        open_txn: dict[int, list[Row]] = {}
        committed: list[Row] = []
        aborted_offsets: set[int] = set()
        for who, entries, end, roll, clean in script:
            if who is None:
                base = append(plog, entries)
                committed += [(base + i, k, v) for i, (k, v) in enumerate(entries)]
            else:
                base = producers[who].send(*entries)
                rows = [(base + i, k, v) for i, (k, v) in enumerate(entries)]
                open_txn.setdefault(who, []).extend(rows)
                if end is not None:
                    producers[who].end(commit=end)
                    rows = open_txn.pop(who)
                    if end:
                        committed += rows
                    else:
                        aborted_offsets.update(o for o, _, _ in rows)
            if roll:
                plog.roll(NOW)
            if clean == 0:
                node.clean()
        for who, rows in open_txn.items():  # every transaction ends: all of it is cleanable
            producers[who].end(commit=True)
            committed += rows
        plog.roll(NOW)
        node.clean_until_done()
        latest: dict[bytes | None, Row] = {}
        for row in sorted(committed):
            latest[row[1]] = row
        expected = sorted(latest.values())
        assert _read_committed(plog) == expected
        # nothing of an aborted transaction is left below the active segment
        assert not {o for o, _, _ in _records(plog)} & aborted_offsets
        # Past every delete horizon, two cleanings later: tombstones and the markers whose
        # transaction has no batch left are gone, the rest reads the same.
        node.now = NOW + RETENTION
        for n in range(2):
            append(plog, [(b"other", b"%d" % n)])
            plog.roll(NOW)
            node.clean_until_done()
        expected = [r for r in expected if r[2] is not None]
        assert [r for r in _read_committed(plog) if r[1] != b"other"] == expected
        # the same after a crash (the producer state replayed from the start, finding no
        # transaction without its marker)
        node.manager.close_files()
        reopened = PartitionLog.open(plog.dir, config, recovery_point=0)
        try:
            assert [r for r in _read_committed(reopened) if r[1] != b"other"] == expected
            reopened.on_high_watermark(reopened.log_end_offset)
            assert reopened.first_unstable_offset() is None
        finally:
            reopened.close_files()
