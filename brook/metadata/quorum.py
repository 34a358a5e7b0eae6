"""The metadata log's quorum. A quorum of one (the embedded default) commits an append as soon
as it is on local disk; a Raft quorum (KIP-595) replaces this class behind the same interface.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

from brook.log.log import PartitionLog
from brook.protocol.records import build_batch, encode_record, iter_records

_READ_CHUNK = 8 * 1024 * 1024


class LocalQuorum:
    """The metadata partition on this node, with this node as its only voter and leader."""

    def __init__(self, log: PartitionLog, node_id: int) -> None:
        self.log = log
        self.node_id = node_id
        self.epoch = max(1, log.latest_epoch() or 1)

    @property
    def leader_id(self) -> int:
        return self.node_id

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    def read_committed(self, start: int = 0) -> Iterator[tuple[int, bytes]]:
        """(offset, value) of every record from ``start`` up to the committed end."""
        offset = max(start, self.log.log_start_offset)
        while offset < self.log.log_end_offset:
            chunk = self.log.read(offset, _READ_CHUNK).records
            if not chunk:
                break
            first = offset
            for header, record in iter_records(chunk):
                if record.offset >= first and record.value is not None:
                    yield record.offset, record.value
                offset = max(offset, header.next_offset)

    async def append(self, values: list[bytes]) -> int:
        """Append one batch of record values; returns its last offset once committed (durable)."""
        now = int(time.time() * 1000)
        batch = build_batch(
            [encode_record(i, 0, None, v) for i, v in enumerate(values)],
            base_timestamp=now,
            max_timestamp=now,
        )
        result = self.log.append_as_leader(batch, self.epoch, now)
        await asyncio.to_thread(self.log.flush)
        return result.last_offset
