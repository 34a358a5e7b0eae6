"""The coordinator's routing state under simulated time: partitions led and loading, Kafka's
NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / INVALID_PRODUCER_ID_MAPPING, writes that
complete after the partition moved, failover completions, timers, Describe/ListTransactions."""

from __future__ import annotations

import itertools

import pytest

from brook.broker.group.store import partition_for
from brook.broker.txn.loading import LoadedPartition, load_partition
from brook.broker.txn.log_records import encode_key, encode_value
from brook.broker.txn.manager import Routed, TxnStateManager
from brook.broker.txn.state import TxnConfig, TxnMetadata, TxnResult, TxnState
from brook.protocol.errors import Errors

PARTITIONS = 4
TIMEOUT = 60_000
CONFIG = TxnConfig(max_timeout_ms=900_000, id_expiration_ms=3_600_000)
T0 = ("t", 0)


def ids() -> itertools.count[int]:
    return itertools.count(1000)


def owned_manager(tid: str = "app", epoch: int = 3) -> tuple[TxnStateManager, int]:
    manager = TxnStateManager(PARTITIONS, CONFIG)
    partition = manager.partition_for(tid)
    manager.begin_loading(partition, epoch)
    manager.finish_loading(partition, LoadedPartition(epoch))
    return manager, partition


def written(manager: TxnStateManager, tid: str, routed: Routed) -> None:
    """The shell's successful write of a routed decision (and of the markers, if any)."""
    assert routed.decision.write is not None, routed
    epoch = routed.coordinator_epoch
    assert manager.write_done(tid, epoch, routed.decision.write, ok=True) == Errors.NONE
    if routed.decision.markers is not None:
        entry = manager.entry(tid)
        assert entry is not None
        target = entry.prepare_complete(routed.decision.write.last_update_ms)
        assert manager.write_done(tid, epoch, target, ok=True) == Errors.NONE


def test_partition_for_is_the_group_coordinators_function() -> None:
    manager = TxnStateManager(50, CONFIG)
    assert all(manager.partition_for(t) == partition_for(t, 50) for t in ("a", "app", "ü"))


def test_requests_for_ids_not_led_here_or_still_loading() -> None:
    manager = TxnStateManager(PARTITIONS, CONFIG)
    routed = manager.init_producer_id("app", TIMEOUT, None, 0, ids().__next__)
    assert routed.decision.error == Errors.NOT_COORDINATOR
    partition = manager.partition_for("app")
    manager.begin_loading(partition, 1)
    routed = manager.init_producer_id("app", TIMEOUT, None, 0, ids().__next__)
    assert routed.decision.error == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert manager.end_txn("app", 1, 0, True, 0).decision.error == (
        Errors.COORDINATOR_LOAD_IN_PROGRESS
    )
    assert manager.describe("app") == (Errors.COORDINATOR_LOAD_IN_PROGRESS, None)
    manager.finish_loading(partition, LoadedPartition(1))
    routed = manager.init_producer_id("app", TIMEOUT, None, 0, ids().__next__)
    assert routed.decision.error == Errors.NONE
    assert (routed.partition, routed.coordinator_epoch) == (partition, 1)


def test_request_checks_come_first() -> None:
    manager = TxnStateManager(PARTITIONS, CONFIG)  # owns nothing
    assert manager.init_producer_id("", TIMEOUT, None, 0, ids().__next__).decision.error == (
        Errors.INVALID_REQUEST
    )
    assert manager.init_producer_id("app", 0, None, 0, ids().__next__).decision.error == (
        Errors.INVALID_TRANSACTION_TIMEOUT
    )
    assert manager.add_partitions("", 1, 0, [T0], 0).decision.error == Errors.INVALID_REQUEST


def test_unknown_ids_are_an_invalid_mapping() -> None:
    manager, _ = owned_manager()
    assert manager.add_partitions("app", 1, 0, [T0], 0).decision.error == (
        Errors.INVALID_PRODUCER_ID_MAPPING
    )
    assert manager.end_txn("app", 1, 0, True, 0).decision.error == (
        Errors.INVALID_PRODUCER_ID_MAPPING
    )


def test_a_whole_transaction_through_the_manager() -> None:
    manager, _ = owned_manager()
    allocate = ids().__next__
    routed = manager.init_producer_id("app", TIMEOUT, None, 0, allocate)
    written(manager, "app", routed)
    entry = manager.entry("app")
    assert entry is not None
    pid, epoch = entry.meta.producer_id, entry.meta.producer_epoch
    assert (pid, epoch) == (1000, 0)
    written(manager, "app", manager.add_partitions("app", pid, epoch, [T0], 5))
    ended = manager.end_txn("app", pid, epoch, True, 9)
    assert ended.decision.markers == TxnResult.COMMIT
    written(manager, "app", ended)
    assert manager.describe("app")[1] is not None
    assert manager.describe("app")[1].state == TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]


