"""``brook leader-election`` without a broker: Kafka's checks and messages in its order, its
JSON file, and its output lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from brook.cli.common import CommandError
from brook.cli.leader_election import election_data, election_type, result_lines
from brook.cli.main import main
from brook.client.admin.types import ElectionType
from brook.client.cluster import TopicPartition
from brook.protocol.errors import Errors, KafkaError

BOOT = ["--bootstrap-server", "127.0.0.1:1"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(["leader-election", *args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--election-type", "preferred", "--all-topic-partitions"],
         "Missing required option(s): bootstrap-server"),
        ([*BOOT, "--all-topic-partitions"], "Missing required option(s): election-type"),
        (["--all-topic-partitions"],
         "Missing required option(s): bootstrap-server, election-type"),
        ([*BOOT, "--election-type", "preferred"],
         "One and only one of the following options is required: "
         "topic, all-topic-partitions, path-to-json-file"),
        ([*BOOT, "--election-type", "preferred", "--all-topic-partitions", "--topic", "t",
          "--partition", "0"],
         "One and only one of the following options is required: "
         "topic, all-topic-partitions, path-to-json-file"),
        ([*BOOT, "--election-type", "preferred", "--all-topic-partitions",
          "--path-to-json-file", "f.json"],
         "One and only one of the following options is required: "
         "topic, all-topic-partitions, path-to-json-file"),
        ([*BOOT, "--election-type", "preferred", "--topic", "t"],
         "Missing required option(s): partition"),
        ([*BOOT, "--election-type", "preferred", "--all-topic-partitions", "--partition", "0"],
         "Option partition is only allowed if topic is used"),
        ([*BOOT, "--election-type", "leader", "--all-topic-partitions"],
         "Cannot parse argument 'leader' of option election-type"),
        ([*BOOT, "--election-type", "preferred", "--topic", "t", "--partition", "x"],
         "Cannot parse argument 'x' of option partition"),
        ([*BOOT, "--election-type", "preferred", "--path-to-json-file", "/no/such.json"],
         "/no/such.json (No such file or directory)"),
    ],
)  # fmt: skip
def test_validation_messages(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert _run(capsys, *args) == (1, "", message + "\n")


def test_no_arguments_prints_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys)
    assert code == 1 and out == ""
    assert "--election-type" in err and "elect a new leader" in err


@pytest.mark.parametrize(
    ("text", "kind"),
    [("preferred", ElectionType.PREFERRED), ("UNCLEAN", ElectionType.UNCLEAN),
     ("Preferred", ElectionType.PREFERRED)],
)  # fmt: skip
def test_election_type_in_any_case(text: str, kind: ElectionType) -> None:
    assert election_type(text) is kind


def test_json_file_partitions() -> None:
    text = '{"partitions": [{"topic": "foo", "partition": 1}, {"topic": "bar", "partition": 0}]}'
    assert election_data(text) == [TopicPartition("bar", 0), TopicPartition("foo", 1)]
    assert election_data('{"partitions": []}') == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Replica election data is empty"),
        ("{not json", "Replica election data is empty"),
        ("null", "Replica election data is empty"),
        ('{"topics": []}', 'Replica election data is missing "partitions" field'),
        ('{"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]}',
         "Replica election data contains duplicate partitions: [a-0]"),
        ('{"partitions": [{"partition": 0}]}', "No such field exists: `topic`"),
        ('{"partitions": [{"topic": "a"}]}', "No such field exists: `partition`"),
        ('{"partitions": [{"topic": "a", "partition": "0"}]}',
         'Expected `Int` value, received "0"'),
    ],
)  # fmt: skip
def test_json_file_errors(text: str, message: str) -> None:
    with pytest.raises(CommandError) as info:
        election_data(text)
    assert str(info.value) == message


def test_json_file_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_text(
        '{"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]}'
    )
    code, out, err = _run(
        capsys, *BOOT, "--election-type", "preferred", "--path-to-json-file", str(path)
    )
    assert (code, out, err) == (
        1,
        "",
        "Replica election data contains duplicate partitions: [a-0]\n",
    )


def test_result_lines() -> None:
    lines = result_lines(
        ElectionType.PREFERRED,
        {TopicPartition("b", 0): True, TopicPartition("a", 1): True, TopicPartition("c", 0): False},
        {
            TopicPartition("d", 2): KafkaError(
                Errors.PREFERRED_LEADER_NOT_AVAILABLE, "partition d-2: Failed to elect leader"
            ),
            TopicPartition("e", 0): KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION),
        },
    )
    assert lines == [
        "Successfully completed leader election (PREFERRED) for partitions a-1, b-0",
        "Valid replica already elected for partitions c-0",
        "Error completing leader election (PREFERRED) for partition: d-2: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: "
        "Failed to elect leader",
        "Error completing leader election (PREFERRED) for partition: e-0: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException",
    ]
