"""The metadata log's quorum. A quorum of one (the embedded default) commits an append as soon
as it is on local disk; a Raft quorum (KIP-595) replaces this class behind the same interface.

An append whose flush fails is not committed, and the caller does not apply it; it must not
stay in the log either, or the image would miss records that the log holds and that the next
start would replay. An I/O error takes the log's directory offline, so nothing is appended
after it (the next start finds it, never acknowledged, as docs/design.md says of any failed
write). An error that leaves the directory online (the process out of descriptors) has the
batch cut from the log at once; if that fails too, the directory is taken offline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

from brook.log.log import PartitionLog
from brook.protocol.errors import KafkaError
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
        try:
            await asyncio.to_thread(self.log.flush)
        except KafkaError:
            self._take_back(result.first_offset)
            raise
        return result.last_offset

    def _take_back(self, offset: int) -> None:
        """Cut an uncommitted batch (at ``offset``) from the log while its directory is online
        (see the module's docstring); offline, the log is left alone."""
        plog = self.log
        if plog.failures.is_offline(plog.log_dir):
            return
        try:
            plog.truncate_to(offset)
        except KafkaError as exc:
            plog.failures.fail(plog.log_dir, "removing a metadata batch that was not flushed", exc)
