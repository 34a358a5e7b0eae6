"""The coordinator's answer to AddPartitionsToTxn VerifyOnly (KIP-890): Kafka's errors in
Kafka's order, partitions in the written transaction only, nothing changed by asking."""

from __future__ import annotations

from test_txn_manager import CONFIG, ids, owned_manager, written

from brook.broker.txn.manager import TxnStateManager
from brook.broker.txn.state import TxnMetadata, TxnState
from brook.broker.txn.verification import verify_partitions
from brook.protocol.errors import Errors

T0, T1 = ("t", 0), ("t", 1)
NOW = 1_000


def _meta(state: TxnState, partitions: frozenset[tuple[str, int]] = frozenset()) -> TxnMetadata:
    return TxnMetadata("app", 10, 2, 60_000, state, partitions)


def test_decision_in_kafkas_order() -> None:
    ongoing = _meta(TxnState.ONGOING, frozenset({T0}))
    assert verify_partitions(ongoing, 10, 2, [T0, T1]) == {
        T0: Errors.NONE,
        T1: Errors.TRANSACTION_ABORTABLE,
    }
    assert verify_partitions(None, 10, 2, [T0]) == {T0: Errors.INVALID_PRODUCER_ID_MAPPING}
    assert verify_partitions(ongoing, 11, 2, [T0]) == {T0: Errors.INVALID_PRODUCER_ID_MAPPING}
    assert verify_partitions(ongoing, 10, 1, [T0]) == {T0: Errors.PRODUCER_FENCED}
    assert verify_partitions(ongoing, 10, 3, [T0]) == {T0: Errors.PRODUCER_FENCED}
    for state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        assert verify_partitions(_meta(state, frozenset({T0})), 10, 2, [T0, T1]) == {
            T0: Errors.CONCURRENT_TRANSACTIONS,
            T1: Errors.CONCURRENT_TRANSACTIONS,
        }
    for state in (TxnState.EMPTY, TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT):
        assert verify_partitions(_meta(state), 10, 2, [T0]) == {T0: Errors.TRANSACTION_ABORTABLE}


def test_manager_routes_and_looks_only_at_written_state() -> None:
    manager, partition = owned_manager()
    pids = ids()
    routed = manager.init_producer_id("app", 60_000, None, NOW, lambda: next(pids))
    written(manager, "app", routed)
    entry = manager.entry("app")
    assert entry is not None
    pid, epoch = entry.meta.producer_id, entry.meta.producer_epoch
    assert manager.verify_partitions("app", pid, epoch, [T0]) == {T0: Errors.TRANSACTION_ABORTABLE}
    # An AddPartitionsToTxn still being written does not count yet.
    routed = manager.add_partitions("app", pid, epoch, [T0], NOW)
    assert manager.verify_partitions("app", pid, epoch, [T0]) == {T0: Errors.TRANSACTION_ABORTABLE}
    written(manager, "app", routed)
    assert manager.verify_partitions("app", pid, epoch, [T0, T1]) == {
        T0: Errors.NONE,
        T1: Errors.TRANSACTION_ABORTABLE,
    }
    # Asking changed nothing: T1 is still not in the transaction.
    assert entry.meta.partitions == frozenset({T0}) and entry.pending is None
    assert manager.verify_partitions("", pid, epoch, [T0]) == {T0: Errors.INVALID_REQUEST}
    assert manager.verify_partitions("nobody", pid, epoch, [T0]) in (
        {T0: Errors.NOT_COORDINATOR},
        {T0: Errors.INVALID_PRODUCER_ID_MAPPING},
    )
    manager.begin_loading(partition, 4)
    assert manager.verify_partitions("app", pid, epoch, [T0]) == {
        T0: Errors.COORDINATOR_LOAD_IN_PROGRESS
    }
    manager.unload(partition)
    assert manager.verify_partitions("app", pid, epoch, [T0]) == {T0: Errors.NOT_COORDINATOR}


def test_an_id_this_node_does_not_coordinate() -> None:
    manager = TxnStateManager(4, CONFIG)
    assert manager.verify_partitions("app", 1, 0, [T0]) == {T0: Errors.NOT_COORDINATOR}
