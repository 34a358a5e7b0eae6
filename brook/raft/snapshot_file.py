"""The content of a metadata snapshot file (``<end offset>-<epoch>.checkpoint``): the records
that rebuild the image, in RecordBatch v2 batches whose base offset and leader epoch are the
snapshot's own end offset and epoch, so a file whose content does not match its name (renamed,
copied from another node's other snapshot) is recognised, as is a damaged one (CRC)."""

from __future__ import annotations

from collections.abc import Sequence

from brook.protocol.batch import CorruptBatch
from brook.protocol.records import build_batch, encode_record, iter_records

from .messages import OffsetAndEpoch

_BATCH_RECORDS = 2000


class SnapshotError(ValueError):
    """A snapshot file that is damaged or is not the snapshot its name says."""


def encode_snapshot(values: Sequence[bytes], snapshot_id: OffsetAndEpoch, now_ms: int) -> bytes:
    out = bytearray()
    for start in range(0, max(len(values), 1), _BATCH_RECORDS):
        chunk = values[start : start + _BATCH_RECORDS] or [b""]
        out += build_batch(
            [encode_record(i, 0, None, v) for i, v in enumerate(chunk)],
            base_timestamp=now_ms,
            max_timestamp=now_ms,
            base_offset=snapshot_id.offset,
            partition_leader_epoch=snapshot_id.epoch,
        )
    return bytes(out)


def decode_snapshot(content: bytes, snapshot_id: OffsetAndEpoch, name: str) -> list[bytes]:
    """The records of snapshot ``snapshot_id`` (file ``name``); SnapshotError if the content
    is damaged or belongs to another snapshot."""
    values: list[bytes] = []
    seen = 0
    try:
        for header, record in iter_records(content):
            if (header.base_offset, header.partition_leader_epoch) != (
                snapshot_id.offset,
                snapshot_id.epoch,
            ):
                raise SnapshotError(
                    f"metadata snapshot {name} holds the snapshot at offset "
                    f"{header.base_offset} in epoch {header.partition_leader_epoch}, not the one "
                    "its name gives"
                )
            seen += header.size if record.offset == header.base_offset else 0
            if record.value:
                values.append(record.value)
    except CorruptBatch as exc:
        raise SnapshotError(f"metadata snapshot {name} is damaged: {exc}") from None
    if seen != len(content):
        raise SnapshotError(
            f"metadata snapshot {name} is damaged: {len(content) - seen} bytes are not whole "
            "batches"
        )
    return values
