"""A node under a low RLIMIT_NOFILE: more partitions than descriptors, clients that take every
descriptor, a request beyond max.broker.partitions, restarts under the same limit.

The broker runs under ``prlimit --nofile=N:N``; its segment files share a pool sized from
that limit (brook.log.max.open.files=-1), so hosting thousands of partitions costs no more
descriptors; clients beyond max.connections are refused, and when accept() fails with EMFILE
anyway (the limit raised by hand) new clients are only delayed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rawclient import ConnectionClosed, RawClient, fetch, produce
from support import BrookProcess

from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch, iter_records

NOFILE = 256
TOPICS = [("wide-a", 600), ("wide-b", 600)]  # 1200 partitions, 3600 segment files
LIMIT = 1250  # max.broker.partitions


class LimitedBrook(BrookProcess):
    """``brook server`` under ``prlimit --nofile=N:N``."""

    nofile = NOFILE

    def command(self) -> list[str]:
        return ["prlimit", f"--nofile={self.nofile}:{self.nofile}", "--", *super().command()]

    def open_fds(self) -> int:
        assert self.proc is not None
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))


def _create(client: RawClient, name: str, partitions: int) -> Any:
    return client.request(
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
            "timeout": 120000,
            "validate_only": False,
        },
    ).topics[0]


def _metadata(client: RawClient) -> dict[str, int]:
    resp = client.request(
        3,
        12,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    assert all(t.error_code == 0 for t in resp.topics)
    return {t.name: len(t.partitions) for t in resp.topics}


def _spread() -> list[tuple[str, int]]:
    """First, last and a few in between of every topic."""
    return [(name, p) for name, count in TOPICS for p in (0, 1, count // 3, count // 2, count - 1)]


def _value(topic: str, partition: int, i: int) -> bytes:
    return f"{topic}/{partition}/{i}".encode()


def _produce_spread(client: RawClient, start: int) -> None:
    for topic, p in _spread():
        batch = build_simple_batch([_value(topic, p, start + i) for i in range(3)])
        part = produce(client, topic, p, batch).responses[0].partition_responses[0]
        assert part.error_code == 0, (topic, p, part.error_code)
        assert part.base_offset == start


def _check_spread(client: RawClient, records: int) -> None:
    for topic, p in _spread():
        part = fetch(client, topic, p, 0).responses[0].partitions[0]
        assert part.error_code == 0
        values = [r.value for _, r in iter_records(part.records)]
        assert values == [_value(topic, p, i) for i in range(records)], (topic, p)


def _api_versions(client: RawClient) -> int:
    return int(
        client.request(
            18, 3, {"client_software_name": "t", "client_software_version": "1"}
        ).error_code
    )


@contextlib.contextmanager
def _flood(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` client connections (the broker takes, or sheds, them as it can)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            with contextlib.suppress(OSError):
                socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        yield socks
    finally:
        for sock in socks:
            sock.close()


def _serving_new_client(bootstrap: str, deadline_s: float = 30.0) -> bool:
    """A new client connects and gets an answer within the deadline."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            with RawClient(bootstrap, timeout=5) as client:
                return _api_versions(client) == 0
        except (OSError, ConnectionClosed):
            time.sleep(0.2)
    return False


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LimitedBrook]:
    node = LimitedBrook(tmp_path / "d", {"max.broker.partitions": str(LIMIT)})
    with node:
        yield node


def test_partitions_beyond_the_descriptor_limit(broker: LimitedBrook, tmp_path: Path) -> None:
    with RawClient(broker.bootstrap, timeout=120) as client:
        for name, count in TOPICS:
            result = _create(client, name, count)
            assert result.error_code == 0, result.error_message
        assert broker.open_fds() < NOFILE
        _produce_spread(client, 0)
        _check_spread(client, 3)

        # Beyond max.broker.partitions: refused as Kafka refuses by policy, nothing written.
        refused = _create(client, "one-too-many", LIMIT - 1200 + 1)
        assert refused.error_code == Errors.POLICY_VIOLATION
        assert f"max.broker.partitions={LIMIT}" in refused.error_message
        fits = _create(client, "just-fits", LIMIT - 1200)
        assert fits.error_code == 0
        topics = _metadata(client)
        assert "one-too-many" not in topics
        assert {name: topics[name] for name, _ in TOPICS} == dict(TOPICS)
    assert not list((tmp_path / "d").glob("one-too-many-*"))

    # A clean restart under the same limit: every partition and record is back.
    broker.restart(clean=True)
    with RawClient(broker.bootstrap, timeout=120) as client:
        topics = _metadata(client)
        assert {name: topics[name] for name, _ in TOPICS} == dict(TOPICS)
        assert "one-too-many" not in topics and topics["just-fits"] == LIMIT - 1200
        _check_spread(client, 3)
        _produce_spread(client, 3)
        _check_spread(client, 6)
        assert broker.open_fds() < NOFILE

    # And after kill -9, recovering from the checkpoints.
    broker.restart(clean=False)
    with RawClient(broker.bootstrap, timeout=120) as client:
        _check_spread(client, 6)


