"""A large fetch response goes out of its segment a chunk at a time as the client reads
(``StoredSpan``), through the node's descriptor pool. On a real broker: the pool closes the
segment's descriptor between two chunks, with or without clients holding every other
descriptor of the process, and the response still arrives whole and unchanged; the log
directory fails between two chunks, and the connection is closed before the rest is sent
(nothing is read, opened or created in the failed directory) while the broker keeps serving
the other directory and, after a restart, every record.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess
from test_disk_full import _fill, tmpfs
from test_fd_limit import LimitedBrook, _api_versions

from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.errors import Errors
from brook.protocol.framing import decode_kio, encode_kio, encode_request
from brook.protocol.records import build_simple_batch, iter_records

MB = 1024 * 1024
BATCHES = 8  # of about 1 MB each: the response is 8 chunks


def _value(i: int) -> bytes:
    return b"%08d" % i + b"v" * 992


def _fill_partition(client: RawClient, topic: str, partition: int) -> None:
    now = int(time.time() * 1000)
    for b in range(BATCHES):
        batch = build_simple_batch([_value(b * 1000 + i) for i in range(1000)], timestamp=now)
        part = produce(client, topic, partition, batch).responses[0].partition_responses[0]
        assert part.error_code == 0, part


def _fetch_request(topic: str, partition: int) -> bytes:
    data = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 64 * MB,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "log_start_offset": -1,
                        "partition_max_bytes": 64 * MB,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    body = encode_kio(build(request_class(ApiKey.FETCH, 11), data))
    return encode_request(ApiKey.FETCH, 11, 7, "slow-reader", body)


def _unread(sock: socket.socket) -> int:
    import fcntl
    import termios

    buf = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\x00\x00\x00\x00")
    return int(struct.unpack("i", buf)[0])


def _wait_until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@contextlib.contextmanager
def _slow_fetch(broker: BrookProcess, topic: str, partition: int) -> Iterator[socket.socket]:
    """A client that asks for the whole partition and reads nothing yet: the broker has sent
    the first chunk and waits for the socket to drain before reading the next."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.connect(("127.0.0.1", broker.port))
    try:
        sock.sendall(_fetch_request(topic, partition))
        _wait_until(lambda: _unread(sock) > 32 * 1024, "the response to start")
        sock.settimeout(60)
        yield sock
    finally:
        sock.close()


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    """The declared size and what arrived of it before the broker closed (if it did)."""
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        assert chunk, "closed before the size"
        head += chunk
    size = struct.unpack(">i", head)[0]
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(min(MB, size - len(body)))
        if not chunk:
            break
        body += chunk
    return size, bytes(body)


def _records_of(frame: bytes) -> list[bytes]:
    response = decode_kio(response_class(ApiKey.FETCH, 11), frame, 4)
    part = response.responses[0].partitions[0]
    assert part.error_code == 0, part
    return [r.value for _, r in iter_records(part.records)]


def _segment_open(broker: BrookProcess, partition_dir: str) -> bool:
    """Whether the broker holds a descriptor on a .log file of ``partition_dir``."""
    assert broker.proc is not None
    fds = Path(f"/proc/{broker.proc.pid}/fd")
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if f"/{partition_dir}/" in target and target.endswith(".log"):
                return True
    return False


def _evict(broker: BrookProcess, client: RawClient, partition_dir: str) -> None:
    """Writes to other topics take the pool's descriptors (brook.log.max.open.files=2)
    until the slow fetch's segment holds none."""
    for i in range(3):
        create_topic(client, f"other-{i}")
        batch = build_simple_batch([b"other"])
        part = produce(client, f"other-{i}", 0, batch).responses[0].partition_responses[0]
        assert part.error_code == 0, part
    assert not _segment_open(broker, partition_dir)


def _expected() -> list[bytes]:
    return [_value(i) for i in range(BATCHES * 1000)]


