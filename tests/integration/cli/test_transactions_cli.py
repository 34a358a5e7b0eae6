"""``brook transactions`` against a running broker: a live transaction of confluent-kafka's
transactional producer listed and described; producers described per partition; a hanging
transaction (a transactional batch whose producer no coordinator knows, so no marker will
ever come) holding read_committed consumers back, found by ``find-hanging`` (the live
transaction beside it is not), aborted by ``abort`` so the last stable offset moves on and
read_committed consumers see what follows; aborts by producer id and epoch, and the errors
that name what was wrong."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Tool
from confluent_kafka import Producer
from rawclient import RawClient, create_topic, produce
from support import BrookProcess
from txn_support import READ_COMMITTED, UNVERIFIED, TxnProducer, fetch_at, latest, values

from brook.client.cluster import TopicPartition
from brook.client.consumer import Consumer
from brook.protocol.records import build_simple_batch


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrookProcess]:
    data: Path = tmp_path_factory.mktemp("transactions-cli") / "data"
    # hanging transactions are made with raw batches no coordinator verifies (KIP-890 off)
    with BrookProcess(data, UNVERIFIED) as process:
        yield process


def _topic(broker: BrookProcess, partitions: int = 1) -> str:
    topic = f"txcli-{uuid.uuid4().hex[:8]}"
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=partitions)
    return topic


def _cells(line: str) -> list[str]:
    """A row of Kafka's table: every value padded and followed by a tab."""
    assert line.endswith("\t"), repr(line)
    return [c.rstrip() for c in line.split("\t")[:-1]]


def _table(out: str) -> list[list[str]]:
    assert out.endswith("\n"), repr(out)
    return [_cells(line) for line in out[:-1].split("\n")]


@pytest.fixture
def live(broker: BrookProcess) -> Iterator[tuple[str, str, Producer]]:
    """A transaction of confluent-kafka's producer, open on partitions 0 and 1."""
    topic = _topic(broker, partitions=2)
    tid = f"live-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    producer.init_transactions(30)
    producer.begin_transaction()
    for p in (0, 1):
        producer.produce(topic, b"v", partition=p)
    producer.flush(30)
    yield topic, tid, producer
    producer.abort_transaction(30)


def test_list_and_describe_a_live_transaction(
    tool: Tool, broker: BrookProcess, live: tuple[str, str, Producer]
) -> None:
    topic, tid, _ = live
    code, out, err = tool("transactions", "list", bootstrap=broker.bootstrap)
    assert (code, err) == (0, "")
    rows = _table(out)
    assert rows[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    (mine,) = [r for r in rows[1:] if r[0] == tid]
    assert mine[1] == "1" and mine[3] == "Ongoing" and int(mine[2]) >= 0

    # Running for less than an hour: not listed with --duration-filter of an hour. An id
    # with no transaction (start time -1) is, as Kafka's coordinator filters: now - start.
    idle = f"idle-{uuid.uuid4().hex[:6]}"
    Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": idle}).init_transactions(
        30
    )
    code, out, err = tool(
        "transactions", "list", "--duration-filter", "3600000", bootstrap=broker.bootstrap
    )
    assert (code, err) == (0, "")
    listed = {r[0]: r[3] for r in _table(out)[1:]}
    assert tid not in listed and listed[idle] == "Empty"

    code, out, err = tool(
        "transactions", "describe", "--transactional-id", tid, bootstrap=broker.bootstrap
    )
    assert (code, err) == (0, "")
    header, row = _table(out)
    assert header == [
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
        "TransactionTimeoutMs",
        "CurrentTransactionStartTimeMs",
        "TransactionDurationMs",
        "TopicPartitions",
    ]
    assert row[:5] == ["1", tid, mine[2], "0", "Ongoing"]
    assert row[5] == "60000"  # confluent-kafka's default transaction.timeout.ms
    start, duration = int(row[6]), int(row[7])
    assert abs(start - time.time() * 1000) < 60_000 and 0 <= duration < 60_000
    assert row[8] == f"{topic}-0,{topic}-1"


def test_describe_an_idle_transactional_id(tool: Tool, broker: BrookProcess) -> None:
    """Kafka sends start time -1 for an id with no transaction running: None, None."""
    tid = f"idle-{uuid.uuid4().hex[:6]}"
    Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid}).init_transactions(30)
    code, out, err = tool(
        "transactions", "describe", "--transactional-id", tid, bootstrap=broker.bootstrap
    )
    assert (code, err) == (0, "")
    _, row = _table(out)
    assert row[1:2] + row[3:] == [tid, "0", "Empty", "60000", "None", "None", ""]


