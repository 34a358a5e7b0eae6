"""What connections cost a real broker process in memory (RSS from /proc/<pid>/status):
idle connections, size prefixes that declare 100 MiB and send nothing, and a client that
pipelines fetches of tens of MB and never reads its responses. The broker must stay small
and keep serving everyone else."""

from __future__ import annotations

import resource
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.batch import iter_batches
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio, encode_request
from brook.protocol.records import build_simple_batch, iter_records

MB = 1024 * 1024
IDLE_CONNECTIONS = 2000
# The whole broker with 2,000 idle connections (a bare broker is about 45 MB).
IDLE_RSS_BUDGET_KB = 100 * 1024


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def broker_pid(broker: BrookProcess) -> int:
    assert broker.proc is not None
    return broker.proc.pid


def wait_until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def many_files() -> Iterator[None]:
    """Room for thousands of sockets in this process and in the broker it starts."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, 20000)
    if wanted < 2 * IDLE_CONNECTIONS + 200:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} is too low for {IDLE_CONNECTIONS} sockets")
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def api_versions_request(correlation_id: int) -> bytes:
    body = encode_kio(
        build(
            request_class(ApiKey.API_VERSIONS, 3),
            {"client_software_name": "memory-test", "client_software_version": "1"},
        )
    )
    return encode_request(ApiKey.API_VERSIONS, 3, correlation_id, "idle", body)


def recv_frame(sock: socket.socket) -> bytes:
    head = recv_exact(sock, 4)
    return recv_exact(sock, struct.unpack(">i", head)[0])


def recv_exact(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)


def assert_served(broker: BrookProcess) -> None:
    """Another client gets its answer (RawClient checks it is the one to its request): the
    broker keeps serving everyone else."""
    with RawClient(broker.bootstrap, timeout=30) as c:
        resp = c.request(
            ApiKey.METADATA,
            12,
            {
                "topics": None,
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        assert resp.cluster_id, resp


def test_two_thousand_idle_connections_fit_in_100_mb(tmp_path: Path, many_files: None) -> None:
    with BrookProcess(tmp_path / "data") as broker:
        pid = broker_pid(broker)
        assert_served(broker)
        before = rss_kb(pid)
        socks: list[socket.socket] = []
        try:
            for i in range(IDLE_CONNECTIONS):
                s = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
                s.sendall(api_versions_request(i))
                socks.append(s)
            # Every connection has been accepted and has had its handshake answered.
            for s in socks:
                assert len(recv_frame(s)) > 4
            after = rss_kb(pid)
            print(f"RSS {before} kB before, {after} kB with {IDLE_CONNECTIONS} idle connections")
            assert after <= IDLE_RSS_BUDGET_KB, (before, after)
            assert_served(broker)
        finally:
            for s in socks:
                s.close()


def test_size_prefixes_declaring_100_mib_cost_nothing(tmp_path: Path) -> None:
    """50 connections each send a size prefix of 100 MiB and nothing else. The broker holds
    no more than it received: its RSS barely moves, and it serves other clients, small
    requests at once and a large one (above the read buffer, so under
    queued.max.request.bytes) as soon as the stalled connections go away."""
    with BrookProcess(tmp_path / "data") as broker:
        pid = broker_pid(broker)
        topic = "big-requests"
        with RawClient(broker.bootstrap) as c:
            create_topic(c, topic)
        assert_served(broker)
        before = rss_kb(pid)
        stalled = []
        big = RawClient(broker.bootstrap, timeout=60)
        try:
            for _ in range(50):
                s = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
                s.sendall(struct.pack(">i", 100 * MB))
                stalled.append(s)
            # The broker has read every prefix once a request sent after them is answered.
            assert_served(broker)
            after = rss_kb(pid)
            print(f"RSS {before} kB before, {after} kB with 50 prefixes of 100 MiB")
            assert after - before <= 20 * 1024, (before, after)

            # A 900 kB produce waits while the pool (256 MiB) is held by declared requests...
            batch = build_simple_batch([b"v" * 1000] * 900, timestamp=int(time.time() * 1000))
            assert len(batch) > 900_000
            body = produce_body(topic, batch)
            big.send_bytes(encode_request(ApiKey.PRODUCE, 9, 1, "big", body))
            big.sock.settimeout(1.0)
            with pytest.raises(TimeoutError):
                big.sock.recv(1)
        finally:
            for s in stalled:
                s.close()
        # ...and goes through once their reservations are given back.
        big.sock.settimeout(60)
        frame = big.recv_frame()
        big.close()
        response = decode_kio(response_class(ApiKey.PRODUCE, 9), frame, 5)
        assert response.responses[0].partition_responses[0].error_code == 0, response
        with RawClient(broker.bootstrap) as c:
            records = fetch(c, topic, 0, 0, max_bytes=4 * MB).responses[0].partitions[0].records
            assert sum(1 for _ in iter_records(records)) == 900


def produce_body(topic: str, batch: bytes) -> bytes:
    cls = request_class(ApiKey.PRODUCE, 9)
    request = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    return encode_kio(build(cls, request))


def fetch_request(topic: str, correlation_id: int, max_bytes: int) -> bytes:
    data = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    body = encode_kio(build(request_class(ApiKey.FETCH, 11), data))
    return encode_request(ApiKey.FETCH, 11, correlation_id, "never-reads", body)


def fill_topic(broker: BrookProcess, topic: str, megabytes: int) -> None:
    with RawClient(broker.bootstrap, timeout=60) as c:
        create_topic(c, topic)
        now = int(time.time() * 1000)
        for _ in range(megabytes):
            batch = build_simple_batch([b"x" * 1000] * 1000, timestamp=now)
            response = produce(c, topic, 0, batch)
            assert response.responses[0].partition_responses[0].error_code == 0, response


def read_all(broker: BrookProcess, topic: str) -> int:
    """Bytes a well-behaved consumer reads from offset 0 to the end, 4 MiB at a time."""
    total, offset = 0, 0
    with RawClient(broker.bootstrap, timeout=60) as c:
        while True:
            part = fetch(c, topic, 0, offset, max_bytes=4 * MB).responses[0].partitions[0]
            if not part.records:
                return total
            total += len(part.records)
            offset = [h for _, h in iter_batches(part.records)][-1].next_offset


def test_a_client_that_never_reads_costs_about_one_chunk(tmp_path: Path) -> None:
    """A client pipelines 200 fetches of a 40 MB partition and never reads. Kafka mutes such
    a connection; the broker must too, and must not hold the 40 MB response in memory."""
    with BrookProcess(tmp_path / "data") as broker:
        pid = broker_pid(broker)
        topic = "never-read"
        fill_topic(broker, topic, 40)
        stored = read_all(broker, topic)
        assert stored > 40_000_000
        before = rss_kb(pid)

        lazy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        lazy.connect(("127.0.0.1", broker.port))
        lazy.setblocking(False)
        requests = b"".join(fetch_request(topic, i, 64 * MB) for i in range(200))
        sent = 0
        try:
            # The broker stops reading once its answers pile up: the rest of the requests
            # stay in this socket's send buffer (or are never sent at all).
            while sent < len(requests):
                try:
                    sent += lazy.send(requests[sent : sent + 65536])
                except BlockingIOError:
                    break
            # The first response is on its way: this client's receive buffer fills up.
            wait_until(lambda: unread_bytes(lazy) > 32 * 1024, "the first response")
            # Meanwhile everyone else is served, including a client reading the whole topic.
            assert_served(broker)
            assert read_all(broker, topic) == stored
            during = rss_kb(pid)
            print(f"RSS {before} kB before, {during} kB while a client never reads")
            assert during - before <= 12 * 1024, (before, during)
        finally:
            lazy.close()
        assert_served(broker)
        assert read_all(broker, topic) == stored
        after = rss_kb(pid)
        print(f"RSS {after} kB after it closed")
        assert after - before <= 12 * 1024, (before, after)


def unread_bytes(sock: socket.socket) -> int:
    import fcntl
    import termios

    buf = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\x00\x00\x00\x00")
    return int(struct.unpack("i", buf)[0])


def long_poll_request(topic: str, correlation_id: int, max_wait_ms: int) -> bytes:
    data = {
        "replica_id": -1,
        "max_wait": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": MB,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "log_start_offset": -1,
                        "partition_max_bytes": MB,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    body = encode_kio(build(request_class(ApiKey.FETCH, 11), data))
    return encode_request(ApiKey.FETCH, 11, correlation_id, "pipeliner", body)


def test_requests_pipelined_behind_a_long_poll_are_read_only_so_far_ahead(
    tmp_path: Path,
) -> None:
    """A client sends a fetch that waits (long poll on an empty topic), then 60 produce
    requests of 1 MB. Requests are answered one at a time, so while the fetch waits the broker
    must not read 60 MB of requests into memory; afterwards every produce is answered."""
    with BrookProcess(tmp_path / "data") as broker:
        pid = broker_pid(broker)
        with RawClient(broker.bootstrap) as c:
            create_topic(c, "empty")
            create_topic(c, "target")
        fill_topic(broker, "warm-up", 2)  # the allocator has seen 1 MB requests
        before = rss_kb(pid)
        batch = build_simple_batch([b"p" * 1000] * 1000, timestamp=int(time.time() * 1000))
        stream = long_poll_request("empty", 0, 3000) + b"".join(
            encode_request(ApiKey.PRODUCE, 9, i, "pipeliner", produce_body("target", batch))
            for i in range(1, 61)
        )
        client = socket.create_connection(("127.0.0.1", broker.port), timeout=60)
        sender = threading.Thread(target=client.sendall, args=(stream,))
        sender.start()
        peak = before
        try:
            # RSS is sampled until the fetch's answer starts to arrive (at its max wait).
            while unread_bytes(client) == 0:
                peak = max(peak, rss_kb(pid))
                time.sleep(0.01)
            correlation_ids = [struct.unpack_from(">i", recv_frame(client))[0] for _ in range(61)]
            assert correlation_ids == list(range(61))
        finally:
            sender.join(60)
            client.close()
        print(f"RSS {before} kB before, peak {peak} kB while requests waited behind a long poll")
        assert peak - before <= 12 * 1024, (before, peak)
        with RawClient(broker.bootstrap) as c:
            part = fetch(c, "target", 0, 0, max_bytes=MB).responses[0].partitions[0]
            assert part.high_watermark == 60 * 1000


def test_records_deleted_while_being_sent_close_the_connection(tmp_path: Path) -> None:
    """A large fetch response goes out of its segment as the client reads. If the topic is
    deleted in the middle, the rest cannot be sent (its size has been): the connection is
    closed rather than sent other bytes, and the broker serves everyone else."""
    with BrookProcess(tmp_path / "data") as broker:
        topic = "deleted-mid-send"
        fill_topic(broker, topic, 24)
        lazy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        lazy.connect(("127.0.0.1", broker.port))
        lazy.sendall(fetch_request(topic, 1, 64 * MB))
        wait_until(lambda: unread_bytes(lazy) > 32 * 1024, "the response to start")
        with RawClient(broker.bootstrap) as c:
            resp = c.request(ApiKey.DELETE_TOPICS, 4, {"topic_names": [topic], "timeout": 30000})
            assert resp.responses[0].error_code == 0, resp
        lazy.settimeout(60)
        size = struct.unpack(">i", recv_exact(lazy, 4))[0]
        assert size > 24_000_000
        received = 0
        while received < size:
            chunk = lazy.recv(min(1 << 20, size - received))
            if not chunk:
                break
            received += len(chunk)
        lazy.close()
        assert received < size  # closed before the end of the response
        assert_served(broker)
