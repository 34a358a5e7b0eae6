"""A real broker whose log directory fills up, fails its fsyncs or turns read-only, on real
filesystems mounted for the test (we run as root): a small tmpfs for a full disk, ext4 on a
loop device for a read-only filesystem (errors=remount-ro) and for fsyncs failing with EIO
(the ext4 image lives on a tmpfs smaller than itself, so writeback runs out of room).

Each time the broker answers KAFKA_STORAGE_ERROR, acknowledges nothing after the failure, and
after a restart with room again serves every acknowledged record exactly once at its offset,
nothing else, and gives new records new offsets. Topic creation and metadata changes on a full
disk fail with KAFKA_STORAGE_ERROR and commit nothing. With two log directories, the healthy
one keeps serving. Group offsets the coordinator could not write are not acknowledged.

``mount -o remount,ro`` itself is refused (EBUSY) while any file is open for writing, as the
broker's segments are, so it is exercised on a stopped broker, which must then refuse to
start, cleanly; a filesystem that turns read-only under a running broker is ext4's
errors=remount-ro, triggered through /sys/fs/ext4/<device>/trigger_fs_error.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError as ClientError
from confluent_kafka import Producer
from integration.groups.group_support import OVERRIDES as GROUP_OVERRIDES
from integration.groups.group_support import commit, committed, ready
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch, iter_records

STORAGE_ERROR = Errors.KAFKA_STORAGE_ERROR
VALUE_SIZE = 1000

Acked = dict[tuple[int, int], bytes]  # (partition, offset) -> value


# ---------------------------------------------------------------------- filesystems
def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def _unmount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
    try:
        yield path
    finally:
        _unmount(path)


@contextlib.contextmanager
def ext4(image: Path, path: Path, size: str) -> Iterator[str]:
    """ext4 (errors=remount-ro) on a loop device over ``image``; yields the device name."""
    path.mkdir(parents=True, exist_ok=True)
    _run("truncate", "-s", size, str(image))
    _run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(image))
    mounted = subprocess.run(
        ["mount", "-o", "loop,errors=remount-ro", str(image), str(path)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"no loop device to mount ext4 on: {mounted.stderr.strip()}")
    source = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", str(path)], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        yield Path(source).name
    finally:
        _unmount(path)


def _remount_ext4(image: Path, path: Path) -> None:
    """Unmount, repair (the journal was aborted) and mount again, read-write."""
    _unmount(path)
    subprocess.run(["e2fsck", "-fy", str(image)], capture_output=True)
    _run("mount", "-o", "loop,errors=remount-ro", str(image), str(path))


def _fill(directory: Path) -> Path:
    """Take every free byte of ``directory``'s filesystem with a file; returns it."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as f:
        chunk = b"\0" * (1 << 20)
        with contextlib.suppress(OSError):
            while True:
                f.write(chunk)
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 512)
    return filler