def test_describe_an_unknown_transactional_id(tool: Tool, broker: BrookProcess) -> None:
    code, out, err = tool(
        "transactions", "describe", "--transactional-id", "nobody", bootstrap=broker.bootstrap
    )
    assert (code, out) == (1, "")
    assert err.startswith("Failed to describe transaction state of transactional-id `nobody`: ")
    assert "TRANSACTIONAL_ID_NOT_FOUND" in err and "could not be found" in err
    code, out, err = tool(
        "transactions", "describe", "--transactional-id", "", bootstrap=broker.bootstrap
    )
    assert (code, out) == (1, "")
    assert "INVALID_REQUEST" in err and "a transactional id cannot be empty" in err


def test_describe_producers(tool: Tool, broker: BrookProcess) -> None:
    topic = _topic(broker)
    with RawClient(broker.bootstrap) as c:
        p = TxnProducer(c, topic)
        assert p.send(b"a", b"b") == (0, 0)
        assert (
            produce(c, topic, 0, build_simple_batch([b"plain"]))
            .responses[0]
            .partition_responses[0]
            .error_code
            == 0
        )
    code, out, err = tool(
        "transactions",
        "describe-producers",
        "--topic",
        topic,
        "--partition",
        "0",
        bootstrap=broker.bootstrap,
    )
    assert (code, err) == (0, "")
    header, row = _table(out)
    assert header == [
        "ProducerId",
        "ProducerEpoch",
        "LatestCoordinatorEpoch",
        "LastSequence",
        "LastTimestamp",
        "CurrentTransactionStartOffset",
    ]
    # The plain batch had no producer id: one producer, its transaction open from offset 0.
    assert row[:4] == [str(p.pid), str(p.epoch), "-1", "1"] and row[5] == "0"
    assert abs(int(row[4]) - time.time() * 1000) < 60_000
    # Asked of broker 1, the leader: the same.
    code, out2, _ = tool(
        "transactions",
        "describe-producers",
        "--topic",
        topic,
        "--partition",
        "0",
        "--broker-id",
        "1",
        bootstrap=broker.bootstrap,
    )
    assert (code, out2) == (0, out)


@pytest.mark.parametrize(
    ("topic", "partition", "what"),
    [("no-such-topic", "0", "no-such-topic-0"), (None, "7", "-7")],
)
def test_describe_producers_of_a_partition_that_does_not_exist(
    tool: Tool, broker: BrookProcess, topic: str | None, partition: str, what: str
) -> None:
    name = topic or _topic(broker)
    code, out, err = tool(
        "transactions",
        "describe-producers",
        "--topic",
        name,
        "--partition",
        partition,
        bootstrap=broker.bootstrap,
    )
    assert (code, out) == (1, "")
    assert err.startswith(f"Failed to describe producers for partition {name}-{partition}")
    assert "UNKNOWN_TOPIC_OR_PARTITION" in err and "does not exist" in err, err
    assert what in err


def _find_hanging(tool: Tool, broker: BrookProcess, *scope: str) -> list[list[str]]:
    code, out, err = tool(
        "transactions",
        "find-hanging",
        *scope,
        "--max-transaction-timeout",
        "0",
        bootstrap=broker.bootstrap,
    )
    assert (code, err) == (0, "")
    rows = _table(out)
    assert rows[0] == [
        "Topic",
        "Partition",
        "ProducerId",
        "ProducerEpoch",
        "CoordinatorEpoch",
        "StartOffset",
        "LastTimestamp",
        "Duration(min)",
    ]
    return rows[1:]


def _committed_values(broker: BrookProcess, topic: str) -> list[bytes]:
    """What a raw read_committed Fetch returns: whole batches below the LSO (aborted ones
    too; the client drops those)."""
    with RawClient(broker.bootstrap) as c:
        return values(fetch_at(c, topic, READ_COMMITTED))


def _read_committed(broker: BrookProcess, topic: str, want: int) -> list[bytes]:
    """Brook's consumer with isolation.level=read_committed, from the start of partition 0."""
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "isolation.level": "read_committed"}
    )
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < want and time.monotonic() < deadline:
            got += [r.value for r in consumer.poll(200) if r.value is not None]
        got += [r.value for r in consumer.poll(300) if r.value is not None]  # nothing more
        return got
    finally:
        consumer.close()


