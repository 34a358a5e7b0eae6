"""KIP-890 part 1 on the coordinator: AddPartitionsToTxn with VerifyOnly answers, for each
partition a leader asks about, whether it is part of the producer's ongoing transaction,
without adding it (Kafka's TransactionCoordinator.handleVerifyPartitionsInTransaction).

The check is on the written metadata only (a pending change is not looked at: the leader's
append has its own final check, the verification guard). A partition is in the transaction
once the Ongoing state naming it is written, and leaves it when the Complete state is.
"""

from __future__ import annotations

from collections.abc import Iterable

from brook.protocol.errors import Errors

from .state import TopicPartition, TxnMetadata, TxnState


def verify_partitions(
    meta: TxnMetadata | None,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[TopicPartition],
) -> dict[TopicPartition, Errors]:
    """Each partition's answer, in Kafka's order: INVALID_PRODUCER_ID_MAPPING (no such id,
    or another producer id), PRODUCER_FENCED (another epoch), CONCURRENT_TRANSACTIONS (the
    transaction is being committed or aborted) for all; otherwise NONE for a partition in
    the transaction and TRANSACTION_ABORTABLE for one that is not (the leader turns it into
    INVALID_TXN_STATE for clients that predate TRANSACTION_ABORTABLE)."""
    wanted = list(partitions)
    if meta is None or meta.producer_id != producer_id:
        return dict.fromkeys(wanted, Errors.INVALID_PRODUCER_ID_MAPPING)
    if meta.producer_epoch != producer_epoch:
        return dict.fromkeys(wanted, Errors.PRODUCER_FENCED)
    if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        return dict.fromkeys(wanted, Errors.CONCURRENT_TRANSACTIONS)
    return {
        tp: Errors.NONE if tp in meta.partitions else Errors.TRANSACTION_ABORTABLE for tp in wanted
    }
