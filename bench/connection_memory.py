"""What connections cost a Brook broker in memory (RSS of the broker process).

    python -m bench.connection_memory [--connections 2000] [--topic-mb 40]

Four cases, each on a fresh broker: idle connections (each has had its ApiVersions
handshake); 50 connections that send a size prefix declaring 100 MiB and nothing else; a
client that pipelines 200 fetches of a partition holding ``--topic-mb`` MB and never reads;
and a client that sends 60 produce requests of 1 MB behind a long-poll fetch (peak while the
fetch waits). RSS is read from /proc/<pid>/status.
"""

from __future__ import annotations

import argparse
import resource
import socket
import struct
import threading
import time
from typing import Any

from brook.protocol.api import ApiKey, request_class
from brook.protocol.build import build
from brook.protocol.framing import encode_kio, encode_request
from brook.protocol.records import build_simple_batch

from .common import BrookProcess, brook_process, machine, save

MB = 1024 * 1024


def rss_kb(broker: BrookProcess) -> int:
    assert broker.proc is not None
    with open(f"/proc/{broker.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def request(api_key: int, version: int, correlation_id: int, data: dict[str, Any]) -> bytes:
    body = encode_kio(build(request_class(api_key, version), data))
    return encode_request(api_key, version, correlation_id, "bench", body)


def fetch_request(topic: str, correlation_id: int, max_bytes: int, max_wait: int = 0) -> bytes:
    partition = {
        "partition": 0,
        "current_leader_epoch": -1,
        "fetch_offset": 0,
        "log_start_offset": -1,
        "partition_max_bytes": max_bytes,
    }
    data = {
        "replica_id": -1,
        "max_wait": max_wait,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [partition]}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return request(ApiKey.FETCH, 11, correlation_id, data)


def produce_request(topic: str, correlation_id: int, batch: bytes) -> bytes:
    data = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    return request(ApiKey.PRODUCE, 9, correlation_id, data)


def recv_frame(sock: socket.socket) -> bytes:
    def exact(n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return bytes(out)

    return exact(struct.unpack(">i", exact(4))[0])


def unread(sock: socket.socket) -> int:
    import fcntl
    import termios

    return int(struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0" * 4))[0])


def call(broker: BrookProcess, api_key: int, version: int, data: dict[str, Any]) -> None:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=60) as s:
        s.sendall(request(api_key, version, 1, data))
        recv_frame(s)


def served(broker: BrookProcess) -> None:
    metadata = {
        "topics": None,
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    call(broker, ApiKey.METADATA, 12, metadata)


def create_topic(broker: BrookProcess, topic: str) -> None:
    spec = {
        "name": topic,
        "num_partitions": 1,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }
    data = {"topics": [spec], "timeout": 30000, "validate_only": False}
    call(broker, ApiKey.CREATE_TOPICS, 7, data)


def fill(broker: BrookProcess, topic: str, megabytes: int) -> None:
    create_topic(broker, topic)
    batch = build_simple_batch([b"x" * 1000] * 1000, timestamp=int(time.time() * 1000))
    with socket.create_connection(("127.0.0.1", broker.port), timeout=60) as s:
        for i in range(megabytes):
            s.sendall(produce_request(topic, i, batch))
            recv_frame(s)


def idle_connections(count: int) -> dict[str, int]:
    with brook_process() as broker:
        served(broker)
        before = rss_kb(broker)
        hello = {"client_software_name": "bench", "client_software_version": "1"}
        socks = []
        try:
            for i in range(count):
                s = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
                s.sendall(request(ApiKey.API_VERSIONS, 3, i, hello))
                socks.append(s)
            for s in socks:
                recv_frame(s)
            after = rss_kb(broker)
        finally:
            for s in socks:
                s.close()
    return {"rss_before_kb": before, "rss_after_kb": after}


def declared_100_mib() -> dict[str, int]:
    with brook_process() as broker:
        served(broker)
        before = rss_kb(broker)
        socks = []
        try:
            for _ in range(50):
                s = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
                s.sendall(struct.pack(">i", 100 * MB))
                socks.append(s)
            served(broker)  # answered after every prefix has been read
            after = rss_kb(broker)
        finally:
            for s in socks:
                s.close()
    return {"rss_before_kb": before, "rss_after_kb": after}


def never_reads(topic_mb: int) -> dict[str, int]:
    with brook_process() as broker:
        fill(broker, "t", topic_mb)
        served(broker)
        before = rss_kb(broker)
        lazy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        lazy.connect(("127.0.0.1", broker.port))
        lazy.setblocking(False)
        stream = b"".join(fetch_request("t", i, 64 * MB) for i in range(200))
        sent = 0
        try:
            while sent < len(stream):
                try:
                    sent += lazy.send(stream[sent : sent + 65536])
                except BlockingIOError:
                    break
            deadline = time.monotonic() + 60
            while unread(lazy) < 32 * 1024 and time.monotonic() < deadline:
                time.sleep(0.05)
            served(broker)
            time.sleep(1.0)  # let a broker that copies the response finish doing so
            during = rss_kb(broker)
        finally:
            lazy.close()
    return {"rss_before_kb": before, "rss_during_kb": during}


def behind_long_poll() -> dict[str, int]:
    with brook_process() as broker:
        create_topic(broker, "empty")
        create_topic(broker, "target")
        fill(broker, "warm", 2)
        before = rss_kb(broker)
        batch = build_simple_batch([b"p" * 1000] * 1000, timestamp=int(time.time() * 1000))
        stream = fetch_request("empty", 0, MB, max_wait=3000) + b"".join(
            produce_request("target", i, batch) for i in range(1, 61)
        )
        client = socket.create_connection(("127.0.0.1", broker.port), timeout=60)
        sender = threading.Thread(target=client.sendall, args=(stream,))
        sender.start()
        peak = before
        try:
            while unread(client) == 0:
                peak = max(peak, rss_kb(broker))
                time.sleep(0.01)
            for _ in range(61):
                recv_frame(client)
        finally:
            sender.join(60)
            client.close()
    return {"rss_before_kb": before, "rss_peak_kb": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--topic-mb", type=int, default=40)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(
        resource.RLIMIT_NOFILE, (min(hard, max(soft, 2 * args.connections + 500)), hard)
    )
    results = {
        "idle_connections": {"connections": args.connections, **idle_connections(args.connections)},
        "declared_100_mib_x50": declared_100_mib(),
        "never_reads": {"topic_mb": args.topic_mb, **never_reads(args.topic_mb)},
        "produce_behind_long_poll": behind_long_poll(),
    }
    for name, row in results.items():
        figures = ", ".join(f"{k} {v}" for k, v in row.items())
        print(f"{name:26} {figures}")
    print(f"saved to {save('connection_memory', {'machine': machine(), 'results': results})}")


if __name__ == "__main__":
    main()