# ---------------------------------------------------------------------- clients
class Recorder:
    """Produces numbered records with confluent-kafka (acks=all, no retries) and records
    every acknowledgement and every error, in the order the producer reports them."""

    def __init__(self, bootstrap: str, topic: str, partitions: int | list[int]) -> None:
        self.topic = topic
        self.partitions = list(range(partitions)) if isinstance(partitions, int) else partitions
        self.acked: Acked = {}
        self.acked_seqs: list[int] = []
        self.errors: list[tuple[int, int]] = []  # (sequence number, error code)
        self.sent = 0
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "retries": 0,
                "enable.idempotence": False,
                "linger.ms": 5,
                "batch.size": 16384,
                "message.timeout.ms": 60000,
            }
        )

    def _report(self, err: ClientError | None, msg: object) -> None:
        value = msg.value()  # type: ignore[attr-defined]
        seq = int(value[:10])
        if err is None:
            self.acked[(msg.partition(), msg.offset())] = value  # type: ignore[attr-defined]
            self.acked_seqs.append(seq)
        else:
            self.errors.append((seq, err.code()))

    def send(self, count: int = 1) -> None:
        for _ in range(count):
            seq = self.sent
            value = b"%010d-" % seq + b"v" * (VALUE_SIZE - 11)
            while True:
                try:
                    self.producer.produce(
                        self.topic,
                        value,
                        partition=self.partitions[seq % len(self.partitions)],
                        on_delivery=self._report,
                    )
                    break
                except BufferError:
                    self.producer.poll(0.01)
            self.sent += 1
            self.producer.poll(0)

    def until_refused(self, deadline_s: float = 120) -> int:
        """Send until an error comes back; returns the first sequence number sent after
        the producer reported it (nothing from there on may be acknowledged)."""
        deadline = time.monotonic() + deadline_s
        while not self.errors:
            assert time.monotonic() < deadline, f"no error after {self.sent} records"
            self.send()
        return self.sent

    def close(self) -> None:
        """Wait for every report, then let the producer go (it would keep reconnecting to
        the stopped broker and log each attempt)."""
        assert self.producer.flush(60) == 0
        del self.producer


def _stored(client: RawClient, topic: str, partitions: int) -> Acked:
    """Every record of the topic, read back from offset 0 (each batch's CRC checked)."""
    stored: Acked = {}
    for p in range(partitions):
        offset = 0
        while True:
            part = fetch(client, topic, p, offset).responses[0].partitions[0]
            assert part.error_code == 0, part
            records = list(iter_records(part.records))
            if not records:
                break
            for _, record in records:
                assert (p, record.offset) not in stored
                stored[(p, record.offset)] = record.value
            offset = records[-1][1].offset + 1
    return stored


def _check_after_restart(broker: BrookProcess, topic: str, partitions: int, acked: Acked) -> None:
    """Every acknowledged record is there once, at its offset; nothing else is; new records
    get the offsets after them."""
    with RawClient(broker.bootstrap) as c:
        stored = _stored(c, topic, partitions)
        assert stored == acked
        values = list(stored.values())
        assert len(values) == len(set(values))
        for p in range(partitions):
            end = 1 + max((o for q, o in stored if q == p), default=-1)
            resp = produce(c, topic, p, build_simple_batch([b"after-%d" % p]))
            part = resp.responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == (0, end)


def _errors_seen(recorder: Recorder) -> set[int]:
    return {code for _, code in recorder.errors}


# ---------------------------------------------------------------------- tests
# brook.log.max.open.files=2: the appends to the three partitions take turns with two
# descriptors, so the failing writes and their roll backs (or the failing fsyncs) go through
# descriptors the pool has just reopened (or, for fsyncs, opened for the purpose).
SMALL_POOL = pytest.mark.parametrize("max_open_files", ["-1", "2"], ids=["pool", "2-descriptors"])


@SMALL_POOL
def test_full_disk_acknowledges_nothing_after_the_failure_and_loses_nothing(
    tmp_path: Path, max_open_files: str
) -> None:
    topic, partitions = "filled", 3
    with tmpfs(tmp_path / "disk", "4m") as disk:
        broker = BrookProcess(
            disk, {"log.segment.bytes": "400000", "brook.log.max.open.files": max_open_files}
        )
        with broker:
            with RawClient(broker.bootstrap) as c:
                create_topic(c, topic, partitions=partitions)
            recorder = Recorder(broker.bootstrap, topic, partitions)
            first_after = recorder.until_refused()
            recorder.send(60)  # all of these come after the failure
            recorder.close()
            assert ClientError.KAFKA_STORAGE_ERROR in _errors_seen(recorder), recorder.errors
            assert [s for s in recorder.acked_seqs if s >= first_after] == []
            assert len(recorder.acked) > 500
            # the broker itself answers KAFKA_STORAGE_ERROR, and keeps serving requests
            with RawClient(broker.bootstrap) as c:
                resp = produce(c, topic, 0, build_simple_batch([b"late"]))
                assert resp.responses[0].partition_responses[0].error_code == STORAGE_ERROR
                part = fetch(c, topic, 0, 0).responses[0].partitions[0]
                assert part.error_code == STORAGE_ERROR
            assert broker.stop() == 0
            assert "is offline" in broker.log()

            _run("mount", "-o", "remount,size=64m", str(disk))
            broker.start()
            _check_after_restart(broker, topic, partitions, recorder.acked)