def test_a_hanging_transaction_is_found_and_aborted(
    tool: Tool, broker: BrookProcess, live: tuple[str, str, Producer]
) -> None:
    live_topic = live[0]
    topic = _topic(broker)
    with RawClient(broker.bootstrap) as c:
        hanging = TxnProducer(c, topic)  # an idempotent producer id: no coordinator knows it
        assert hanging.send(b"stuck") == (0, 0)
        for i in range(3):
            response = produce(c, topic, 0, build_simple_batch([f"after-{i}".encode()]))
            assert response.responses[0].partition_responses[0].error_code == 0
        # The open transaction holds the last stable offset at its start.
        assert latest(c, topic, READ_COMMITTED) == 0 and latest(c, topic, 0) == 4
    assert _committed_values(broker, topic) == []
    assert _read_committed(broker, topic, 0) == []

    found = _find_hanging(tool, broker, "--topic", topic)
    assert len(found) == 1
    row = found[0]
    assert row[:6] == [topic, "0", str(hanging.pid), str(hanging.epoch), "-1", "0"]
    assert int(row[7]) >= 0
    # By broker: the same one across every topic, and not the live transaction, whose
    # coordinator still includes its partitions.
    by_broker = _find_hanging(tool, broker, "--broker-id", "1")
    assert [r[:2] for r in by_broker if r[0] in (topic, live_topic)] == [[topic, "0"]]
    assert _find_hanging(tool, broker, "--topic", live_topic) == []

    code, out, err = tool(
        "transactions",
        "abort",
        "--topic",
        topic,
        "--partition",
        "0",
        "--start-offset",
        "0",
        bootstrap=broker.bootstrap,
    )
    assert (code, out, err) == (0, "", "")
    with RawClient(broker.bootstrap) as c:
        assert latest(c, topic, READ_COMMITTED) == 5  # past the marker at offset 4
    assert _committed_values(broker, topic) == [b"stuck", b"after-0", b"after-1", b"after-2"]
    assert _read_committed(broker, topic, 3) == [b"after-0", b"after-1", b"after-2"]
    with RawClient(broker.bootstrap) as c:
        aborted = fetch_at(c, topic, READ_COMMITTED).aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(hanging.pid, 0)]
    assert _find_hanging(tool, broker, "--topic", topic, "--partition", "0") == []


def test_abort_by_producer_id_and_epoch(tool: Tool, broker: BrookProcess) -> None:
    topic = _topic(broker)

    def abort(pid: int, epoch: int, coordinator_epoch: int) -> tuple[int, str, str]:
        return tool(
            "transactions",
            "abort",
            "--topic",
            topic,
            "--partition",
            "0",
            "--producer-id",
            str(pid),
            "--producer-epoch",
            str(epoch),
            "--coordinator-epoch",
            str(coordinator_epoch),
            bootstrap=broker.bootstrap,
        )

    with RawClient(broker.bootstrap) as c:
        hanging = TxnProducer(c, topic)
        assert hanging.send(b"stuck") == (0, 0)
        # DescribeProducers says -1 for a producer that never got a marker: written as 0.
        assert abort(hanging.pid, hanging.epoch, -1) == (0, "", "")
        assert latest(c, topic, READ_COMMITTED) == 2
        assert hanging.send(b"next") == (0, 2)
        # An epoch older than the producer's is refused with Kafka's error, nothing written.
        code, out, err = abort(hanging.pid, hanging.epoch - 1, 0)
        assert (code, out) == (1, "")
        assert err.startswith(
            f"Failed to abort transaction AbortTransactionSpec(topicPartition={topic}-0, "
            f"producerId={hanging.pid}, producerEpoch={hanging.epoch - 1}, "
            "coordinatorEpoch=0): "
        )
        assert "INVALID_PRODUCER_EPOCH" in err
        assert latest(c, topic, READ_COMMITTED) == 2 and latest(c, topic, 0) == 3


def test_abort_errors_name_what_was_wrong(tool: Tool, broker: BrookProcess) -> None:
    topic = _topic(broker)
    b = broker.bootstrap
    code, out, err = tool(
        "transactions",
        "abort",
        "--topic",
        topic,
        "--partition",
        "0",
        "--start-offset",
        "5",
        bootstrap=b,
    )
    assert (code, out, err) == (
        1,
        "",
        f"Could not find any open transactions starting at offset 5 on partition {topic}-0\n",
    )
    code, out, err = tool(
        "transactions", "abort", "--topic", topic, "--partition", "0", bootstrap=b
    )
    assert code == 1 and err.startswith("The transaction to abort must be identified either")
    code, out, err = tool(
        "transactions",
        "abort",
        "--topic",
        "no-such-topic",
        "--partition",
        "0",
        "--producer-id",
        "5",
        "--producer-epoch",
        "0",
        "--coordinator-epoch",
        "0",
        bootstrap=b,
    )
    assert code == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in err
    assert re.search(r"partition no-such-topic-0 does not exist", err), err


def test_command_config(tool: Tool, broker: BrookProcess, tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("client.id=txn-tool\nrequest.timeout.ms=15000\n")
    code, out, err = tool(
        "transactions", "--command-config", str(config), "list", bootstrap=broker.bootstrap
    )
    assert (code, err) == (0, "") and out.startswith("TransactionalId")
    config.write_text("no.such.setting=1\n")
    code, out, err = tool(
        "transactions", "--command-config", str(config), "list", bootstrap=broker.bootstrap
    )
    assert (code, out) == (1, "") and "no.such.setting" in err
    missing = tmp_path / "missing.properties"
    code, out, err = tool(
        "transactions", "--command-config", str(missing), "list", bootstrap=broker.bootstrap
    )
    assert (code, out) == (1, "") and str(missing) in err