def test_a_write_finishing_after_the_partition_moved_is_not_coordinator() -> None:
    manager, partition = owned_manager(epoch=3)
    routed = manager.init_producer_id("app", TIMEOUT, None, 0, ids().__next__)
    assert routed.decision.write is not None
    manager.unload(partition, 3)
    assert manager.write_done("app", 3, routed.decision.write, ok=True) == Errors.NOT_COORDINATOR
    # Led again under a newer epoch: the old write's completion still does not apply.
    manager.begin_loading(partition, 4)
    manager.finish_loading(partition, LoadedPartition(4))
    assert manager.write_done("app", 3, routed.decision.write, ok=True) == Errors.NOT_COORDINATOR


def test_an_old_unload_or_load_does_not_undo_a_newer_leadership() -> None:
    manager = TxnStateManager(PARTITIONS, CONFIG)
    manager.begin_loading(0, 5)
    manager.unload(0, 4)
    assert manager.coordinator_epoch(0) == 5
    assert manager.finish_loading(0, LoadedPartition(4)) == []
    manager.unload(0)
    assert manager.coordinator_epoch(0) is None


def test_failover_returns_the_decided_transactions_to_finish() -> None:
    tid = "app"
    manager = TxnStateManager(PARTITIONS, CONFIG)
    partition = manager.partition_for(tid)
    decided = TxnMetadata(tid, 7, 1, TIMEOUT, TxnState.PREPARE_ABORT, frozenset({T0}), 1, 2)
    loaded = load_partition([(encode_key(tid), encode_value(decided))], 6, 10)
    manager.begin_loading(partition, 6)
    (completion,) = manager.finish_loading(partition, loaded)
    assert completion.markers.result == TxnResult.ABORT
    assert completion.markers.coordinator_epoch == 6
    assert manager.end_txn(tid, 7, 1, False, 11).decision.error == Errors.CONCURRENT_TRANSACTIONS
    assert manager.write_done(tid, 6, completion.target, ok=True) == Errors.NONE
    assert manager.end_txn(tid, 7, 1, False, 12).decision.error == Errors.NONE  # a retry: done


def test_timers_abort_timed_out_transactions_and_expire_idle_ids() -> None:
    manager, _ = owned_manager()
    allocate = ids().__next__
    for tid in ("busy", "idle"):
        manager.begin_loading(manager.partition_for(tid), 3)
        manager.finish_loading(manager.partition_for(tid), LoadedPartition(3))
    written(manager, "busy", manager.init_producer_id("busy", TIMEOUT, None, 0, allocate))
    written(manager, "idle", manager.init_producer_id("idle", TIMEOUT, None, 0, allocate))
    busy = manager.entry("busy")
    assert busy is not None
    written(manager, "busy", manager.add_partitions("busy", busy.meta.producer_id, 0, [T0], 100))
    assert manager.abort_timed_out(100 + TIMEOUT) == []
    ((tid, routed),) = manager.abort_timed_out(101 + TIMEOUT)
    assert tid == "busy" and routed.decision.markers == TxnResult.ABORT
    written(manager, "busy", routed)
    assert manager.expire_ids(CONFIG.id_expiration_ms - 1) == []
    expired = manager.expire_ids(CONFIG.id_expiration_ms)
    assert [t for t, _ in expired] == ["idle"]
    ((_, tombstone),) = expired
    assert manager.describe("idle") == (Errors.TRANSACTIONAL_ID_NOT_FOUND, None)
    written(manager, "idle", tombstone)
    assert manager.entry("idle") is None


@pytest.mark.parametrize(
    ("states", "pids", "expected"),
    [((), (), {"a", "b"}), (("Ongoing",), (), {"b"}), ((), (1000,), {"a"}), (("Dead",), (), set())],
)
def test_list_transactions_filters(
    states: tuple[str, ...], pids: tuple[int, ...], expected: set[str]
) -> None:
    manager = TxnStateManager(1, CONFIG)
    manager.begin_loading(0, 1)
    manager.finish_loading(0, LoadedPartition(1))
    allocate = ids().__next__
    for tid in ("a", "b"):
        written(manager, tid, manager.init_producer_id(tid, TIMEOUT, None, 0, allocate))
    written(manager, "b", manager.add_partitions("b", 1001, 0, [T0], 1))
    found = {m.transactional_id for m in manager.list_transactions(states, pids)}
    assert found == expected
