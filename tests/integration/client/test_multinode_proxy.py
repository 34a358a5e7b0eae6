"""The multi-node proxy (tests/multinode_proxy.py) that the KIP-794 tests and the experiments
in bench/ stand on: the fake nodes it announces, its two delay modes, its byte counts."""

from __future__ import annotations

import time

from multinode_proxy import MultiNodeProxy
from rawclient import RawClient, create_topic
from support import BrookProcess

from brook.protocol.api import ApiKey, request_class
from brook.protocol.build import build
from brook.protocol.framing import encode_kio, encode_request

DELAY_MS = 150.0


def answer_times(proxy: MultiNodeProxy, count: int) -> list[float]:
    """Seconds from sending ``count`` pipelined ApiVersions requests to each answer."""
    body = encode_kio(
        build(
            request_class(ApiKey.API_VERSIONS, 3),
            {"client_software_name": "proxy-test", "client_software_version": "1"},
        )
    )
    with RawClient(proxy.bootstrap) as client:
        start = time.monotonic()
        client.send_bytes(
            b"".join(
                encode_request(ApiKey.API_VERSIONS, 3, i, "proxy-test", body) for i in range(count)
            )
        )
        times = []
        for _ in range(count):
            client.recv_frame()
            times.append(time.monotonic() - start)
    return times


def test_serial_delay_spaces_the_answers_of_a_connection(brook_session: BrookProcess) -> None:
    with MultiNodeProxy(
        brook_session.bootstrap, 1, {1: DELAY_MS}, serial=True, delayed_apis=(ApiKey.API_VERSIONS,)
    ) as proxy:
        times = answer_times(proxy, 3)
    # Each answer leaves at least DELAY_MS after the one before it.
    assert times[0] >= DELAY_MS / 1000
    assert times[2] >= 3 * DELAY_MS / 1000, times


def test_pipelined_delay_holds_each_answer_from_its_own_arrival(
    brook_session: BrookProcess,
) -> None:
    with MultiNodeProxy(
        brook_session.bootstrap, 1, {1: DELAY_MS}, delayed_apis=(ApiKey.API_VERSIONS,)
    ) as proxy:
        times = answer_times(proxy, 3)
        traffic = proxy.api_traffic(ApiKey.API_VERSIONS, 1)
    assert times[0] >= DELAY_MS / 1000
    # Held together, not one after another (serial would need three delays).
    assert times[2] < 2.5 * DELAY_MS / 1000, times
    assert (traffic.requests, traffic.responses) == (3, 3)
    assert traffic.request_bytes > 0 and traffic.response_bytes > traffic.request_bytes


def test_metadata_names_the_fake_nodes_and_their_partitions(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook_session.bootstrap) as admin:
        create_topic(admin, unique_topic, 3)
    with MultiNodeProxy(brook_session.bootstrap, 3, node_ids=(1, 0, 2)) as proxy:
        with RawClient(proxy.bootstrap) as client:
            response = client.request(
                ApiKey.METADATA,
                12,
                {
                    "topics": [{"name": unique_topic, "topic_id": None}],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
        ports = dict(proxy.ports)
    assert {int(b.node_id): int(b.port) for b in response.brokers} == ports
    (topic,) = response.topics
    leaders = {int(p.partition_index): int(p.leader_id) for p in topic.partitions}
    assert leaders == {0: 1, 1: 0, 2: 2}
