"""kill -9 in the middle of log cleaning loses nothing: after the restart every acknowledged
record that is its key's latest is read back at its offset, nothing read was not written,
and no ``.cleaned`` or ``.swap`` file is left (with transactions: no aborted record visible
to read_committed, no transaction left open). On a real broker (the cleaner slowed by
``brook.fault.cleaner.swap.delay.ms`` so the kill lands with cleaned segments written and not
swapped in, some groups swapped and others not), and on a process killed at each step of the
swap itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess, env_with_repo

from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.protocol.batch import iter_batches
from brook.protocol.records import build_batch, build_simple_batch, encode_record, iter_records
from brook.protocol.txn_marker import TxnMarker

TOPIC = "compacted"
KEYS = 25


def _leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith((".cleaned", ".swap"))]


def _read(c: RawClient) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of every record, fetched from offset 0 across the gaps."""
    out = []
    offset = 0
    while True:
        part = fetch(c, TOPIC, 0, offset).responses[0].partitions[0]
        assert part.error_code == 0
        if not part.records:
            return out
        for _, header in iter_batches(part.records):  # verifies every CRC
            offset = header.next_offset
        out += [(r.offset, r.key, r.value) for _, r in iter_records(part.records)]


def _check(
    records: list[tuple[int, bytes, bytes]], written: dict[int, tuple[bytes, bytes]]
) -> None:
    assert all(written.get(o) == (k, v) for o, k, v in records), "a record not written"
    assert [o for o, _, _ in records] == sorted({o for o, _, _ in records})
    latest = {k: o for o, (k, _) in sorted(written.items())}
    assert set(latest.values()) <= {o for o, _, _ in records}, "a key's latest record is gone"


def _wait_for(condition: Callable[[], object], timeout: float = 40.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_kill_9_while_cleaned_segments_wait_to_be_swapped_in(tmp_path: Path) -> None:
    overrides = {
        "log.cleaner.backoff.ms": "50",
        "brook.fault.cleaner.swap.delay.ms": "400",
        "log.flush.interval.messages": "1",
    }
    written: dict[int, tuple[bytes, bytes]] = {}
    with BrookProcess(tmp_path / "d", overrides) as broker:
        directory = tmp_path / "d" / f"{TOPIC}-0"
        with RawClient(broker.bootstrap) as c:
            create_topic(
                c,
                TOPIC,
                configs={
                    "cleanup.policy": "compact",
                    "segment.bytes": "1500",
                    "min.cleanable.dirty.ratio": "0.01",
                },
            )
        n = 0
        for round_ in range(3):
            with RawClient(broker.bootstrap) as c:
                for _ in range(300):
                    key, value = b"k%02d" % (n % KEYS), b"r%d-%d" % (round_, n)
                    resp = produce(c, TOPIC, 0, build_simple_batch([(key, value)]))
                    part = resp.responses[0].partition_responses[0]
                    assert part.error_code == 0
                    written[part.base_offset] = (key, value)
                    n += 1
            # the cleaner has written a cleaned segment and waits before swapping it in
            _wait_for(lambda: any(p.endswith(".log.cleaned") for p in _leftovers(directory)))
            if round_:
                time.sleep(0.5 * round_)  # later rounds: some groups swapped in already
            broker.kill()
            assert _leftovers(directory)
            broker.start()
            assert not _leftovers(directory)
            with RawClient(broker.bootstrap) as c:
                _check(_read(c), written)
        # left alone, the cleaner finishes: one record per key below the active segment
        with RawClient(broker.bootstrap) as c:
            _wait_for(lambda: len(_read(c)) < 3 * KEYS, 60)
            _check(_read(c), written)


# A process that cleans a log and stops at one step of the swap: the parent kills it there.
_CLEAN_AND_HANG = """
import sys, time
from pathlib import Path
from brook.log.cleaned_segment import CleanedSegmentWriter
from brook.log.config import LogConfig
from brook.log.log_cleaner import CleanerConfig, LogCleaner
from brook.log.manager import LogManager
data, step = Path(sys.argv[1]), sys.argv[2]

def hang_at(at):
    if at == step:
        (data / "at-step").write_text(at)
        time.sleep(60)

manager = LogManager([str(data)], {})
manager.startup()
plog = manager.get_or_create_log("t", 0, LogConfig.from_topic_config(
    {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.0, "segment.bytes": 100000}))
replace = plog.replace_segments
plog.replace_segments = lambda group, files: replace(group, files, on_step=hang_at)
append = CleanedSegmentWriter.append
def append_then_hang(writer, *args):
    append(writer, *args)
    hang_at("writing")
CleanedSegmentWriter.append = append_then_hang
cleaner = LogCleaner(manager, CleanerConfig(dedupe_buffer_size=1 << 22))
cleaner.clean_once(cleaner.new_cleaner())
"""


@pytest.mark.parametrize("step", ["writing", "swap", "deleted", "renamed"])
def test_kill_9_at_each_step_of_the_swap(tmp_path: Path, step: str) -> None:
    data = tmp_path / "data"
    config = LogConfig.from_topic_config({"cleanup.policy": "compact", "segment.bytes": 100000})
    plog = PartitionLog.open(data / "t-0", config)
    written = {}
    for n in range(90):
        entry = (b"k%d" % (n % 7), b"v%d" % n)
        written[plog.append_as_leader(build_simple_batch([entry]), 0, 0).first_offset] = entry
        if n % 30 == 29:
            plog.roll(0)
    plog.close()
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLEAN_AND_HANG, str(data), step], env=env_with_repo()
    )
    try:
        _wait_for(lambda: (data / "at-step").exists(), 30)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    reopened = PartitionLog.open(data / "t-0", config, recovery_point=0)
    try:
        assert not _leftovers(reopened.dir)
        records = []
        offset = 0
        while offset < reopened.log_end_offset:
            data_read = reopened.read(offset, 1 << 20).records
            assert isinstance(data_read, bytes)
            for _, header in iter_batches(data_read):
                offset = header.next_offset
            records += [(r.offset, r.key, r.value) for _, r in iter_records(data_read)]
        _check(records, written)
        cleaned = len(records) < len(written)
        assert cleaned == (step in ("swap", "deleted", "renamed"))
        assert reopened.log_end_offset == 90
    finally:
        reopened.close_files()