def _refused(socks: list[socket.socket]) -> int:
    """How many of these connections the broker has closed."""
    closed = 0
    for sock in socks:
        sock.settimeout(0.01)
        try:
            closed += sock.recv(1) == b""
        except TimeoutError:
            pass
        except OSError:
            closed += 1
    return closed


def _produce_one(client: RawClient, topic: str, partition: int, value: bytes) -> int:
    batch = build_simple_batch([value])
    return int(
        produce(client, topic, partition, batch).responses[0].partition_responses[0].error_code
    )


def test_connections_beyond_max_connections_are_refused(broker: LimitedBrook) -> None:
    """max.connections (by default what RLIMIT_NOFILE leaves beside the logs' pool and a
    reserve) keeps clients from taking the descriptors the node needs: a flood of clients
    is refused beyond it while the node goes on writing files for its clients."""
    with RawClient(broker.bootstrap, timeout=60) as client:
        assert _create(client, "busy", 50).error_code == 0
        assert _produce_one(client, "busy", 1, b"before") == 0
        with _flood(broker.port, NOFILE + 50) as socks:
            deadline = time.monotonic() + 30
            while _refused(socks) < 100 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _refused(socks) >= 100
            assert broker.open_fds() < NOFILE - 32
            # New partitions: leader-epoch checkpoints, new segment files, all opened now.
            for p in (0, 25, 49):
                assert _produce_one(client, "busy", p, b"while full") == 0
        assert "max.connections" in broker.log()
        assert _serving_new_client(broker.bootstrap)
        for p in (0, 25, 49):
            part = fetch(client, "busy", p, 0).responses[0].partitions[0]
            assert [r.value for _, r in iter_records(part.records)] == [b"while full"]


def test_accept_goes_on_after_running_out_of_descriptors(tmp_path: Path) -> None:
    """Without the connection limit, clients take every descriptor and accept() fails with
    EMFILE; once they are gone, new clients are accepted again (uvloop sheds the waiting
    connections and keeps listening; asyncio's loop retries a second later)."""
    with LimitedBrook(tmp_path / "d", {"max.connections": "100000"}) as broker:
        with RawClient(broker.bootstrap, timeout=60) as client:
            assert _create(client, "t", 3).error_code == 0
            assert _produce_one(client, "t", 0, b"first") == 0
            with _flood(broker.port, NOFILE + 50):
                deadline = time.monotonic() + 30
                while broker.open_fds() < NOFILE - 3 and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert broker.open_fds() >= NOFILE - 3  # out of descriptors
            assert _serving_new_client(broker.bootstrap)
            assert _produce_one(client, "t", 0, b"second") == 0
            part = fetch(client, "t", 0, 0).responses[0].partitions[0]
            assert [r.value for _, r in iter_records(part.records)] == [b"first", b"second"]
        assert broker.proc is not None and broker.proc.poll() is None


def test_running_out_of_descriptors_keeps_the_log_directory_online(tmp_path: Path) -> None:
    """Clients take every descriptor while the node writes its checkpoints (every 100 ms
    here) and serves a produce: what fails for want of a descriptor fails, but that is not a
    disk failure. Once the clients are gone, the same log directory takes writes again and
    nothing written is lost across a restart."""
    overrides = {
        "max.connections": "100000",
        "replica.high.watermark.checkpoint.interval.ms": "100",
        "log.flush.offset.checkpoint.interval.ms": "100",
    }
    with LimitedBrook(tmp_path / "d", overrides) as broker:
        with RawClient(broker.bootstrap, timeout=60) as client:
            assert _create(client, "t", 3).error_code == 0
            assert _produce_one(client, "t", 0, b"before") == 0
            with _flood(broker.port, NOFILE + 50):
                deadline = time.monotonic() + 60
                while "out of file descriptors" not in broker.log():
                    assert time.monotonic() < deadline, broker.log()
                    time.sleep(0.1)
                # A produce now succeeds or is refused (retriably), never takes the disk down.
                during = _produce_one(client, "t", 1, b"during")
                assert during in (Errors.NONE, Errors.KAFKA_STORAGE_ERROR)
            assert _serving_new_client(broker.bootstrap)
            assert _produce_one(client, "t", 0, b"after") == 0
            assert _produce_one(client, "t", 2, b"after") == 0
            part = fetch(client, "t", 0, 0).responses[0].partitions[0]
            assert [r.value for _, r in iter_records(part.records)] == [b"before", b"after"]
        assert "is offline" not in broker.log()
        broker.restart(clean=True)
        with RawClient(broker.bootstrap, timeout=60) as client:
            for p, values in ((0, [b"before", b"after"]), (2, [b"after"])):
                part = fetch(client, "t", p, 0).responses[0].partitions[0]
                assert [r.value for _, r in iter_records(part.records)] == values
