"""A minimal blocking Kafka protocol client for tests that need exact requests and codes."""

from __future__ import annotations

import socket
import ssl
import struct
from typing import Any

from brook.protocol.api import request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio, encode_request, response_body_offset


class ConnectionClosed(Exception):
    pass


class RawClient:
    def __init__(
        self,
        bootstrap: str,
        timeout: float = 10.0,
        client_id: str = "raw",
        tls: ssl.SSLContext | None = None,
    ) -> None:
        host, port = bootstrap.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=timeout)
        if tls is not None:
            try:
                sock = tls.wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        self.sock = sock
        self.client_id = client_id
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        head = self._recv_exact(4)
        (size,) = struct.unpack(">i", head)
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionClosed(f"connection closed after {len(out)} of {n} bytes")
            out += chunk
        return bytes(out)

    def request(
        self, api_key: int, version: int, data: dict[str, Any] | bytes, expect_response: bool = True
    ) -> Any:
        """Send one request (a dict built into that version's class, or a raw body)."""
        self.correlation += 1
        body = (
            data
            if isinstance(data, bytes)
            else encode_kio(build(request_class(api_key, version), data))
        )
        self.send_bytes(encode_request(api_key, version, self.correlation, self.client_id, body))
        if not expect_response:
            return None
        frame = self.recv_frame()
        (corr,) = struct.unpack_from(">i", frame, 0)
        assert corr == self.correlation, (corr, self.correlation)
        offset = response_body_offset(frame, api_key, version)
        return decode_kio(response_class(api_key, version), frame, offset)

    def is_closed(self, wait: float = 3.0) -> bool:
        """True when the broker has closed this connection (EOF within ``wait`` seconds)."""
        self.sock.settimeout(wait)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


def create_topic(
    client: RawClient, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> Any:
    resp = client.request(
        19,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout": 30000,
            "validate_only": False,
        },
    )
    assert resp.topics[0].error_code == 0, resp
    return resp


def produce(
    client: RawClient, topic: str, partition: int, records: bytes, version: int = 9, acks: int = -1
) -> Any:
    return client.request(
        0,
        version,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout": 30000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": records}]}
            ],
        },
        expect_response=acks != 0,
    )


def fetch(
    client: RawClient,
    topic: str,
    partition: int,
    offset: int,
    version: int = 12,
    max_wait: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 1 << 20,
    session_id: int = 0,
    session_epoch: int = -1,
    topic_id: Any = None,
) -> Any:
    return client.request(
        1,
        version,
        {
            "replica_id": -1,
            "replica_state": {"replica_id": -1, "replica_epoch": -1},
            "max_wait": max_wait,
            "min_bytes": min_bytes,
            "max_bytes": max_bytes,
            "isolation_level": 0,
            "session_id": session_id,
            "session_epoch": session_epoch,
            "topics": [
                {
                    "topic": topic,
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": max_bytes,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
