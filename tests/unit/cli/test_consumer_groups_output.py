"""``brook consumer-groups`` output and input parsing without a broker: Kafka's column layouts
(widths, '-' for missing values, the trailing spaces of --members), the messages for group
states, CSV export and import, durations and datetimes, and the option checks."""

from __future__ import annotations

import datetime

import pytest

from brook.cli import consumer_groups as cg
from brook.client.admin.groups import ConsumerGroupDescription, GroupListing, MemberDescription
from brook.client.cluster import BrokerNode, TopicPartition
from brook.protocol.errors import Errors, KafkaError

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
NODE = BrokerNode(1, "127.0.0.1", 9092)


def desc(*members: MemberDescription, state: str = "Stable") -> ConsumerGroupDescription:
    return ConsumerGroupDescription("g1", False, members, "range", state, NODE)


def test_list_plain_and_with_state_and_type() -> None:
    listings = [GroupListing("g1", "consumer", "Stable", "classic"), GroupListing("a", "", "Empty")]
    assert cg.format_group_list(listings, False, False) == "g1\na\n"
    assert cg.format_group_list(listings, True, True).splitlines() == [
        f"{'GROUP':<25} {'TYPE':<20} {'STATE':<20}",
        f"{'g1':<25} {'Classic':<20} {'Stable':<20}",
        f"{'a':<25} {'Unknown':<20} {'Empty':<20}",
    ]
    assert (
        cg.format_group_list(listings, False, True).splitlines()[0]
        == "GROUP" + " " * 21 + "STATE" + " " * 15
    )


def test_offsets_table() -> None:
    rows = [
        cg.OffsetRow("g1", "orders", 0, 2, 5, "c-1", "/127.0.0.1", "app"),
        cg.OffsetRow("g1", "orders", 1, None, 3, "-", "-", "-"),
    ]
    assert rows[0].lag == 3 and rows[1].lag is None
    assert cg.format_offsets(rows, verbose=False) == (
        "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG"
        "             CONSUMER-ID     HOST            CLIENT-ID"
        "\ng1              orders          0          2               5               3"
        "               c-1             /127.0.0.1      app"
        "\ng1              orders          1          -               3               -"
        "               -               -               -"
        "\n"
    )
    verbose = cg.format_offsets(rows[:1], verbose=True).splitlines()
    assert verbose[1].split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "LEADER-EPOCH",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]
    assert verbose[2].split()[3] == "-"


def test_members_table_with_and_without_instance_ids() -> None:
    m = MemberDescription("c-1", None, "app", "/127.0.0.1", frozenset({T0, T1}))
    assert cg.format_members(desc(m), verbose=False) == (
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
        "g1              c-1             /127.0.0.1      app             2               \n"
    )
    static = MemberDescription("c-2", "i-2", "app", "/127.0.0.1", frozenset({T1}))
    lines = cg.format_members(desc(m, static), verbose=True).splitlines()
    assert lines[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "GROUP-INSTANCE-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "CURRENT-EPOCH",
        "CURRENT-ASSIGNMENT",
        "TARGET-EPOCH",
        "TARGET-ASSIGNMENT",
    ]
    assert lines[2].split() == ["g1", "c-1", "/127.0.0.1", "app", "2", "-", "orders:0,1", "-", "-"]
    assert lines[3].split() == [
        "g1",
        "c-2",
        "i-2",
        "/127.0.0.1",
        "app",
        "1",
        "-",
        "orders:1",
        "-",
        "-",
    ]


def test_state_table() -> None:
    out = cg.format_state(desc(state="Stable"), verbose=False)
    assert out == (
        "\nGROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE"
        "                #MEMBERS"
        "\ng1              127.0.0.1:9092  (1)       range                Stable"
        "               0\n"
    )


@pytest.mark.parametrize(
    ("state", "rows", "out", "err", "show"),
    [
        ("Stable", 2, "", "", True),
        ("Stable", 0, "", "", False),
        ("Empty", 1, "", "\nConsumer group 'g' has no active members.\n", True),
        ("PreparingRebalance", 1, "", "\nWarning: Consumer group 'g' is rebalancing.\n", True),
        ("Dead", 0, "\nError: Consumer group 'g' does not exist.\n", "", False),
    ],
)
def test_state_messages(state: str, rows: int, out: str, err: str, show: bool) -> None:
    assert cg.state_message("g", state, rows) == (out, err, show)


