"""What the log cleaner knows of transactions while it walks a log in offset order (Kafka's
``CleanedTransactionMetadata``): which batches belong to an aborted transaction, and when a
transaction marker may go.

The cleaner never reads past the last stable offset, so every transactional batch it sees is
decided, and the aborted ones are exactly those the ``.txnindex`` files list; those are
collected on the log's thread before the walk (``LogToClean.aborted_txns``) and consumed by
first offset as the walk reaches them.

- A data batch of an aborted transaction is dropped whole (its records are never mapped, so
  they never shadow an older committed record of their key).
- An ABORT marker must stay while a batch of its transaction was seen in this walk (it may
  have been kept empty, as its producer's last batch): it is kept, and its ``.txnindex``
  entry goes to the cleaned segment. Otherwise it may go.
- A COMMIT marker may go once no batch of its transaction was seen.

A marker that may go is not dropped at once: the cleaner first stamps KIP-534's delete
horizon on it and drops it at a cleaning past that horizon (``delete.retention.ms``), so a
consumer in the middle of the transaction still reads the marker that ends it.

One tracker serves a whole cleaning pass, carried across its groups of segments as Kafka's
is: a transaction whose batches lie in one group and whose marker lies in the next keeps its
marker as long as its batches are there.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from brook.protocol.batch import BatchHeader
from brook.protocol.txn_marker import TxnMarker

from .txn_index import AbortedTxn


@dataclass(slots=True)
class _Aborted:
    txn: AbortedTxn
    seen: bool = False  # a batch of the transaction was seen in this walk


class CleanedTxns:
    """The transaction state of one cleaning walk, fed every batch in offset order."""

    def __init__(self, aborted: Iterable[AbortedTxn], start: int = 0) -> None:
        """``aborted``: the aborts over the walk's range, which begins at offset ``start``;
        those whose marker lies before it are over (their producer's later batches are not
        theirs)."""
        self._pending = [
            (t.first_offset, t.last_offset, t) for t in aborted if t.last_offset >= start
        ]
        heapq.heapify(self._pending)
        self._aborted: dict[int, _Aborted] = {}  # producer id -> its aborted transaction
        self._committed: set[int] = set()  # producers with a committed transaction seen

    def _reach(self, offset: int) -> None:
        """Open the aborted transactions that start at or before ``offset``."""
        pending = self._pending
        while pending and pending[0][0] <= offset:
            txn = heapq.heappop(pending)[2]
            self._aborted.setdefault(txn.producer_id, _Aborted(txn))

    def on_data(self, header: BatchHeader) -> bool:
        """A data batch; True when it belongs to an aborted transaction (drop its records)."""
        self._reach(header.last_offset)
        if not header.is_transactional:
            return False
        aborted = self._aborted.get(header.producer_id)
        if aborted is not None:
            aborted.seen = True
            return True
        self._committed.add(header.producer_id)
        return False

    def on_marker(
        self, header: BatchHeader, marker: TxnMarker | None
    ) -> tuple[bool, AbortedTxn | None]:
        """A control batch (``marker``: what it says, None when it is no transaction marker
        or holds no record). Returns whether it may go (once past its delete horizon), and
        the ``.txnindex`` entry the cleaned segment keeps for it."""
        self._reach(header.last_offset)
        if marker is None:
            # An emptied control batch may go; any other control batch (LeaderChange...) stays.
            return header.records_count == 0, None
        pid = header.producer_id
        if marker.commit:
            if pid in self._committed:
                self._committed.discard(pid)
                return False, None
            return True, None
        aborted = self._aborted.pop(pid, None)
        if aborted is not None and aborted.seen:
            return False, aborted.txn
        return True, None
