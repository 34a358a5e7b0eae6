"""The Prometheus endpoint of a single broker (metrics.prometheus.listener), scraped over
HTTP: its per-topic figures equal what was produced and fetched, request counts grow, the log
size is the bytes stored; off by default; a bad listener refused at start naming the key."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from metrics_scrape import eventually, listening_ports, scrape, value, value_or_zero
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess, env_with_repo, free_port, python_exe

from brook import Consumer
from brook.client.cluster import TopicPartition
from brook.protocol.records import build_simple_batch, iter_records

KEY = "metrics.prometheus.listener"
DASHBOARD = Path(__file__).resolve().parents[3] / "docs" / "grafana" / "brook.json"


@pytest.fixture
def metered(tmp_path: Path) -> Iterator[tuple[BrookProcess, int]]:
    port = free_port()
    with BrookProcess(tmp_path / "data", {KEY: f"http://127.0.0.1:{port}"}) as broker:
        yield broker, port


def test_topic_figures_equal_what_was_produced_and_fetched(
    metered: tuple[BrookProcess, int], unique_topic: str
) -> None:
    broker, port = metered
    other = unique_topic + "-other"
    batches = [build_simple_batch([b"x" * n for _ in range(n)]) for n in (1, 5, 20)]
    with RawClient(broker.bootstrap) as c:
        create_topic(c, unique_topic)
        create_topic(c, other)
        before = scrape(port)
        produce_count = value_or_zero(
            before, "kafka_network_requestmetrics_requests_total", request="Produce", version="9"
        )
        for batch in batches:
            part = produce(c, unique_topic, 0, batch).responses[0].partition_responses[0]
            assert part.error_code == 0
        part = produce(c, other, 0, build_simple_batch([b"y"])).responses[0].partition_responses
        assert part[0].error_code == 0
        fetched = fetch(c, unique_topic, 0, 0).responses[0].partitions[0]
        records = list(iter_records(fetched.records))
        assert len(records) == 26
    sent = sum(len(b) for b in batches)
    after = scrape(port)
    assert (
        value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=unique_topic) == 26
    )
    assert value(after, "kafka_server_brokertopicmetrics_bytesin_total", topic=unique_topic) == sent
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total", topic=other) == 1
    # the all-topics figure (no topic label) covers both topics
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total") == 27
    assert value(
        after, "kafka_server_brokertopicmetrics_bytesout_total", topic=unique_topic
    ) == len(fetched.records)
    assert (
        value(
            after, "kafka_server_brokertopicmetrics_totalproducerequests_total", topic=unique_topic
        )
        == 3
    )
    # request counts grow by what was sent, and each has its latency
    produced = value(
        after, "kafka_network_requestmetrics_requests_total", request="Produce", version="9"
    )
    assert produced == produce_count + 4
    assert (
        value(after, "kafka_network_requestmetrics_totaltimems_count", request="Produce")
        >= produced
    )
    assert (
        value(after, "kafka_server_brokertopicmetrics_totalfetchrequests_total", topic=unique_topic)
        == 1
    )
    # a consumer's fetch counts as Fetch and as FetchConsumer, as in Kafka
    for name in ("Fetch", "FetchConsumer"):
        assert (
            value(after, "kafka_network_requestmetrics_requests_total", request=name, version="12")
            == 1
        )
    assert (
        value_or_zero(
            after, "kafka_network_requestmetrics_totaltimems_count", request="FetchFollower"
        )
        == 0
    )
    # the log holds exactly the produced batches
    labels = {"topic": unique_topic, "partition": "0"}
    assert value(after, "kafka_log_log_size", **labels) == sent
    assert value(after, "kafka_log_log_logendoffset", **labels) == 26
    assert value(after, "kafka_log_log_numlogsegments", **labels) == 1
    assert value(after, "kafka_server_replicamanager_leadercount") >= 2
    assert value(after, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(after, "kafka_server_raft_metrics_current_leader") == 1
    assert value(after, "kafka_controller_kafkacontroller_activecontrollercount") == 1


def test_event_loop_lag_is_probed(metered: tuple[BrookProcess, int]) -> None:
    _, port = metered
    first = value(scrape(port), "brook_eventloop_lag_ms_count")
    assert value(scrape(port), "brook_metrics_snapshot_ms") >= 0
    assert eventually(lambda: value(scrape(port), "brook_eventloop_lag_ms_count") > first)


def test_the_endpoint_is_off_by_default(brook: BrookProcess) -> None:
    assert brook.proc is not None
    assert listening_ports(brook.proc.pid) == {brook.port}


def test_the_endpoint_listens_where_configured(metered: tuple[BrookProcess, int]) -> None:
    broker, port = metered
    assert broker.proc is not None
    assert listening_ports(broker.proc.pid) == {broker.port, port}


def _start(tmp_path: Path, listener: str) -> tuple[int, str]:
    cmd = [python_exe(), "-m", "brook.cli.main", "server"]
    for key, val in {
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
        "log.dirs": str(tmp_path / "data"),
        KEY: listener,
    }.items():
        cmd += ["--override", f"{key}={val}"]
    done = subprocess.run(cmd, capture_output=True, env=env_with_repo(), timeout=60)
    return done.returncode, (done.stdout + done.stderr).decode()


@pytest.mark.parametrize(
    "listener", ["https://127.0.0.1:9404", "127.0.0.1:9404", "http://127.0.0.1:70000"]
)
def test_a_bad_listener_is_refused_naming_the_key(tmp_path: Path, listener: str) -> None:
    code, output = _start(tmp_path, listener)
    assert code == 2
    assert KEY in output and listener in output and "Traceback" not in output


def test_a_listener_whose_port_is_taken_stops_the_start(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, output = _start(tmp_path, f"http://127.0.0.1:{taken.getsockname()[1]}")
    assert code == 1
    assert "cannot start" in output and KEY in output and "Traceback" not in output


def test_a_deleted_topic_leaves_the_scrape(
    metered: tuple[BrookProcess, int], unique_topic: str
) -> None:
    broker, port = metered
    with RawClient(broker.bootstrap) as c:
        create_topic(c, unique_topic)
        produce(c, unique_topic, 0, build_simple_batch([b"x"]))
        name = "kafka_server_brokertopicmetrics_messagesin_total"
        assert value(scrape(port), name, topic=unique_topic) == 1
        deleted = c.request(20, 5, {"topic_names": [unique_topic], "timeout": 5000})
        assert deleted.responses[0].error_code == 0
    # neither its counters nor its log's gauges are scraped any more
    assert eventually(lambda: all(labels.get("topic") != unique_topic for labels in _labels(port)))
    assert value(scrape(port), name) == 1  # the all-topics count keeps what was counted


def _labels(port: int) -> list[dict[str, str]]:
    return [dict(labels) for _, labels in scrape(port)]


def test_groups_and_their_lag(metered: tuple[BrookProcess, int], unique_topic: str) -> None:
    broker, port = metered
    with RawClient(broker.bootstrap) as c:
        create_topic(c, unique_topic)
        produce(c, unique_topic, 0, build_simple_batch([b"x"] * 10))
    group = f"{unique_topic}-group"
    with Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group}) as consumer:
        consumer.commit({TopicPartition(unique_topic, 0): 4})
        labels = {"consumergroup": group, "topic": unique_topic, "partition": "0"}
        assert value(scrape(port), "kafka_consumergroup_lag", **labels) == 6
        consumer.commit({TopicPartition(unique_topic, 0): 10})
        assert value(scrape(port), "kafka_consumergroup_lag", **labels) == 0
    after = scrape(port)
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    assert value(after, prefix + "numgroups") == 1
    assert value(after, prefix + "numgroupsempty") == 1
    assert value(after, prefix + "numoffsets") == 1
    # the example dashboard asks only for what a node serves
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    used = {m for e in exprs for m in re.findall(r"\b(?:kafka|brook)_[a-z0-9_]+", e)}
    served = {name for name, _ in after}
    assert used and used <= served, used - served


def test_the_request_queue_holds_requests_pipelined_behind_a_long_poll(
    metered: tuple[BrookProcess, int], unique_topic: str
) -> None:
    broker, port = metered
    queue = "kafka_network_requestchannel_requestqueuesize"
    with RawClient(broker.bootstrap, timeout=60) as c, RawClient(broker.bootstrap) as other:
        create_topic(c, unique_topic)
        assert value(scrape(port), queue) == 0
        # a fetch that waits up to 60 s for a record, then three requests behind it on the
        # same connection: they wait in its queue until the fetch is answered
        c.request(1, 12, _long_poll(unique_topic, 60000), expect_response=False)
        for _ in range(3):
            c.request(18, 0, b"", expect_response=False)
        assert eventually(lambda: value(scrape(port), queue) == 3, timeout=50)
        produce(other, unique_topic, 0, build_simple_batch([b"wake"]))
        for _ in range(4):
            c.recv_frame()
    assert value(scrape(port), queue) == 0


def _long_poll(topic: str, max_wait_ms: int) -> dict[str, object]:
    return {
        "replica_id": -1,
        "max_wait": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
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
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def test_fetching_made_up_topics_adds_no_series(metered: tuple[BrookProcess, int]) -> None:
    broker, port = metered
    with RawClient(broker.bootstrap) as c:
        for n in range(3):
            part = fetch(c, f"no-such-topic-{n}", 0, 0).responses[0].partitions[0]
            assert part.error_code != 0
    after = scrape(port)
    assert value(after, "kafka_server_brokertopicmetrics_failedfetchrequests_total") == 3
    assert not any(labels.get("topic", "").startswith("no-such-topic") for labels in _labels(port))