def test_reset_plan_export_and_import() -> None:
    plan = {"g1": {T1: 7, T0: 3}}
    assert cg.format_reset_plan(plan) == (
        "\nGROUP           TOPIC           PARTITION  NEW-OFFSET"
        "\ng1              orders          0          3"
        "\ng1              orders          1          7\n"
    )
    assert cg.format_reset_plan({}) == "\n"
    assert cg.export_csv(plan, single_group=True) == "orders,0,3\norders,1,7\n"
    multi = cg.export_csv({"g1": {T0: 3}, "g2": {T1: 1}}, single_group=False)
    assert multi == "g1,orders,0,3\ng2,orders,1,1\n"
    assert cg.parse_reset_file("orders,0,3\norders,1,7\n", ["g1"]) == {"g1": {T0: 3, T1: 7}}
    assert cg.parse_reset_file(multi, ["g1", "g2"]) == {"g1": {T0: 3}, "g2": {T1: 1}}


def test_delete_offsets_table() -> None:
    out = cg.format_delete_offsets(
        {T1: KafkaError(Errors.GROUP_SUBSCRIBED_TO_TOPIC), T0: None}
    ).splitlines()
    assert out[1:] == [
        f"{'TOPIC':<15} {'PARTITION':<10} {'STATUS':<15}",
        f"{'orders':<15} {'0':<10} {'Successful':<15}",
        "orders          1          Error: org.apache.kafka.common.errors."
        "GroupSubscribedToTopicException: The consumer group is actively subscribed to the topic",
    ]


def test_durations_datetimes_and_topic_args() -> None:
    assert cg.parse_duration_ms("PT1H30M") == 5_400_000
    assert cg.parse_duration_ms("P1DT0.5S") == 86_400_500
    assert cg.parse_duration_ms("-PT2S") == -2000
    for bad in ("1H", "P", "PT"):
        with pytest.raises(ValueError, match="Duration"):
            cg.parse_duration_ms(bad)
    utc = datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.UTC)
    want = int(utc.timestamp() * 1000)
    assert cg.parse_datetime_ms("2024-01-02T03:04:05.678Z") == want
    assert cg.parse_datetime_ms("2024-01-02T05:04:05.678+02:00") == want
    assert cg.parse_datetime_ms("2024-01-02T05:04:05.678+0200") == want
    with pytest.raises(ValueError, match="timestamp"):
        cg.parse_datetime_ms("yesterday")
    assert cg.parse_topic_partitions("orders:0,1") == [T0, T1]
    with pytest.raises(ValueError, match="expected topic name and partitions"):
        cg.parse_topic_partitions("orders:")
    with pytest.raises(ValueError, match="Invalid partition 'x'"):
        cg.parse_topic_partitions("orders:x")
    with pytest.raises(ValueError, match="Invalid state list 'bogus'"):
        cg.parse_states("bogus")
    assert cg.parse_states("stable, EMPTY") == ["Stable", "Empty"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--list", "--describe"], "Command must include exactly one action"),
        (["--describe"], "Option [describe] takes one of these options: [group], [all-groups]"),
        (["--describe", "--group", "g", "--members", "--state"], "takes at most one of"),
        (["--describe", "--group", "g", "--state", "stable"], "does not take a value for [state]"),
        (["--delete", "--group", "g", "--topic", "t"], "does not support topic-specific offset"),
        (["--delete-offsets", "--group", "g"], "[delete-offsets] takes the following options"),
        (["--reset-offsets", "--group", "g", "--execute", "--dry-run"], "only accepts one of"),
        (
            ["--reset-offsets", "--group", "g", "--to-earliest", "--to-latest"],
            'Option "[to-earliest]" can\'t be used with option "[to-latest]"',
        ),
        (["--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
    ],
)
def test_option_checks(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = cg.build_parser()
    args = parser.parse_args(["--bootstrap-server", "127.0.0.1:1", *argv])
    with pytest.raises(SystemExit) as exited:
        cg.check_args(parser, args)
    assert exited.value.code == 1
    assert message in capsys.readouterr().err
