"""``brook transactions``' decisions and output against hand-made admin values: Kafka's tables,
the find-hanging rule (candidates by time since the producer's last write, then what the
coordinators say), the abort spec from a start offset or from ids, and the argument checks
with Kafka's messages."""

from __future__ import annotations

import argparse

import pytest

from brook.cli.common import CommandError, format_table
from brook.cli.transactions import (
    HANGING_HEADERS,
    LIST_HEADERS,
    OpenTransaction,
    abort_spec_at,
    abort_spec_given,
    build_parser,
    candidate_open_transactions,
    check_args,
    describe_row,
    hanging_rows,
    hanging_transactions,
    list_rows,
    producer_rows,
)
from brook.client.admin import (
    AbortTransactionSpec,
    ProducerState,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
OPEN = ProducerState(7, 2, 10, 1_000, None, 40)
DONE = ProducerState(8, 0, 3, 1_000, 4, None)
MARKED = ProducerState(9, 5, 1, 500, 3, 12)


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["--bootstrap-server", "b:9092", *argv])


def test_list_rows_by_coordinator() -> None:
    rows = list_rows(
        {
            2: [TransactionListing("b", 11, "Ongoing")],
            1: [TransactionListing("a", 10, "Empty"), TransactionListing("c", 12, "PrepareAbort")],
        }
    )
    assert rows == [
        ["a", "1", "10", "Empty"],
        ["c", "1", "12", "PrepareAbort"],
        ["b", "2", "11", "Ongoing"],
    ]
    assert format_table(LIST_HEADERS, rows).split("\n") == [
        "TransactionalId\tCoordinator\tProducerId\tTransactionState\t",
        "a              \t1          \t10        \tEmpty           \t",
        "c              \t1          \t12        \tPrepareAbort    \t",
        "b              \t2          \t11        \tOngoing         \t",
        "",
    ]


def test_describe_row() -> None:
    running = TransactionDescription(3, "Ongoing", 7, 2, 60_000, 10_000, frozenset({TP1, TP0}))
    assert describe_row("app", running, 12_500) == [
        "3",
        "app",
        "7",
        "2",
        "Ongoing",
        "60000",
        "10000",
        "2500",
        "orders-0,orders-1",
    ]
    idle = TransactionDescription(3, "Empty", 7, 2, 60_000, None, frozenset())
    assert describe_row("app", idle, 12_500)[4:] == ["Empty", "60000", "None", "None", ""]


def test_producer_rows() -> None:
    assert producer_rows([OPEN, DONE]) == [
        ["7", "2", "-1", "10", "1000", "40"],
        ["8", "0", "4", "3", "1000", "None"],
    ]


def test_candidates_are_open_transactions_idle_longer_than_the_timeout() -> None:
    producers = {TP0: [OPEN, DONE], TP1: [MARKED]}
    # 1,500 ms later: OPEN (last write at 1,000) is 500 ms idle, MARKED 1,000 ms.
    assert candidate_open_transactions(producers, 1_500, 499) == [
        OpenTransaction(TP0, OPEN),
        OpenTransaction(TP1, MARKED),
    ]
    # Strictly longer than the timeout, as Kafka's tool.
    assert candidate_open_transactions(producers, 1_500, 500) == [OpenTransaction(TP1, MARKED)]
    assert candidate_open_transactions(producers, 1_500, 1_000) == []


def test_hanging_rule() -> None:
    a, b = OpenTransaction(TP0, OPEN), OpenTransaction(TP1, MARKED)
    ongoing = TransactionDescription(1, "Ongoing", 9, 5, 60_000, 400, frozenset({TP1}))
    elsewhere = TransactionDescription(1, "Ongoing", 9, 5, 60_000, 400, frozenset({TP0}))
    # No coordinator lists producer 7: hanging. Producer 9's transaction includes TP1: not.
    assert hanging_transactions([a, b], {9: "app"}, {"app": ongoing}) == [a]
    # The coordinator's transaction is on other partitions: it will never mark TP1.
    assert hanging_transactions([b], {9: "app"}, {"app": elsewhere}) == [b]
    # Listed, but the id is no longer found.
    assert hanging_transactions([b], {9: "app"}, {"app": None}) == [b]