def test_a_full_directory_leaves_the_other_directories_serving(tmp_path: Path) -> None:
    """Two log directories, the metadata log in the first: when the second fills up, its
    partitions answer KAFKA_STORAGE_ERROR while the first keeps taking records and topics."""
    topic = "spread"
    with tmpfs(tmp_path / "d0", "16m") as d0, tmpfs(tmp_path / "d1", "2m") as d1:
        broker = BrookProcess(d0, {"log.dirs": f"{d0},{d1}"})
        with broker:
            with RawClient(broker.bootstrap) as c:
                create_topic(c, topic, partitions=2)
            full = next(p for p in (0, 1) if (d1 / f"{topic}-{p}").exists())
            healthy = 1 - full
            assert (d0 / f"{topic}-{healthy}").exists()
            recorder = Recorder(broker.bootstrap, topic, [full])
            first_after = recorder.until_refused()
            recorder.send(30)
            recorder.close()
            assert ClientError.KAFKA_STORAGE_ERROR in _errors_seen(recorder), recorder.errors
            assert [s for s in recorder.acked_seqs if s >= first_after] == []
            assert len(recorder.acked) > 500
            with RawClient(broker.bootstrap) as c:
                resp = produce(c, topic, healthy, build_simple_batch([b"still"]))
                assert resp.responses[0].partition_responses[0].error_code == 0
                assert _create(c, "new", partitions=2).error_code == 0
                assert (d0 / "new-0").exists() and (d0 / "new-1").exists()
                resp = produce(c, "new", 1, build_simple_batch([b"fresh"]))
                assert resp.responses[0].partition_responses[0].error_code == 0
            assert broker.stop() == 0
            assert (d0 / ".kafka_cleanshutdown").exists()
            assert not (d1 / ".kafka_cleanshutdown").exists()

            _run("mount", "-o", "remount,size=64m", str(d1))
            broker.start()
            with RawClient(broker.bootstrap) as c:
                stored = _stored(c, topic, 2)
                assert {k: v for k, v in stored.items() if k[0] == full} == recorder.acked
                assert stored[(healthy, 0)] == b"still"


def test_full_metadata_log_commits_nothing_after_the_failure(tmp_path: Path) -> None:
    topic = "kept"
    with tmpfs(tmp_path / "disk", "16m") as disk:
        broker = BrookProcess(disk)
        with broker:
            with RawClient(broker.bootstrap) as c:
                create_topic(c, topic)
                records = [b"r%d" % i for i in range(20)]
                resp = produce(c, topic, 0, build_simple_batch(records))
                assert resp.responses[0].partition_responses[0].error_code == 0
                filler = _fill(disk)
                # Each change appends to the metadata log, until a page it needs is not there.
                acked, code = [], 0
                for i in range(2000):
                    code = _alter_retention(c, topic, 1_000_000 + i)
                    if code:
                        break
                    acked.append(1_000_000 + i)
                assert code == STORAGE_ERROR and acked, (code, len(acked))
                # nothing is committed after the failure
                assert _alter_retention(c, topic, 5) == STORAGE_ERROR
                created = _create(c, "after-failure")
                assert created.error_code == STORAGE_ERROR, created
                resp = produce(c, topic, 0, build_simple_batch([b"late"]))
                assert resp.responses[0].partition_responses[0].error_code == STORAGE_ERROR
            assert broker.stop() == 0
            assert "metadata log's directory" in broker.log()

            filler.unlink()
            broker.start()
            with RawClient(broker.bootstrap) as c:
                assert _retention(c, topic) == str(acked[-1])
                assert _topics(c) == {topic}
                assert _stored(c, topic, 1) == dict(enumerate_partition(records))
                assert _create(c, "after-failure").error_code == 0
                resp = produce(c, topic, 0, build_simple_batch([b"new"]))
                assert resp.responses[0].partition_responses[0].base_offset == len(records)


