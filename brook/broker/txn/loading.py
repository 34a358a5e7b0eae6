"""What a broker that becomes leader of a ``__transaction_state`` partition does with what it
reads there (Kafka's loadTransactionsForTxnTopicPartition): the transactional ids the records
add up to, and the transactions decided but not completed when the previous coordinator
stopped. Those get their markers sent again and their Complete state written, so that every
transaction ends committed or aborted on every partition it touched, whichever coordinator
decided it. An Ongoing transaction is left to its timeout, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .log_records import replay
from .markers import PendingMarkers, markers_for
from .state import TxnEntry, TxnMetadata, TxnState


@dataclass(frozen=True)
class Completion:
    """A decided transaction to finish: send ``markers``, then write ``target``."""

    entry: TxnEntry
    markers: PendingMarkers
    target: TxnMetadata


@dataclass
class LoadedPartition:
    coordinator_epoch: int
    entries: dict[str, TxnEntry] = field(default_factory=dict)
    completions: list[Completion] = field(default_factory=list)


def load_partition(
    records: Iterable[tuple[bytes | None, bytes | None]], coordinator_epoch: int, now_ms: int
) -> LoadedPartition:
    """The coordinator's state for one partition from its records (in log order); a record
    that does not parse raises ``RecordFormatError``."""
    loaded = LoadedPartition(coordinator_epoch)
    for tid, meta in replay(records).items():
        entry = TxnEntry(meta)
        loaded.entries[tid] = entry
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            markers = markers_for(meta, coordinator_epoch)
            loaded.completions.append(Completion(entry, markers, entry.prepare_complete(now_ms)))
    return loaded
