"""The records a new cluster starts with (``brook storage format --add-scram``, as
kafka-storage's bootstrap checkpoint): kept in the node's first log directory beside
``meta.properties`` and appended by the first active controller of a metadata log that holds
nothing yet. Each record is framed as in the metadata log (``records.encode``) behind a 4-byte
length."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from brook.log.checkpoints import write_atomically

from .records import MetadataRecord, RecordFormatError, decode, encode

BOOTSTRAP_FILE = "bootstrap.records"
_LEN = struct.Struct(">I")


def write_bootstrap(directory: str | Path, records: Sequence[MetadataRecord]) -> Path:
    path = Path(directory) / BOOTSTRAP_FILE
    data = b"".join(_LEN.pack(len(e)) + e for e in (encode(r) for r in records))
    write_atomically(path, data)
    return path


def read_bootstrap(directory: str | Path) -> list[MetadataRecord]:
    """The bootstrap records of ``directory`` (none when it has no file); a damaged file
    raises RecordFormatError."""
    path = Path(directory) / BOOTSTRAP_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out: list[MetadataRecord] = []
    pos = 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise RecordFormatError(f"{path} ends inside a record length")
        (n,) = _LEN.unpack_from(data, pos)
        if pos + 4 + n > len(data):
            raise RecordFormatError(f"{path} ends inside a record")
        out.append(decode(data[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    return out