def test_a_descriptor_closed_between_chunks_is_reopened(tmp_path: Path) -> None:
    broker = BrookProcess(tmp_path / "d", {"brook.log.max.open.files": "2"})
    with broker, RawClient(broker.bootstrap, timeout=60) as client:
        create_topic(client, "big")
        _fill_partition(client, "big", 0)
        with _slow_fetch(broker, "big", 0) as slow:
            _evict(broker, client, "big-0")
            size, frame = _read_response(slow)
        assert len(frame) == size > BATCHES * 1_000_000
        assert _records_of(frame) == _expected()


def test_a_chunk_needing_a_descriptor_when_clients_hold_every_other(tmp_path: Path) -> None:
    """The segment's descriptor was closed and clients have taken every descriptor the
    process may open when the next chunk is due: the pool closes one of its own to reopen
    the segment, the response arrives whole, and the directory stays online."""
    overrides = {"max.connections": "100000", "brook.log.max.open.files": "2"}
    with LimitedBrook(tmp_path / "d", overrides) as broker:
        with RawClient(broker.bootstrap, timeout=60) as client:
            create_topic(client, "big")
            _fill_partition(client, "big", 0)
            with _slow_fetch(broker, "big", 0) as slow:
                _evict(broker, client, "big-0")
                flood: list[socket.socket] = []
                try:
                    for _ in range(broker.nofile + 50):
                        with contextlib.suppress(OSError):
                            flood.append(socket.create_connection(("127.0.0.1", broker.port), 5))
                    _wait_until(
                        lambda: broker.open_fds() >= broker.nofile - 3, "descriptors to run out"
                    )
                    size, frame = _read_response(slow)
                finally:
                    for sock in flood:
                        sock.close()
            assert len(frame) == size
            assert _records_of(frame) == _expected()
            assert _api_versions(client) == 0
            batch = build_simple_batch([b"after"])
            part = produce(client, "big", 0, batch).responses[0].partition_responses[0]
            assert part.error_code == 0 and part.base_offset == BATCHES * 1000
        assert broker.proc is not None and broker.proc.poll() is None
        assert "is offline" not in broker.log()


def test_a_directory_failing_between_chunks_closes_only_that_connection(
    tmp_path: Path,
) -> None:
    """The partition's directory fills up and goes offline while its records are being sent:
    the rest is not read from the failed directory (the failure closes its logs, and a chunk
    due before that is refused by the directory check; nothing is opened or created there),
    the connection is closed before the end of the response, and the broker serves the other
    directory; after a restart with room again, every record is there."""
    with tmpfs(tmp_path / "d0", "16m") as d0, tmpfs(tmp_path / "d1", "24m") as d1:
        broker = BrookProcess(d0, {"log.dirs": f"{d0},{d1}"})
        with broker:
            with RawClient(broker.bootstrap, timeout=60) as client:
                create_topic(client, "big", partitions=2)
                full = next(p for p in (0, 1) if (d1 / f"big-{p}").exists())
                healthy = 1 - full
                _fill_partition(client, "big", full)
                files = sorted(p.name for p in (d1 / f"big-{full}").iterdir())
                with _slow_fetch(broker, "big", full) as slow:
                    filler = _fill(d1)
                    refused = produce(client, "big", full, build_simple_batch([b"x" * 4096]))
                    part = refused.responses[0].partition_responses[0]
                    assert part.error_code == Errors.KAFKA_STORAGE_ERROR
                    size, frame = _read_response(slow)
                assert size > BATCHES * 1_000_000 and len(frame) < size
                assert sorted(p.name for p in (d1 / f"big-{full}").iterdir()) == files
                assert _api_versions(client) == 0
                batch = build_simple_batch([b"healthy"])
                part = produce(client, "big", healthy, batch).responses[0].partition_responses[0]
                assert part.error_code == 0
                part = fetch(client, "big", full, 0).responses[0].partitions[0]
                assert part.error_code == Errors.KAFKA_STORAGE_ERROR
            assert broker.proc is not None and broker.proc.poll() is None
            assert broker.stop() == 0
            filler.unlink()
            broker.start()
            with RawClient(broker.bootstrap, timeout=60) as client:
                frame_records = fetch(client, "big", full, 0, max_bytes=64 * MB)
                records = frame_records.responses[0].partitions[0].records
                assert [r.value for _, r in iter_records(records)] == _expected()