def test_group_offsets_on_a_full_disk(tmp_path: Path) -> None:
    """The group coordinator's writes to __consumer_offsets: a commit that cannot be written
    answers NOT_COORDINATOR (Kafka's mapping of KAFKA_STORAGE_ERROR), and after a restart the
    group has the last offset acknowledged."""
    overrides = {**GROUP_OVERRIDES, "offsets.topic.num.partitions": "1"}
    with tmpfs(tmp_path / "disk", "16m") as disk:
        broker = BrookProcess(disk, overrides)
        with broker:
            with RawClient(broker.bootstrap) as c:
                create_topic(c, "t")
                ready(c, "g")
                assert commit(c, "g", {("t", 0): (5, "m" * 500)}) == {("t", 0): 0}
                filler = _fill(disk)
                acked, code = 5, 0
                for offset in range(6, 2000):
                    code = commit(c, "g", {("t", 0): (offset, "m" * 500)})[("t", 0)]
                    if code:
                        break
                    acked = offset
                assert code == Errors.NOT_COORDINATOR, code
                assert commit(c, "g", {("t", 0): (99999, None)})[("t", 0)] != 0
            assert broker.stop() == 0
            filler.unlink()
            broker.start()
            with RawClient(broker.bootstrap) as c:
                ready(c, "g")
                assert committed(c, "g")[("t", 0)][0] == acked


def test_topic_creation_on_a_full_disk_commits_nothing(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "16m") as disk:
        broker = BrookProcess(disk)
        with broker:
            with RawClient(broker.bootstrap) as c:
                create_topic(c, "before")
                filler = _fill(disk)
                created = _create(c, "wanted", partitions=2)
                assert created.error_code == STORAGE_ERROR, created
                assert "wanted" not in _topics(c)
            assert broker.stop() == 0
            filler.unlink()
            broker.start()
            with RawClient(broker.bootstrap) as c:
                assert _topics(c) == {"before"}
                leftovers = [p.name for p in disk.iterdir() if p.name.startswith("wanted")]
                assert leftovers == []
                assert _create(c, "wanted", partitions=2).error_code == 0
                resp = produce(c, "wanted", 1, build_simple_batch([b"x"]))
                assert resp.responses[0].partition_responses[0].error_code == 0


def test_filesystem_turning_read_only_under_the_broker(tmp_path: Path) -> None:
    topic, partitions = "readonly", 2
    image, mnt = tmp_path / "ext4.img", tmp_path / "mnt"
    with ext4(image, mnt, "64M") as device:
        # Acknowledged means fsynced here: what only the page cache held is lost with the
        # filesystem, under Kafka's flush policy as under Brook's.
        broker = BrookProcess(mnt / "data", {"log.flush.interval.messages": "1"})
        broker.log_path = tmp_path / "broker.log"  # not on the filesystem that fails
        with broker:
            with RawClient(broker.bootstrap) as c:
                create_topic(c, topic, partitions=partitions)
            recorder = Recorder(broker.bootstrap, topic, partitions)
            recorder.send(300)
            recorder.producer.flush(30)
            assert len(recorder.acked) == 300
            Path(f"/sys/fs/ext4/{device}/trigger_fs_error").write_text("test: turn read-only\n")
            first_after = recorder.sent
            recorder.send(100)
            recorder.close()
            assert ClientError.KAFKA_STORAGE_ERROR in _errors_seen(recorder), recorder.errors
            assert [s for s in recorder.acked_seqs if s >= first_after] == []
            assert broker.stop() == 0
            assert "Read-only file system" in broker.log()

            _remount_ext4(image, mnt)
            broker.start()
            _check_after_restart(broker, topic, partitions, recorder.acked)


