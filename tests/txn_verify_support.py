"""A transactional producer spoken in raw requests (KIP-890 tests): what a client would not
send, such as a batch for a partition never added to the transaction, or a batch of a
transaction already aborted. The coordinator and the partition leader may be different
nodes (two connections)."""

from __future__ import annotations

import time
from typing import Any

from rawclient import RawClient

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch

RETRIABLE = (
    Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.COORDINATOR_LOAD_IN_PROGRESS,
    Errors.NOT_COORDINATOR,
    Errors.CONCURRENT_TRANSACTIONS,
)


def _until_done(ask: Any, what: str, timeout: float = 60.0) -> int:
    """``ask()``'s error code once it is not a retriable coordinator answer."""
    deadline = time.monotonic() + timeout
    while True:
        code = ask()
        if code not in RETRIABLE:
            return int(code)
        assert time.monotonic() < deadline, f"{what}: still {code}"
        time.sleep(0.1)


class RawTxnProducer:
    """A transactional producer spoken in raw requests, to send what a client would not."""

    def __init__(self, c: RawClient, tid: str, leader: RawClient | None = None) -> None:
        """``c`` talks to the coordinator (FindCoordinator answered by any node), ``leader``
        (default ``c``) to the leader of the partitions produced to."""
        self.c, self.tid, self.seq = c, tid, 0
        self.leader = leader or c
        init: dict[str, Any] = {}

        def find() -> int:
            resp = c.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
            return int(resp.coordinators[0].error_code)

        assert _until_done(find, "FindCoordinator") == Errors.NONE

        def ask() -> int:
            resp = c.request(
                ApiKey.INIT_PRODUCER_ID,
                4,
                {
                    "transactional_id": tid,
                    "transaction_timeout": 60000,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            )
            init["resp"] = resp
            return int(resp.error_code)

        assert _until_done(ask, "InitProducerId") == Errors.NONE
        self.pid, self.epoch = init["resp"].producer_id, init["resp"].producer_epoch

    def add(self, topic: str, partition: int) -> int:
        def ask() -> int:
            resp = self.c.request(
                ApiKey.ADD_PARTITIONS_TO_TXN,
                3,
                {
                    "v3_and_below_transactional_id": self.tid,
                    "v3_and_below_producer_id": self.pid,
                    "v3_and_below_producer_epoch": self.epoch,
                    "v3_and_below_topics": [{"name": topic, "partitions": [partition]}],
                },
            )
            return int(
                resp.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
            )

        return _until_done(ask, "AddPartitionsToTxn")

    def end(self, commit: bool) -> int:
        def ask() -> int:
            resp = self.c.request(
                ApiKey.END_TXN,
                3,
                {
                    "transactional_id": self.tid,
                    "producer_id": self.pid,
                    "producer_epoch": self.epoch,
                    "committed": commit,
                },
            )
            return int(resp.error_code)

        return _until_done(ask, "EndTxn")

    def send(self, topic: str, partition: int, value: bytes, version: int = 9) -> tuple[int, int]:
        batch = build_simple_batch(
            [value],
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.seq,
            transactional=True,
            timestamp=int(time.time() * 1000),
        )
        resp = self.leader.request(
            ApiKey.PRODUCE,
            version,
            {
                "transactional_id": self.tid,
                "acks": -1,
                "timeout": 30000,
                "topic_data": [
                    {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
                ],
            },
        )
        part = resp.responses[0].partition_responses[0]
        if part.error_code == Errors.NONE:
            self.seq += 1
        return int(part.error_code), int(part.base_offset)


def open_transactions(c: RawClient, topic: str) -> list[int]:
    resp = c.request(
        ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]}
    )
    part = resp.topics[0].partitions[0]
    assert part.error_code == Errors.NONE
    return [
        p.current_txn_start_offset for p in part.active_producers if p.current_txn_start_offset >= 0
    ]


def wait_complete(c: RawClient, tid: str) -> None:
    """Until the coordinator has written the transaction's Complete state (markers out)."""
    deadline = time.monotonic() + 30
    while True:
        resp = c.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [tid]})
        state = resp.transaction_states[0]
        if state.error_code == Errors.NONE and state.transaction_state in (
            "CompleteAbort",
            "CompleteCommit",
        ):
            return
        assert time.monotonic() < deadline, state
        time.sleep(0.1)