@pytest.mark.parametrize("step", ["writing", "swap", "deleted", "renamed"])
def test_kill_9_at_each_step_of_the_swap_with_transactions(tmp_path: Path, step: str) -> None:
    """Transactions of one producer, committed and aborted in turn: whatever step the kill
    lands on, a read_committed reader of the reopened log sees every committed key's latest
    record and no aborted one, and no transaction is left open."""
    data = tmp_path / "data"
    config = LogConfig.from_topic_config({"cleanup.policy": "compact", "segment.bytes": 100000})
    plog = PartitionLog.open(data / "t-0", config)
    committed: dict[int, tuple[bytes, bytes]] = {}
    aborted_values: set[bytes] = set()
    seq = 0
    for txn in range(24):
        entries = {}
        for i in range(3):
            entry = (b"k%d" % ((3 * txn + i) % 7), b"t%d-%d" % (txn, i))
            batch = build_batch(
                [encode_record(0, 0, *entry, ())],
                base_timestamp=0, max_timestamp=0, producer_id=7, producer_epoch=0,
                base_sequence=seq, transactional=True,
            )  # fmt: skip
            seq += 1
            entries[plog.append_as_leader(batch, 0, 0).first_offset] = entry
        commit = txn % 2 == 0
        plog.append_marker(TxnMarker(7, 0, commit, 0), 0, 0)
        if commit:
            committed.update(entries)
        else:
            aborted_values.update(v for _, v in entries.values())
        if txn % 8 == 7:
            plog.roll(0)
    end = plog.log_end_offset
    plog.close()
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLEAN_AND_HANG, str(data), step], env=env_with_repo()
    )
    try:
        _wait_for(lambda: (data / "at-step").exists(), 30)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    reopened = PartitionLog.open(data / "t-0", config, recovery_point=0)
    try:
        assert not _leftovers(reopened.dir)
        assert reopened.log_end_offset == end
        reopened.on_high_watermark(end)
        assert reopened.first_unstable_offset() is None
        aborted = reopened.aborted_transactions(0, end)
        visible = []
        stored = 0
        offset = 0
        while offset < end:
            data_read = reopened.read(offset, 1 << 20).records
            assert isinstance(data_read, bytes)
            for _, header in iter_batches(data_read):
                offset = header.next_offset
            for header, r in iter_records(data_read):
                stored += 1
                if header.is_transactional and any(
                    t.producer_id == header.producer_id
                    and t.first_offset <= r.offset <= t.last_offset
                    for t in aborted
                ):
                    continue  # a read_committed consumer drops it
                visible.append((r.offset, r.key, r.value))
        assert not [v for _, _, v in visible if v in aborted_values]
        _check(visible, committed)
        cleaned = stored < len(committed) + len(aborted_values)
        assert cleaned == (step in ("swap", "deleted", "renamed"))
    finally:
        reopened.close_files()