@SMALL_POOL
def test_fsync_failing_with_eio(tmp_path: Path, max_open_files: str) -> None:
    """flush.messages=1: each acknowledgement waits for an fsync; when writeback fails (EIO)
    the produce is refused, and so is everything after it."""
    topic, partitions = "unsynced", 2
    with tmpfs(tmp_path / "backing", "12m") as backing:
        image, mnt = backing / "ext4.img", tmp_path / "mnt"
        with ext4(image, mnt, "64M"):
            broker = BrookProcess(
                mnt / "data",
                {"log.flush.interval.messages": "1", "brook.log.max.open.files": max_open_files},
            )
            broker.log_path = tmp_path / "broker.log"
            with broker:
                with RawClient(broker.bootstrap) as c:
                    create_topic(c, topic, partitions=partitions)
                recorder = Recorder(broker.bootstrap, topic, partitions)
                first_after = recorder.until_refused()
                recorder.send(60)
                recorder.close()
                assert ClientError.KAFKA_STORAGE_ERROR in _errors_seen(recorder), recorder.errors
                assert [s for s in recorder.acked_seqs if s >= first_after] == []
                assert len(recorder.acked) > 500
                assert broker.stop() == 0
                assert "Input/output error" in broker.log()

                _run("mount", "-o", "remount,size=128m", str(backing))
                _remount_ext4(image, mnt)
                broker.start()
                _check_after_restart(broker, topic, partitions, recorder.acked)


def test_node_refuses_to_start_on_a_read_only_remount(tmp_path: Path) -> None:
    topic = "stopped"
    with tmpfs(tmp_path / "disk", "16m") as disk:
        broker = BrookProcess(disk)
        with broker, RawClient(broker.bootstrap) as c:
            create_topic(c, topic)
            records = [b"a", b"b", b"c"]
            produce(c, topic, 0, build_simple_batch(records))
        # (``with`` ended with kill -9; the data is in the page cache of the tmpfs)
        _run("mount", "-o", "remount,ro", str(disk))
        with pytest.raises(RuntimeError, match="did not start"):
            broker.start(timeout=30)
        assert "cannot start" in broker.log() and "Read-only file system" in broker.log()
        _run("mount", "-o", "remount,rw", str(disk))
        broker.start()
        with RawClient(broker.bootstrap) as c:
            assert _stored(c, topic, 1) == dict(enumerate_partition(records))
        broker.kill()


# ---------------------------------------------------------------------- requests
def enumerate_partition(values: list[bytes], partition: int = 0) -> Iterator[tuple[object, bytes]]:
    for offset, value in enumerate(values):
        yield (partition, offset), value


def _create(c: RawClient, name: str, partitions: int = 1) -> object:
    resp = c.request(
        19,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
            ],
            "timeout": 30000,
            "validate_only": False,
        },
    )
    return resp.topics[0]


def _alter_retention(c: RawClient, topic: str, value: int) -> int:
    resp = c.request(
        44,
        1,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": topic,
                    "configs": [
                        {"name": "retention.ms", "config_operation": 0, "value": str(value)}
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    return int(resp.responses[0].error_code)


def _retention(c: RawClient, topic: str) -> str | None:
    resp = c.request(
        32,
        4,
        {
            "resources": [
                {"resource_type": 2, "resource_name": topic, "configuration_keys": ["retention.ms"]}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    return resp.results[0].configs[0].value


def _topics(c: RawClient) -> set[str]:
    resp = c.request(
        3,
        12,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    return {t.name for t in resp.topics}
