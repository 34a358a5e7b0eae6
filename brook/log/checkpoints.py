"""The small text files Kafka keeps beside its logs, in Kafka's formats: offset checkpoints
("0\\n<count>\\n<topic> <partition> <offset>\\n..."), the leader-epoch checkpoint,
``partition.metadata`` and ``meta.properties``. Every file is replaced atomically.
"""

from __future__ import annotations

import base64
import binascii
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from brook.config.defs import load_properties

CHECKPOINT_VERSION = 0
TMP_SUFFIX = ".tmp"


class CheckpointError(ValueError):
    """A checkpoint file that exists but cannot be parsed."""


def fsync_path(path: Path) -> None:
    """fsync a file, or a directory to make the renames and new files in it durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` so that a crash leaves either the old or the new content, never a mix."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync:
        fsync_path(path.parent)


def write_entries(path: Path, entries: Sequence[Sequence[object]], *, sync: bool = True) -> None:
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines.extend(" ".join(str(field) for field in entry) for entry in entries)
    write_atomically(path, ("\n".join(lines) + "\n").encode(), sync=sync)


def read_entries(path: Path, fields: int) -> list[list[str]] | None:
    """The entry lines of a checkpoint split into fields; None when the file does not exist."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise CheckpointError(f"{path}: not text ({exc})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2 or lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CheckpointError(f"{path}: missing or unknown version line")
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: bad entry count {lines[1]!r}") from None
    entries = [line.split() for line in lines[2:]]
    if count != len(entries) or any(len(entry) != fields for entry in entries):
        raise CheckpointError(f"{path}: expected {count} entries of {fields} fields")
    return entries


class OffsetCheckpointFile:
    """``<topic> <partition> <offset>`` per line: recovery points, log starts, high watermarks."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[tuple[str, int], int]:
        entries = read_entries(self.path, 3) or []
        try:
            return {(topic, int(part)): int(offset) for topic, part, offset in entries}
        except ValueError as exc:
            raise CheckpointError(f"{self.path}: {exc}") from None

    def write(self, offsets: Mapping[tuple[str, int], int]) -> None:
        write_entries(self.path, [(t, p, o) for (t, p), o in sorted(offsets.items())])


class LeaderEpochCheckpointFile:
    """``<epoch> <start offset>`` per line, in increasing epoch order."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> list[tuple[int, int]] | None:
        entries = read_entries(self.path, 2)
        if entries is None:
            return None
        try:
            return [(int(epoch), int(offset)) for epoch, offset in entries]
        except ValueError as exc:
            raise CheckpointError(f"{self.path}: {exc}") from None

    def write(self, entries: Iterable[tuple[int, int]], *, sync: bool = True) -> None:
        write_entries(self.path, list(entries), sync=sync)


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    """Kafka's text form of a Uuid: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def topic_id_from_string(text: str) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return uuid.UUID(bytes=raw)
    except (binascii.Error, ValueError) as exc:
        raise CheckpointError(f"bad topic id {text!r}: {exc}") from None


class PartitionMetadataFile:
    """``partition.metadata``: the topic id a partition directory belongs to."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> uuid.UUID | None:
        try:
            props = load_properties(self.path.read_text())
        except FileNotFoundError:
            return None
        except UnicodeDecodeError as exc:
            raise CheckpointError(f"{self.path}: not text ({exc})") from None
        if props.get("version") != "0" or "topic_id" not in props:
            raise CheckpointError(f"{self.path}: expected version 0 and a topic_id")
        return topic_id_from_string(props["topic_id"])

    def write(self, topic_id: uuid.UUID, *, sync: bool = True) -> None:
        text = f"version: 0\ntopic_id: {topic_id_to_string(topic_id)}\n"
        write_atomically(self.path, text.encode(), sync=sync)


def read_properties(path: Path) -> dict[str, str]:
    """A Java .properties file such as ``meta.properties``; empty when missing."""
    try:
        return load_properties(path.read_text())
    except FileNotFoundError:
        return {}


def write_properties(path: Path, props: Mapping[str, str]) -> None:
    text = "".join(f"{key}={value}\n" for key, value in props.items())
    write_atomically(path, text.encode())
