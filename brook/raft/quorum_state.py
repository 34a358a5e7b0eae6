"""The election state a node must never forget (its epoch, its vote, the leader it knows),
persisted as Kafka's ``quorum-state`` file: one line of JSON, ``data_version`` 0 as Kafka
writes it with static voters::

    {"clusterId":"","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,
     "currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}

Written to ``quorum-state.tmp``, fsynced, renamed over the file, and the directory fsynced, so
a crash leaves the old state or the new one. A file that cannot be read is an error that names
it: a node must not guess its vote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from brook.log.checkpoints import write_atomically

FILE_NAME = "quorum-state"
DATA_VERSION = 0
NOT_SET = -1


class QuorumStateError(ValueError):
    """The quorum-state file exists but does not hold a valid election state."""


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What a node persists: ``leader_id`` and ``voted_id`` are -1 when unknown / not voted
    (both may be set: a voter that follows a leader in the epoch it voted in keeps its vote)."""

    epoch: int
    leader_id: int = NOT_SET
    voted_id: int = NOT_SET
    voters: tuple[int, ...] = ()

    def to_json(self) -> str:
        data = {
            "clusterId": "",
            "leaderId": self.leader_id,
            "leaderEpoch": self.epoch,
            "votedId": self.voted_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": v} for v in sorted(self.voters)],
            "data_version": DATA_VERSION,
        }
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, source: str = FILE_NAME) -> ElectionState:
        """Parse the file's first line. Versions 0 (static voters) and 1 (Kafka's dynamic
        quorum, without ``currentVoters``) are read; anything else is a QuorumStateError."""
        line = text.split("\n", 1)[0]
        if not line.strip():
            raise QuorumStateError(f"{source}: the quorum state is empty (the file is truncated)")
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuorumStateError(
                f"{source}: the quorum state is not valid JSON (truncated or corrupt): {exc}"
            ) from None
        if not isinstance(data, dict):
            raise QuorumStateError(f"{source}: the quorum state is not a JSON object")
        version = _int_field(data, "data_version", source)
        if version not in (0, 1):
            raise QuorumStateError(
                f"{source}: data_version {version} is not supported (only 0 and 1 are)"
            )
        voters: tuple[int, ...] = ()
        if version == 0:
            raw = data.get("currentVoters")
            if raw is not None:
                if not isinstance(raw, list):
                    raise QuorumStateError(f"{source}: currentVoters is not a list")
                voters = tuple(_int_field(v, "voterId", source) for v in raw)
        epoch = _int_field(data, "leaderEpoch", source)
        if epoch < 0:
            raise QuorumStateError(f"{source}: leaderEpoch {epoch} is negative")
        return cls(
            epoch,
            _int_field(data, "leaderId", source),
            _int_field(data, "votedId", source),
            voters,
        )


def _int_field(data: Any, name: str, source: str) -> int:
    if not isinstance(data, dict) or name not in data:
        raise QuorumStateError(f"{source}: the quorum state has no {name}")
    value = data[name]
    if not isinstance(value, int) or isinstance(value, bool):
        raise QuorumStateError(f"{source}: {name} is not an integer: {value!r}")
    return value


class QuorumStateStore(Protocol):
    """Where the election state lives. ``write`` returns only once the state is durable."""

    def read(self) -> ElectionState | None:
        """The stored state; None when nothing was ever stored; QuorumStateError if unreadable."""

    def write(self, state: ElectionState) -> None: ...


class FileQuorumStateStore:
    """``<metadata log dir>/__cluster_metadata-0/quorum-state``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> ElectionState | None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise QuorumStateError(f"{self.path}: the quorum state is not UTF-8 text") from None
        return ElectionState.from_json(text, str(self.path))

    def write(self, state: ElectionState) -> None:
        write_atomically(self.path, state.to_json().encode())


class MemoryQuorumStateStore:
    """The store of the simulation: what ``write`` stored survives a crash of the node."""

    def __init__(self, state: ElectionState | None = None) -> None:
        self.state = state
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1
