"""``brook reassign-partitions`` without a broker: Kafka's option checks and messages, its
JSON files, its replica assignment for --generate."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from brook.cli.main import main
from brook.cli.reassign_partitions import (
    ToolFailure,
    assign_replicas,
    check_execute_data,
    parse_reassignment_data,
    parse_topics_data,
    reassignment_json,
    reassignment_states,
)
from brook.client.admin.types import PartitionReassignment
from brook.client.cluster import BrokerNode, TopicPartition

BOOT = ["--bootstrap-server", "127.0.0.1:1"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(["reassign-partitions", *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (BOOT, "Command must include exactly one action: "
         "--generate, --execute, --verify, --cancel, --list"),
        ([*BOOT, "--list", "--verify"], "Command must include exactly one action: "
         "--generate, --execute, --verify, --cancel, --list"),
        (["--list"], "Please specify either --bootstrap-server or --bootstrap-controller"),
        ([*BOOT, "--bootstrap-controller", "h:1", "--list"],
         "Please don't specify both --bootstrap-server and --bootstrap-controller"),
        ([*BOOT, "--verify"], 'Missing required argument "[reassignment-json-file]"'),
        ([*BOOT, "--execute"], 'Missing required argument "[reassignment-json-file]"'),
        ([*BOOT, "--cancel"], 'Missing required argument "[reassignment-json-file]"'),
        ([*BOOT, "--generate", "--broker-list", "1"],
         'Missing required argument "[topics-to-move-json-file]"'),
        ([*BOOT, "--generate", "--topics-to-move-json-file", "t.json"],
         'Missing required argument "[broker-list]"'),
        ([*BOOT, "--list", "--throttle", "10"],
         'Option "[throttle]" can\'t be used with action "[list]"'),
        ([*BOOT, "--verify", "--reassignment-json-file", "f", "--additional"],
         'Option "[additional]" can\'t be used with action "[verify]"'),
        ([*BOOT, "--generate", "--topics-to-move-json-file", "t", "--broker-list", "1",
          "--reassignment-json-file", "f"],
         'Option "[reassignment-json-file]" can\'t be used with action "[generate]"'),
        ([*BOOT, "--execute", "--reassignment-json-file", "f", "--preserve-throttles"],
         'Option "[preserve-throttles]" can\'t be used with action "[execute]"'),
        ([*BOOT, "--cancel", "--reassignment-json-file", "f", "--disable-rack-aware"],
         'Option "[disable-rack-aware]" can\'t be used with action "[cancel]"'),
    ],
)  # fmt: skip
def test_usage_errors(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = _run(capsys, *args)
    assert (code, out) == (1, "")
    assert err.startswith(message + "\n") and "usage: brook reassign-partitions" in err


def test_errors_before_connecting(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert _run(capsys, *BOOT, "--verify", "--reassignment-json-file", "/no/such.json") == (
        1,
        "Error: /no/such.json (No such file or directory)\n",
        "",
    )
    assert _run(capsys, "--bootstrap-controller", "h:1", "--list") == (
        1,
        "Error: The --bootstrap-controller option is not supported with these action.\n",
        "",
    )
    plan = tmp_path / "p.json"
    plan.write_text('{"partitions": [{"topic": "a", "partition": 0, "replicas": [1]}]}')
    assert _run(
        capsys, *BOOT, "--execute", "--reassignment-json-file", str(plan), "--throttle", "x"
    ) == (1, "Cannot parse argument 'x' of option throttle\n", "")


def test_reassignment_json_is_kafkas() -> None:
    text = reassignment_json({TopicPartition("b", 0): [2, 1], TopicPartition("a", 1): [3]})
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"a","partition":1,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"b","partition":0,"replicas":[2,1],"log_dirs":["any","any"]}]}'
    )
    assert parse_reassignment_data(text) == [
        (TopicPartition("a", 1), [3]),
        (TopicPartition("b", 0), [2, 1]),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
        ('{"partitions": [{"topic": "a", "partition": 0}]}', "No such field exists: `replicas`"),
        ('{"partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2], '
         '"log_dirs": ["any"]}]}',
         "Size of replicas list [1, 2] is different from size of log dirs list [any] for "
         "partition a-0"),
        ('{"partitions": [{"topic": "a", "partition": 0, "replicas": [1], '
         '"log_dirs": ["/data/a"]}]}',
         'Partition a-0: moving replicas between log directories is not supported by Brook; '
         'give "any" for every log dir'),
        ('{"partitions": [{"topic": "a", "partition": "0", "replicas": [1]}]}',
         'Expected `Int` value, received "0"'),
    ],
)  # fmt: skip
def test_reassignment_json_errors(text: str, message: str) -> None:
    with pytest.raises(ToolFailure) as info:
        parse_reassignment_data(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([], "Partition reassignment list cannot be empty"),
        ([(TopicPartition("a", 0), [])], "Partition replica list cannot be empty"),
        ([(TopicPartition("a", 0), [1]), (TopicPartition("a", 0), [2])],
         "Partition reassignment contains duplicate topic partitions: a-0"),
        ([(TopicPartition("a", 0), [1, 2, 1, 2]), (TopicPartition("b", 0), [3, 3])],
         "Partition replica lists may not contain duplicate entries: a-0 contains multiple "
         "entries for 1,2. b-0 contains multiple entries for 3"),
    ],
)  # fmt: skip
def test_execute_data_checks(parts: list, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ToolFailure) as info:
        check_execute_data(parts)
    assert str(info.value) == message


def test_topics_json() -> None:
    assert parse_topics_data('{"topics": [{"topic": "a"}, {"topic": "b"}], "version": 1}') == [
        "a",
        "b",
    ]
    with pytest.raises(ToolFailure, match="The input string is not a valid JSON"):
        parse_topics_data("{")


def _brokers(racks: dict[int, str | None]) -> list[BrokerNode]:
    return [BrokerNode(b, "h", 9000 + b, rack) for b, rack in racks.items()]


def test_assignment_spreads_leaders_and_followers() -> None:
    for seed in range(20):
        out = assign_replicas(_brokers({1: None, 2: None, 3: None}), 6, 2, random.Random(seed))
        assert all(len(set(r)) == 2 for r in out)
        leaders = [r[0] for r in out]
        assert sorted(leaders) == [1, 1, 2, 2, 3, 3]


def test_rack_aware_assignment_puts_replicas_on_distinct_racks() -> None:
    brokers = _brokers({1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"})
    racks = {b.node_id: b.rack for b in brokers}
    for seed in range(20):
        out = assign_replicas(brokers, 12, 3, random.Random(seed))
        assert all(len({racks[b] for b in r}) == 3 for r in out)
        assert sorted(r[0] for r in out) == sorted([1, 2, 3, 4, 5, 6] * 2)


@pytest.mark.parametrize(
    ("racks", "rf", "message"),
    [
        ({1: None, 2: None}, 3, "Replication factor: 3 larger than available brokers: 2."),
        ({1: "a", 2: None}, 1,
         "Not all brokers have rack information for replica rack aware assignment."),
    ],
)  # fmt: skip
def test_assignment_refusals(racks: dict[int, str | None], rf: int, message: str) -> None:
    with pytest.raises(ToolFailure) as info:
        assign_replicas(_brokers(racks), 3, rf, random.Random(0))
    assert str(info.value) == message


def test_reassignment_states() -> None:
    a0, a1, b0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
    lines = reassignment_states(
        [(b0, [1]), (a1, [2, 1]), (a0, [1, 2])],
        {a1: PartitionReassignment((2, 1, 3), (), (3,))},
        {a0: [1, 2], b0: [3]},
    )
    assert lines == [
        "Status of partition reassignment:",
        "Reassignment of partition a-0 is completed.",
        "Reassignment of partition a-1 is still in progress.",
        "There is no active reassignment of partition b-0, but replica set is 3 rather than 1.",
    ]
