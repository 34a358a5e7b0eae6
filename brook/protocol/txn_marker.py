"""Transaction markers: the control batch WriteTxnMarkers appends to every partition of a
transaction, in Kafka's format.

One record in a batch with the transactional and control bits set and the transaction's
producer id and epoch (base sequence -1). Its key is Kafka's ControlRecordType (version int16 0,
type int16: 0 ABORT, 1 COMMIT), its value EndTxnMarker v0 (version int16 0, coordinator epoch
int32). Consumers never see the record; a read_committed consumer uses the ABORT marker to stop
skipping the producer's batches.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from .batch import CONTROL_BIT, NO_SEQUENCE, TRANSACTIONAL_BIT, BatchHeader, iter_batches
from .records import batch_header, batch_records, encode_record

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlType(enum.IntEnum):
    """Kafka's ControlRecordType ids."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


class MarkerFormatError(ValueError):
    """A control batch that is not a well-formed transaction marker."""


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """What one marker says: which producer's transaction ended, how, and under which
    coordinator epoch (a partition refuses markers from an older coordinator)."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


def marker_batch(
    marker: TxnMarker,
    *,
    timestamp: int,
    base_offset: int = 0,
    leader_epoch: int = -1,
) -> bytes:
    """The control batch of one marker (offsets and the leader epoch patched as any batch)."""
    kind = ControlType.COMMIT if marker.commit else ControlType.ABORT
    key = _KEY.pack(CONTROL_KEY_VERSION, kind)
    value = _VALUE.pack(END_TXN_MARKER_VERSION, marker.coordinator_epoch)
    payload = encode_record(0, 0, key, value, ())
    header = batch_header(
        payload,
        attributes=CONTROL_BIT | TRANSACTIONAL_BIT,
        count=1,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        producer_id=marker.producer_id,
        producer_epoch=marker.producer_epoch,
        base_sequence=NO_SEQUENCE,
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
    )
    return header + payload


def control_type(key: bytes | None) -> int:
    """The type of a control record from its key (Kafka reads any key version's type)."""
    if key is None or len(key) < _KEY.size:
        raise MarkerFormatError(f"control record key of {0 if key is None else len(key)} bytes")
    version, kind = _KEY.unpack_from(key)
    if version < 0:
        raise MarkerFormatError(f"control record key version {version}")
    return int(kind)


def read_marker(batch: bytes | bytearray | memoryview, pos: int = 0) -> TxnMarker:
    """The marker of the control batch at ``pos``; MarkerFormatError if it is not one."""
    found: tuple[int, BatchHeader] | None = next(iter_batches(batch, pos), None)
    if found is None:
        raise MarkerFormatError("no batch")
    header = found[1]
    if not header.is_control or not header.is_transactional:
        raise MarkerFormatError("not a transactional control batch")
    records = batch_records(batch, pos, header)
    if len(records) != 1:
        raise MarkerFormatError(f"a marker batch holds one record, not {len(records)}")
    kind = control_type(records[0].key)
    if kind not in (ControlType.ABORT, ControlType.COMMIT):
        raise MarkerFormatError(f"control type {kind} is not a transaction marker")
    value = records[0].value
    if value is None or len(value) < _VALUE.size:
        raise MarkerFormatError("EndTxnMarker value too short")
    version, coordinator_epoch = _VALUE.unpack_from(value)
    if version < 0:
        raise MarkerFormatError(f"EndTxnMarker version {version}")
    return TxnMarker(
        header.producer_id,
        header.producer_epoch,
        kind == ControlType.COMMIT,
        coordinator_epoch,
    )


# Every marker batch has this size: its key and value have fixed widths.
MARKER_BATCH_SIZE = len(marker_batch(TxnMarker(0, 0, True, 0), timestamp=0))