def test_hanging_rows() -> None:
    rows = hanging_rows([OpenTransaction(TP1, MARKED)], 500 + 3 * 60_000 + 59_999)
    assert rows == [["orders", "1", "9", "5", "3", "12", "500", "3"]]
    assert format_table(HANGING_HEADERS, rows).split("\n")[0] == (
        "Topic \tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\t"
        "LastTimestamp\tDuration(min)\t"
    )


def test_abort_spec_from_a_start_offset() -> None:
    assert abort_spec_at(TP0, [DONE, MARKED], 12) == AbortTransactionSpec(TP0, 9, 5, 3)
    # A producer that never got a marker: coordinator epoch 0.
    assert abort_spec_at(TP0, [OPEN], 40) == AbortTransactionSpec(TP0, 7, 2, 0)
    with pytest.raises(CommandError) as info:
        abort_spec_at(TP0, [OPEN, DONE], 41)
    assert str(info.value) == (
        "Could not find any open transactions starting at offset 41 on partition orders-0"
    )


def test_abort_spec_from_ids() -> None:
    args = _args(
        "abort",
        "--topic",
        "orders",
        "--partition",
        "0",
        "--producer-id",
        "7",
        "--producer-epoch",
        "2",
        "--coordinator-epoch",
        "-1",
    )
    assert abort_spec_given(TP0, args) == AbortTransactionSpec(TP0, 7, 2, 0)
    no_epoch = _args("abort", "--topic", "orders", "--partition", "0", "--producer-id", "7")
    with pytest.raises(CommandError, match=r"^Missing required argument --producer-epoch$"):
        abort_spec_given(TP0, no_epoch)
    no_coordinator = _args(
        "abort", "--topic", "o", "--partition", "0", "--producer-id", "7", "--producer-epoch", "2"
    )
    with pytest.raises(CommandError, match=r"^Missing required argument --coordinator-epoch$"):
        abort_spec_given(TP0, no_coordinator)
    assert str(AbortTransactionSpec(TP0, 7, 2, 0)) == (
        "AbortTransactionSpec(topicPartition=orders-0, producerId=7, producerEpoch=2, "
        "coordinatorEpoch=0)"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["abort", "--topic", "o", "--partition", "0"],
            "The transaction to abort must be identified either with --start-offset (for "
            "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
            "--coordinator-epoch (for older brokers)",
        ),
        (
            ["find-hanging"],
            "The `find-hanging` command requires either --topic or --broker-id to limit the "
            "scope of the search",
        ),
        (
            ["find-hanging", "--broker-id", "1", "--partition", "0"],
            "The --partition argument requires --topic to be provided",
        ),
        (
            ["describe-producers", "--topic", "", "--partition", "0"],
            "Topic name is illegal, it can't be empty",
        ),
        (
            ["abort", "--topic", "", "--partition", "0", "--start-offset", "0"],
            "Topic name is illegal, it can't be empty",
        ),
    ],
)
def test_argument_checks(argv: list[str], message: str) -> None:
    with pytest.raises(CommandError) as info:
        check_args(_args(*argv))
    assert str(info.value) == message


def test_arguments_kafka_accepts() -> None:
    check_args(_args("abort", "--topic", "o", "--partition", "0", "--start-offset", "3"))
    args = _args("find-hanging", "--topic", "o")
    check_args(args)
    assert args.max_transaction_timeout == 15
    assert _args("list").duration_filter is None


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["list"], "the following arguments are required: --bootstrap-server"),
        (["--bootstrap-server", "b:1"], "the following arguments are required: COMMAND"),
        (["--bootstrap-server", "b:1", "describe"], "--transactional-id"),
        (["--bootstrap-server", "b:1", "describe-producers", "--topic", "t"], "--partition"),
        (
            [
                *("--bootstrap-server", "b:1", "abort", "--topic", "t", "--partition", "0"),
                *("--producer-id", "1", "--producer-epoch", "40000"),
            ],
            "40000 is not a 16-bit integer",
        ),
        (["--bootstrap-server", "b:1", "nothing"], "invalid choice: 'nothing'"),
    ],
)
def test_usage_errors_exit_1(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(argv)
    assert info.value.code == 1
    assert needle in capsys.readouterr().err
