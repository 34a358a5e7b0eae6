"""The partition leader's side of KIP-890 as plain logic: where a transactional id's
coordinator is, one request in flight per coordinator node carrying every transaction that
waits for it, Kafka's rule for two verifications of one id, what a response means, and the
error a producer finally gets for each coordinator answer and produce version."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

from brook.broker.group.store import partition_for
from brook.broker.txn_verify import (
    Verification,
    VerificationQueue,
    coordinator_node,
    produce_error,
    response_errors,
)
from brook.metadata.image import MetadataImage, PartitionInfo, TopicInfo
from brook.protocol.errors import Errors

T0, T1 = ("t", 0), ("t", 1)


class Seen:
    def __init__(self) -> None:
        self.got: dict[str, dict[tuple[str, int], int]] = {}

    def item(
        self, tid: str, epoch: int = 0, partitions: list[tuple[str, int]] | None = None
    ) -> Verification:
        key = f"{tid}@{epoch}"
        return Verification(
            tid, 1, epoch, partitions or [T0], lambda errors: self.got.__setitem__(key, errors)
        )


def test_one_request_per_node_in_flight_the_rest_wait_for_the_next() -> None:
    queue, seen = VerificationQueue(), Seen()
    assert queue.add(1, seen.item("a"))
    assert queue.add(1, seen.item("b"))  # no request in flight yet: still "send now"
    first = queue.take(1)
    assert [i.transactional_id for i in first] == ["a", "b"]
    assert not queue.add(1, seen.item("c"))  # waits for the request in flight
    assert queue.add(2, seen.item("d"))  # another node is independent
    assert queue.take(1) == []
    request = queue.request(first)
    assert [t["transactional_id"] for t in request["transactions"]] == ["a", "b"]
    assert all(t["verify_only"] for t in request["transactions"])
    more = queue.answered(1, first, {"a": {}, "b": {T0: Errors.TRANSACTION_ABORTABLE}})
    assert more  # "c" waits
    assert seen.got == {"a@0": {}, "b@0": {T0: Errors.TRANSACTION_ABORTABLE}}
    second = queue.take(1)
    assert [i.transactional_id for i in second] == ["c"]
    assert not queue.answered(1, second, Errors.NETWORK_EXCEPTION)
    assert seen.got["c@0"] == {T0: Errors.NETWORK_EXCEPTION}


def test_two_verifications_of_one_id_as_kafka() -> None:
    queue, seen = VerificationQueue(), Seen()
    queue.add(1, seen.item("a", epoch=3))
    queue.add(1, seen.item("a", epoch=3))  # a retry: the queued one is told to retry
    assert seen.got == {"a@3": {T0: Errors.NETWORK_EXCEPTION}}
    queue.add(1, seen.item("a", epoch=2))  # an older epoch is fenced at once
    assert seen.got["a@2"] == {T0: Errors.INVALID_PRODUCER_EPOCH}
    queue.add(1, seen.item("a", epoch=4))  # a newer one fences the queued one
    assert seen.got["a@3"] == {T0: Errors.INVALID_PRODUCER_EPOCH}
    (item,) = queue.take(1)
    assert item.producer_epoch == 4


def test_an_id_missing_from_the_response_is_not_verified() -> None:
    queue, seen = VerificationQueue(), Seen()
    queue.add(1, seen.item("a", partitions=[T0, T1]))
    items = queue.take(1)
    queue.answered(1, items, {})
    assert seen.got["a@0"] == {T0: Errors.INVALID_TXN_STATE, T1: Errors.INVALID_TXN_STATE}


def _response(error: int, results: dict[str, dict[tuple[str, int], int]]) -> Any:
    return SimpleNamespace(
        error_code=error,
        results_by_transaction=[
            SimpleNamespace(
                transactional_id=tid,
                topic_results=[
                    SimpleNamespace(
                        name=t,
                        results_by_partition=[
                            SimpleNamespace(partition_index=p, partition_error_code=code)
                        ],
                    )
                    for (t, p), code in parts.items()
                ],
            )
            for tid, parts in results.items()
        ],
    )


def test_response_errors() -> None:
    response = _response(
        0,
        {
            "a": {T0: Errors.NONE, T1: Errors.TRANSACTION_ABORTABLE},
            "b": {T0: Errors.PRODUCER_FENCED},
        },
    )
    assert response_errors(response) == {
        "a": {T1: Errors.TRANSACTION_ABORTABLE},
        "b": {T0: Errors.INVALID_PRODUCER_EPOCH},
    }
    assert response_errors(_response(Errors.CLUSTER_AUTHORIZATION_FAILED, {})) == (
        Errors.INVALID_TXN_STATE
    )
    assert response_errors(_response(Errors.UNKNOWN_SERVER_ERROR, {})) == (
        Errors.UNKNOWN_SERVER_ERROR
    )


def test_the_error_a_producer_gets() -> None:
    assert produce_error(Errors.TRANSACTION_ABORTABLE, 10)[0] == Errors.INVALID_TXN_STATE
    assert produce_error(Errors.TRANSACTION_ABORTABLE, 11) == (Errors.TRANSACTION_ABORTABLE, None)
    code, message = produce_error(Errors.INVALID_TXN_STATE, 11)
    assert (code, message) == (
        Errors.INVALID_TXN_STATE,
        "Partition was not added to the transaction",
    )
    for retriable in (
        Errors.CONCURRENT_TRANSACTIONS,
        Errors.NETWORK_EXCEPTION,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
    ):
        code, message = produce_error(retriable, 9)
        assert code == Errors.NOT_ENOUGH_REPLICAS and message is not None
        assert message.startswith("Unable to verify the partition")
    assert produce_error(Errors.INVALID_PRODUCER_EPOCH, 9) == (Errors.INVALID_PRODUCER_EPOCH, None)


def test_coordinator_node_from_the_image() -> None:
    image = MetadataImage()
    assert coordinator_node(image, "app") is None  # no __transaction_state: no transaction
    index = partition_for("app", 5)
    tid = uuid.uuid4()

    def info(p: int, leader: int) -> PartitionInfo:
        return PartitionInfo(tid, p, (1, 2), (1, 2), leader, 0, 0)

    image.topics["__transaction_state"] = TopicInfo(
        "__transaction_state", tid, {p: info(p, 2 if p == index else 1) for p in range(5)}
    )
    assert coordinator_node(image, "app") == 2
    image.topics["__transaction_state"].partitions[index] = info(index, -1)
    assert coordinator_node(image, "app") is None
