"""Stored batches that a response sends straight from their segment, a chunk at a time.

A fetch response that carried its records as one ``bytes`` per partition would hold them all
in memory until the client has taken them: tens of MB for a client that pipelines fetches and
reads slowly, or never. A ``StoredSpan`` names the bytes instead (segment, position, size);
the connection reads them a chunk at a time as the socket drains. Segment data below the
end is never rewritten in place, so the bytes are those that were read, unless the segment
has been closed (retention, deletion) or truncated since: then reading raises ``SpanGone``
and the connection, which has already sent the response's size, is closed.

The chunks are read long after the log's own checks, so a span cut by a ``PartitionLog``
reads through that log (``PartitionLog.read_span``), under the guard of its other reads: the
segment's pooled descriptor, reopened if the pool closed it meanwhile; KAFKA_STORAGE_ERROR
in a directory that went offline since (nothing opened there); an I/O error takes the
directory offline; running out of descriptors fails the chunk but leaves it online. The
connection closes on any of these, as on ``SpanGone``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .log import PartitionLog
    from .segment import LogSegment


class SpanGone(Exception):
    """The segment behind a span was closed or truncated after the span was cut."""


class StoredSpan:
    __slots__ = ("log", "position", "segment", "size", "truncations")

    def __init__(self, segment: LogSegment, position: int, size: int) -> None:
        self.segment = segment
        self.position = position
        self.size = size
        self.truncations = segment.truncations
        # The log that cut the span, whose I/O guard each chunk goes through (none: a span
        # cut from a bare segment reads from it directly).
        self.log: PartitionLog | None = None

    def __len__(self) -> int:
        return self.size

    def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes from ``offset`` within the span."""
        if self.log is not None:
            return self.log.read_span(self, offset, size)
        return self.segment.read_span(self.position + offset, size, self.truncations)

    def __repr__(self) -> str:
        return f"StoredSpan({self.segment!r}, position={self.position}, size={self.size})"
