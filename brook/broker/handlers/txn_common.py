"""What the transaction coordinator's handlers share: Kafka's KIP-588 rule that clients older
than PRODUCER_FENCED get INVALID_PRODUCER_EPOCH instead, and the coordinator of this node."""

from __future__ import annotations

from typing import Any

from brook.protocol.errors import Errors

# The first version of each API that may answer PRODUCER_FENCED (KIP-588).
PRODUCER_FENCED_SINCE = {"init_producer_id": 4, "add_partitions": 2, "add_offsets": 2, "end_txn": 2}


def client_error(error: int, api: str, version: int) -> int:
    if error == Errors.PRODUCER_FENCED and version < PRODUCER_FENCED_SINCE[api]:
        return Errors.INVALID_PRODUCER_EPOCH
    return error


def coordinator(ctx: Any) -> Any:
    return ctx.broker.txn_coordinator
