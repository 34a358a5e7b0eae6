"""Hostile request frames for a real broker, and the driver that sends them.

For every API and version the broker serves (``brook.broker.registry.HANDLERS``) a valid
request body is built from kio's schema with plausible values (topics, groups and partitions
that exist, timeouts short enough not to park a connection, real RecordBatch v2 bytes where a
field holds records), by an encoder of its own that remembers where every length and count
prefix sits. The body is then mutated: bits flipped, truncated, a length or count rewritten
(small, huge, negative, null where the schema has no null), records rebuilt with a fresh CRC
so the record-level checks are reached, unknown tagged fields added, or replaced by random
bytes. Frames go to the broker over TCP from a few concurrent connections, each connection
sending a few frames the broker can read and then (mostly) one hostile frame, which may
close it. Every ``health_every`` frames a health check asserts that the process is alive,
that its log holds no traceback, and that a real client (confluent-kafka) can produce a new
record and read back every record written since before the fuzzing began.

Used by ``tests/faults/test_fuzz_frames.py`` (a few thousand frames) and
``bench/fuzz_frames.py`` (100,000 and more). Everything derives from one seed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import struct
import time
import types
import typing
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crc32c import crc32c
from rawclient import RawClient, create_topic, produce
from support import BrookProcess

import brook.broker.handlers  # noqa: F401 - registers every handler in HANDLERS
from brook.broker.registry import HANDLERS
from brook.protocol.api import api_name, is_flexible, request_class
from brook.protocol.primitives import uvarint, varint
from brook.protocol.records import build_batch, build_simple_batch, encode_record

# ------------------------------------------------------------------ what exists on the broker


@dataclasses.dataclass
class Env:
    """Names the generator draws plausible values from. The health-check topic is never in
    it, so nothing the fuzzer sends on purpose can delete or reconfigure that topic."""

    topics: list[str]
    topic_ids: list[uuid.UUID]
    groups: list[str]
    node_id: int = 1
    # What CreateTopics and DeleteTopics mostly name, so the topics above mostly stay.
    doomed: tuple[str, ...] = ("fuzz-doomed-0", "fuzz-doomed-1")

    def topic(self, rng: random.Random) -> str:
        roll = rng.random()
        if roll < 0.85:
            return rng.choice(self.topics)
        if roll < 0.95:
            return f"fuzz-absent-{rng.randrange(3)}"
        return rng.choice(["", "bad name!", "x" * 300, "__consumer_offsets", "..", "."])

    def topic_id(self, rng: random.Random) -> uuid.UUID:
        roll = rng.random()
        if roll < 0.8 and self.topic_ids:
            return rng.choice(self.topic_ids)
        if roll < 0.9:
            return uuid.UUID(int=0)
        return uuid.UUID(int=rng.getrandbits(128))

    def group(self, rng: random.Random) -> str:
        return rng.choice(self.groups) if rng.random() < 0.9 else rng.choice(["", "g" * 200])


# Config names the fuzzer may set: none of them can make the health check fail (the health
# topic overrides everything that could: retention, sizes, timestamps, min ISR).
CONFIG_NAMES = [
    "compression.type",
    "segment.ms",
    "segment.bytes",
    "flush.messages",
    "cleanup.policy",
    "message.timestamp.type",
    "not.a.config",
    "log.flush.interval.messages",
    "log.segment.bytes",
]
CONFIG_VALUES = ["1", "1000", "-1", "0", "gzip", "zstd", "delete", "compact", "", "abc", "9" * 30]
HEALTH_TOPIC_CONFIGS = {
    "retention.ms": "-1",
    "retention.bytes": "-1",
    "max.message.bytes": "1048588",
    "min.insync.replicas": "1",
    "cleanup.policy": "delete",
    "message.timestamp.type": "CreateTime",
    "compression.type": "producer",
    "message.timestamp.before.max.ms": "9223372036854775807",
    "message.timestamp.after.max.ms": "9223372036854775807",
}

# ------------------------------------------------------------------ the encoder


@dataclasses.dataclass
class Slot:
    """A length or count prefix in a generated body, and where the field's value ends."""

    pos: int
    width: int
    form: str  # "int16", "int32" or "uvarint"
    where: str
    is_count: bool
    nullable: bool
    end: int = -1


@dataclasses.dataclass
class Body:
    data: bytes
    slots: list[Slot]
    records: list[tuple[int, int]]  # (start, end) of each records field's bytes


_FIXED = {
    "bool": ">?",
    "int8": ">b",
    "int16": ">h",
    "uint16": ">H",
    "error_code": ">h",
    "int32": ">i",
    "timedelta_i32": ">i",
    "int64": ">q",
    "timedelta_i64": ">q",
    "datetime_i64": ">q",
    "float64": ">d",
}
_RANGES = {"int8": 7, "int16": 15, "uint16": 16, "int32": 31, "int64": 63}


def _unwrap(kind: Any) -> tuple[Any, bool]:
    if typing.get_origin(kind) in (types.UnionType, typing.Union):
        return next(a for a in typing.get_args(kind) if a is not type(None)), True
    return kind, False


RecordsHook = Callable[[bytes, random.Random], bytes]


class Generator:
    """Valid request bodies with plausible values, written field by field from kio's schema
    (``Body.slots`` says where each length and count is)."""

    def __init__(self, env: Env, rng: random.Random) -> None:
        self.env = env
        self.rng = rng
        self.tag_rate = 0.3  # how often a known tagged field is sent

    def body(
        self,
        api_key: int,
        version: int,
        records_hook: RecordsHook | None = None,
        unknown_tags: bool = False,
    ) -> Body:
        cls = request_class(api_key, version)
        assert cls is not None
        return self.body_of(cls, records_hook, unknown_tags)

    def body_of(
        self, cls: Any, records_hook: RecordsHook | None = None, unknown_tags: bool = False
    ) -> Body:
        """A body of any kio message class (requests and responses alike)."""
        self._buf = bytearray()
        self._slots: list[Slot] = []
        self._records: list[tuple[int, int]] = []
        self._hook = records_hook
        self._unknown_tags = unknown_tags
        self.acks: int | None = None
        self._in_tag = False
        self._struct(cls)
        return Body(bytes(self._buf), self._slots, self._records)

    # -- structure

    def _struct(self, cls: Any) -> None:
        flexible = bool(cls.__flexible__)
        tagged: list[tuple[int, dataclasses.Field[Any]]] = []
        for f in dataclasses.fields(cls):
            if "tag" in f.metadata:
                tagged.append((int(f.metadata["tag"]), f))
                continue
            self._field(cls, f, flexible)
        if flexible:
            self._tags(cls, tagged)

    def _tags(self, cls: Any, tagged: list[tuple[int, dataclasses.Field[Any]]]) -> None:
        rng = self.rng
        chosen = [(t, f) for t, f in tagged if rng.random() < self.tag_rate]
        extra = self._unknown_tags and rng.random() < 0.5
        fields: list[tuple[int, bytes]] = []
        for tag, f in chosen:
            outer_buf, outer_slots, outer_records = self._buf, self._slots, self._records
            self._buf, self._slots, self._records = bytearray(), [], []
            self._in_tag = True
            self._field(cls, f, True)
            self._in_tag = False
            fields.append((tag, bytes(self._buf)))
            self._buf, self._slots, self._records = outer_buf, outer_slots, outer_records
        if extra:
            fields.append((rng.randrange(10, 40000), rng.randbytes(rng.randrange(0, 12))))
        fields.sort(key=lambda item: item[0])
        self._buf += uvarint(len(fields))
        for tag, value in fields:
            self._buf += uvarint(tag) + uvarint(len(value)) + value

    def _field(self, owner: Any, f: dataclasses.Field[Any], flexible: bool) -> None:
        kind, nullable = _unwrap(f.type)
        kafka_type = f.metadata.get("kafka_type")
        where = f"{owner.__name__}.{f.name}"
        if typing.get_origin(kind) is tuple:
            element, element_nullable = _unwrap(typing.get_args(kind)[0])
            if nullable and self.rng.random() < 0.1:
                self._length(-1, flexible, "int32", where, True, True)
                return
            count = self._count(f.name)
            slot = self._length(count, flexible, "int32", where, True, nullable)
            for _ in range(count):
                self._value(owner, f.name, where, element, kafka_type, flexible, element_nullable)
            slot.end = len(self._buf)
            return
        self._value(owner, f.name, where, kind, kafka_type, flexible, nullable)

    def _value(
        self,
        owner: Any,
        name: str,
        where: str,
        kind: Any,
        kafka_type: str | None,
        flexible: bool,
        nullable: bool,
    ) -> None:
        rng = self.rng
        if kafka_type is None:  # a nested struct
            if nullable:
                if rng.random() < 0.3:
                    self._buf += b"\xff"
                    return
                self._buf += b"\x01"
            self._struct(kind)
            return
        if kafka_type == "uuid":
            if owner.__name__ == "DeleteTopicState" and rng.random() < 0.9:
                self._buf += uuid.UUID(int=rng.getrandbits(128) if rng.random() < 0.5 else 0).bytes
            else:
                self._buf += self.env.topic_id(rng).bytes
        elif kafka_type in _FIXED:
            value = self._number(owner.__name__, name, kafka_type)
            if name == "acks":
                self.acks = value
            if kafka_type == "uint16":
                value &= 0xFFFF
            self._buf += struct.pack(_FIXED[kafka_type], value)
        elif kafka_type == "string":
            # kio refuses a tagged string sent as null (Kafka takes it): none is sent.
            null = nullable and not self._in_tag and rng.random() < 0.1
            text = None if null else self._string(owner, name)
            data = None if text is None else text.encode()
            size = -1 if data is None else len(data)
            slot = self._length(size, flexible, "int16", where, False, nullable)
            self._buf += data or b""
            slot.end = len(self._buf)
        else:  # bytes, records
            if kafka_type == "records":
                data = self._records_blob()
                if self._hook is not None:
                    data = self._hook(data, rng)
            else:
                data = rng.randbytes(rng.randrange(0, 24))
            slot = self._length(len(data), flexible, "int32", where, False, nullable)
            start = len(self._buf)
            self._buf += data
            slot.end = len(self._buf)
            if kafka_type == "records":
                self._records.append((start, len(self._buf)))

    def _length(
        self, value: int, flexible: bool, form: str, where: str, is_count: bool, nullable: bool
    ) -> Slot:
        pos = len(self._buf)
        if flexible:
            raw = uvarint(value + 1)
        else:
            raw = struct.pack(">h" if form == "int16" else ">i", value)
        form = "uvarint" if flexible else form
        slot = Slot(pos, len(raw), form, where, is_count, nullable, pos + len(raw))
        self._slots.append(slot)
        self._buf += raw
        return slot

    # -- plausible values

    def _count(self, name: str) -> int:
        rng = self.rng
        if name in ("topics", "topic_data", "partition_data", "partitions", "protocols"):
            return rng.choice([1, 1, 1, 2, 2, 3])
        return rng.choice([0, 1, 1, 1, 2, 3])

    def _number(self, owner: str, name: str, kafka_type: str) -> Any:
        rng = self.rng
        if kafka_type == "bool":
            if name == "allow_auto_topic_creation":
                return rng.random() < 0.1
            return rng.random() < 0.5
        if kafka_type == "float64":
            return rng.choice([0.0, 1.5, -1.0])
        if kafka_type == "datetime_i64":
            return int(time.time() * 1000) + rng.randrange(-1000, 1000)
        if kafka_type in ("timedelta_i32", "timedelta_i64") or "timeout" in name:
            if name == "session_timeout":
                return rng.choice([6000, 10000, 30000, 1])
            if name == "rebalance_timeout":
                return rng.choice([100, 500, 1000])
            return rng.choice([0, 0, 10, 50, 100])
        if kafka_type == "error_code":
            return 0
        if rng.random() < 0.03:  # now and then an extreme of the type
            bits = _RANGES[kafka_type]
            return rng.choice([-(2**bits), 2**bits - 1, -1])
        if name in ("partition", "partition_index", "index", "partitions", "partition_indexes"):
            return rng.choice([0, 0, 0, 1, 1, 2, 3, -1])
        if name == "acks":
            return rng.choice([-1, 1, 1, 0])
        if name in ("replica_id", "broker_id", "node_id", "leader_id", "broker_ids", "replicas"):
            return rng.choice([-1, self.env.node_id, self.env.node_id, 0, 7])
        if name == "num_partitions":
            return rng.choice([-1, 1, 2, 3])
        if name == "count":
            return rng.choice([1, 2, 4, 6])
        if name == "replication_factor":
            return rng.choice([-1, 1, 1, 3])
        if name in ("min_bytes",):
            return rng.choice([0, 1])
        if "max_bytes" in name:
            return rng.choice([1, 1024, 1 << 20])
        if name in ("session_id",):
            return rng.choice([0, 0, 1, 12345])
        if name in ("session_epoch",):
            return rng.choice([-1, 0, 1])
        if "epoch" in name or name == "generation_id":
            return rng.choice([-1, -1, 0, 1])
        if name == "isolation_level":
            return rng.choice([0, 1])
        if name == "key_type":
            return rng.choice([0, 0, 1])
        if name == "resource_type":
            return rng.choice([2, 2, 4, 3, 0])
        if name == "config_operation":
            return rng.choice([0, 1, 2, 3])
        if name == "timestamp":
            return rng.choice([-1, -2, -3, 0, int(time.time() * 1000)])
        if name == "producer_id":
            return rng.choice([-1, -1, 0, 1000])
        if name == "retention_time":
            return -1
        if "offset" in name:
            return rng.choice([-1, 0, 0, 1, 5, 20, 1000])
        if kafka_type == "int8":
            return rng.choice([0, 1, -1])
        return rng.choice([0, 1, 2, 5, 100])

    def _string(self, owner: Any, name: str) -> str:
        rng = self.rng
        env = self.env
        owner_name = owner.__name__
        if name in ("group_id", "groups", "key", "coordinator_keys", "groups_names"):
            return env.group(rng)
        if name == "member_id":
            return rng.choice(["", "", "fuzz-member", f"m-{uuid.UUID(int=rng.getrandbits(128))}"])
        if name == "group_instance_id":
            return rng.choice(["fuzz-instance", ""])
        if name == "protocol_type":
            return rng.choice(["consumer", "consumer", "connect", ""])
        if name == "protocol_name" or (name == "name" and "Protocol" in owner_name):
            return rng.choice(["range", "roundrobin", "cooperative-sticky", "x"])
        if name == "transactional_id":
            return rng.choice(["", "fuzz-txn"])
        if name in ("rack_id", "rack", "cluster_id"):
            return ""
        if name.startswith("client_software"):
            return "fuzz-1.0"
        if name == "resource_name":
            return rng.choice([*env.topics, str(env.node_id), "", "fuzz-absent-0"])
        if name in ("name", "config_names", "configuration_keys", "key") and "onfig" in owner_name:
            return rng.choice(CONFIG_NAMES)
        if name == "value":
            return rng.choice(CONFIG_VALUES)
        doomed = owner_name in ("CreatableTopic", "DeleteTopicState", "DeleteTopicsRequest")
        if doomed and rng.random() < 0.9:
            return rng.choice(env.doomed)
        if name in ("topic", "topic_name", "topics", "name", "topic_names"):
            return env.topic(rng)
        if "state" in name or "filter" in name:
            return rng.choice(["Stable", "Empty", "consumer", "x"])
        return rng.choice(["", "fz", "fuzz-" + str(rng.randrange(100))])

    def _records_blob(self) -> bytes:
        rng = self.rng
        count = rng.choice([1, 1, 2, 3, 5])
        now = int(time.time() * 1000)
        encoded = []
        for i in range(count):
            key = None if rng.random() < 0.5 else rng.randbytes(rng.randrange(0, 8))
            value = None if rng.random() < 0.05 else rng.randbytes(rng.randrange(0, 64))
            headers = [("h", b"v")] if rng.random() < 0.2 else []
            encoded.append(encode_record(i, rng.randrange(0, 5), key, value, headers))
        codec = rng.choice([0, 0, 0, 1, 2, 3, 4])
        return build_batch(encoded, base_timestamp=now, max_timestamp=now + 4, codec=codec)


# ------------------------------------------------------------------ mutations


def fix_crc(blob: bytearray) -> bytes:
    """A batch whose CRC-32C matches its bytes again, so the checks behind the CRC run."""
    if len(blob) >= 61:
        blob[17:21] = struct.pack(">I", crc32c(bytes(blob[21:])))
    return bytes(blob)


def _records_mutation(kind: str) -> RecordsHook:
    def hook(blob: bytes, rng: random.Random) -> bytes:
        b = bytearray(blob)
        if kind == "payload-bits":  # a record's varints damaged, CRC made right again
            for _ in range(rng.randrange(1, 6)):
                if len(b) > 61:
                    pos = rng.randrange(61, len(b))
                    b[pos] ^= 1 << rng.randrange(8)
            return fix_crc(b)
        if kind == "header-field":  # attributes, deltas, timestamps, producer, count
            pos = rng.choice([21, 22, 23, 26, 27, 35, 43, 51, 53, 57, 60])
            b[pos] = rng.randrange(256)
            return fix_crc(b)
        if kind == "count":
            b[57:61] = struct.pack(">i", rng.choice([0, -1, 2, 1000, 2**31 - 1]))
            return fix_crc(b)
        if kind == "batch-length":
            b[8:12] = struct.pack(">i", rng.choice([0, 1, 48, len(b), 2**31 - 1, -5]))
            return bytes(b)
        if kind == "magic":
            b[16] = rng.choice([0, 1, 3, 255])
            return bytes(b)
        if kind == "truncated":
            return bytes(b[: rng.randrange(0, len(b))])
        if kind == "two-batches":
            second = bytearray(blob)
            if len(second) > 61:
                second[rng.randrange(61, len(second))] ^= 0xFF
            return bytes(b) + fix_crc(second)
        if kind == "compressed-garbage":
            b[22] = (b[22] & 0xF8) | rng.randrange(1, 8)
            return fix_crc(b[:61] + bytearray(rng.randbytes(rng.randrange(0, 64))))
        if kind == "huge-varint":  # one record whose length varint says 2^31
            record = varint(2**31 - 1) + b"\x00" * 8
            head = bytearray(b[:61])
            head[8:12] = struct.pack(">i", 49 + len(record))
            head[57:61] = struct.pack(">i", 1)
            return fix_crc(head + record)
        if kind == "empty":
            head = bytearray(b[:61])
            head[8:12] = struct.pack(">i", 49)
            head[57:61] = struct.pack(">i", 0)
            return fix_crc(head)
        return rng.randbytes(rng.randrange(0, 80))  # random

    return hook


RECORDS_MUTATIONS = [
    "payload-bits",
    "header-field",
    "count",
    "batch-length",
    "magic",
    "truncated",
    "two-batches",
    "compressed-garbage",
    "huge-varint",
    "empty",
    "random",
]


def rewrite_slot(data: bytes, slot: Slot, rng: random.Random) -> tuple[bytes, str]:
    """``data`` with the length or count at ``slot`` rewritten: null, small, just past the
    end, or huge (2^31, 2^33 and 2^35 - 1 fit kio's 5-byte varints, 2^40 does not)."""
    remaining = len(data) - slot.pos - slot.width
    if slot.form == "uvarint":  # raw values: 0 is null, n stands for n - 1
        value = rng.choice(
            [0, 1, 2, remaining + 2, 0x8000, 2**31, 2**32 + 1, 2**33, 2**35 - 1, 2**40]
        )
        raw = uvarint(value)
        shown = value - 1
    else:
        bits = 15 if slot.form == "int16" else 31
        value = rng.choice([-1, -1, -2, 0, 1, remaining + 1, 2**bits - 1, -(2**bits)])
        raw = struct.pack(">h" if slot.form == "int16" else ">i", value)
        shown = value
    mutated = data[: slot.pos] + raw + data[slot.pos + slot.width :]
    return mutated, f"{slot.where}={shown}"


@dataclasses.dataclass
class Frame:
    api_key: int
    version: int
    data: bytes  # the whole frame, size prefix included
    label: str
    expects_response: bool
    hostile: bool = False


class FrameFactory:
    """Frames for the APIs and versions in HANDLERS, each valid or mutated one way. Produce
    and Fetch, the hot paths, get a larger share."""

    def __init__(self, env: Env, rng: random.Random) -> None:
        self.rng = rng
        self.gen = Generator(env, rng)
        self.targets = [
            (key, v)
            for key, spec in sorted(HANDLERS.items())
            for v in range(spec.min_version, spec.max_version + 1)
            if request_class(key, v) is not None
        ]
        self.correlation = 0

    def _target(self) -> tuple[int, int]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.15:
            api_key = 0
        elif roll < 0.25:
            api_key = 1
        else:
            api_key = rng.choice(self.targets)[0]
        return api_key, rng.choice([v for k, v in self.targets if k == api_key])

    def clean(self) -> Frame:
        """A frame the broker can read: valid, with unknown tagged fields, or a Produce whose
        records are damaged (the broker answers with an error code)."""
        rng = self.rng
        api_key, version = self._target()
        pick = rng.random()
        if api_key == 0 and pick < 0.5:
            kind = rng.choice(RECORDS_MUTATIONS)
            body = self.gen.body(api_key, version, _records_mutation(kind))
            return self._frame(api_key, version, body.data, f"records:{kind}")
        if pick < 0.8:
            return self._frame(api_key, version, self.gen.body(api_key, version).data, "valid")
        body = self.gen.body(api_key, version, unknown_tags=True)
        return self._frame(api_key, version, body.data, "unknown-tags")

    def hostile(self) -> Frame:
        """A frame mutated beyond what the schema allows (or one that may just happen to be
        readable): counts and lengths rewritten, bits flipped, truncated, random."""
        rng = self.rng
        if rng.random() < 0.05:
            frame = self.random_frame()
        else:
            api_key, version = self._target()
            data, label = self._mutate(self.gen.body(api_key, version))
            frame = self._frame(api_key, version, data, label)
        frame.hostile = True
        return frame

    def _frame(self, api_key: int, version: int, data: bytes, label: str) -> Frame:
        acks_zero = api_key == 0 and self.gen.acks == 0
        head = self._header(api_key, version)
        return Frame(
            api_key,
            version,
            struct.pack(">i", len(head) + len(data)) + head + data,
            f"{api_name(api_key)} v{version} {label}",
            not acks_zero,
        )

    def _mutate(self, body: Body) -> tuple[bytes, str]:
        rng = self.rng
        data = body.data
        pick = rng.random()
        if pick < 0.45 and body.slots:
            data, what = rewrite_slot(data, rng.choice(body.slots), rng)
            return data, f"count:{what}"
        if pick < 0.65:
            flipped = bytearray(data)
            for _ in range(rng.randrange(1, 9)):
                if flipped:
                    flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
            return bytes(flipped), "bitflip"
        if pick < 0.8:
            return data[: rng.randrange(0, max(1, len(data)))], "truncate"
        if pick < 0.87:
            return data + rng.randbytes(rng.randrange(1, 16)), "trailing"
        return rng.randbytes(rng.randrange(0, 120)), "random-body"

    def random_frame(self) -> Frame:
        """Bytes with only the frame size right: any key, any version, any header."""
        rng = self.rng
        body = rng.randbytes(rng.randrange(0, 64))
        head = struct.pack(">hhi", rng.randrange(-5, 80), rng.randrange(-2, 25), 1)
        data = head + body
        return Frame(-1, -1, struct.pack(">i", len(data)) + data, "random-frame", True)

    def _header(self, api_key: int, version: int) -> bytes:
        rng = self.rng
        self.correlation += 1
        head = struct.pack(">hhi", api_key, version, self.correlation)
        if rng.random() < 0.03:  # a lying client id length
            head += struct.pack(">h", rng.choice([-2, 0x7FFF, 40]))
        else:
            head += struct.pack(">h", 4) + b"fuzz"
        if is_flexible(api_key, version):
            head += b"\x00" if rng.random() < 0.97 else uvarint(rng.choice([1, 2**31])) + b"\x05"
        return head


# ------------------------------------------------------------------ the driver


@dataclasses.dataclass
class Stats:
    frames: int = 0
    hostile: int = 0
    connections: int = 0
    closed_by_broker: int = 0
    responses: int = 0
    health_checks: int = 0
    labels: dict[str, int] = dataclasses.field(default_factory=dict)


class FuzzFailure(AssertionError):
    pass


class Fuzzer:
    """Sends frames from ``workers`` concurrent connections to ``host:port``."""

    def __init__(
        self,
        host: str,
        port: int,
        env: Env,
        seed: int,
        *,
        workers: int = 4,
        burst: int = 4,
        idle_timeout: float = 0.5,
        alive: Callable[[], bool] = lambda: True,
    ) -> None:
        self.host = host
        self.port = port
        self.seed = seed
        self.workers = workers
        self.burst = burst
        self.idle_timeout = idle_timeout
        self.alive = alive
        self.factories = [FrameFactory(env, random.Random(f"{seed}/{i}")) for i in range(workers)]
        self.stats = Stats()
        self.recent: deque[str] = deque(maxlen=60)

    async def send(self, frames: int) -> None:
        """Send ``frames`` frames, split over the workers."""
        share = [
            frames // self.workers + (1 if i < frames % self.workers else 0)
            for i in range(self.workers)
        ]
        await asyncio.gather(*(self._worker(i, n) for i, n in enumerate(share)))

    async def _worker(self, index: int, frames: int) -> None:
        """Connection after connection: a few frames the broker can read, then (mostly) one
        hostile frame, which is last because the broker may close the connection on it."""
        factory = self.factories[index]
        rng = factory.rng
        sent = 0
        while sent < frames:
            size = min(frames - sent, rng.randrange(1, self.burst + 1))
            batch = [factory.clean() for _ in range(size - 1)]
            batch.append(factory.hostile() if rng.random() < 0.85 else factory.clean())
            sent += size
            await self._burst(index, batch)

    async def _burst(self, worker: int, batch: list[Frame]) -> None:
        stats = self.stats
        for f in batch:
            stats.frames += 1
            stats.hostile += f.hostile
            kind = f.label.split(" ", 2)[-1].split(":")[0]
            stats.labels[kind] = stats.labels.get(kind, 0) + 1
            self.recent.append(f"worker {worker}: {f.label}")
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        except OSError as exc:
            state = "is alive" if self.alive() else "has died"
            raise FuzzFailure(f"cannot connect to the broker: {exc}; the process {state}") from None
        stats.connections += 1
        writer.write(b"".join(f.data for f in batch))
        expected = sum(1 for f in batch if f.expects_response)
        got = 0
        try:
            while got < expected:
                try:
                    head = await asyncio.wait_for(reader.readexactly(4), self.idle_timeout)
                    (size,) = struct.unpack(">i", head)
                    await asyncio.wait_for(reader.readexactly(size), self.idle_timeout)
                except asyncio.IncompleteReadError:
                    stats.closed_by_broker += 1
                    break
                except TimeoutError:
                    break
                got += 1
        except (ConnectionResetError, BrokenPipeError):
            stats.closed_by_broker += 1
        finally:
            stats.responses += got
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionResetError, BrokenPipeError):
                pass

    def describe(self) -> str:
        s = self.stats
        return (
            f"seed {self.seed}: {s.frames} frames ({s.hostile} hostile), "
            f"{s.connections} connections, "
            f"{s.closed_by_broker} closed by the broker, {s.responses} responses, "
            f"{s.health_checks} health checks passed"
        )


# ------------------------------------------------------------------ health


class Health:
    """The broker is alive, logged no traceback, and serves a real client: a new record is
    produced and every record written to the health topic so far reads back unchanged."""

    def __init__(self, bootstrap: str, topic: str, log_path: Path, pid_alive: Callable[[], bool]):
        self.bootstrap = bootstrap
        self.topic = topic
        self.log_path = log_path
        self.alive = pid_alive
        self.values: list[bytes] = []
        self._log_pos = 0

    def seed_data(self, count: int) -> None:
        self.produce([f"before-fuzzing-{i}".encode() for i in range(count)])

    def produce(self, values: list[bytes]) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all"})
        errors: list[str] = []
        for value in values:
            producer.produce(
                self.topic,
                value,
                partition=0,
                on_delivery=lambda err, _m: errors.append(str(err)) if err else None,
            )
        left = producer.flush(30)
        if left or errors:
            raise FuzzFailure(f"health produce failed: {left} undelivered, {errors[:3]}")
        self.values.extend(values)

    def read_all(self) -> list[bytes]:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "fuzz-health-unused",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.assign([TopicPartition(self.topic, 0, 0)])
            got: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(got) < len(self.values) and time.monotonic() < deadline:
                for msg in consumer.consume(500, 0.5):
                    if msg.error() is None:
                        got.append(msg.value())
            return got
        finally:
            consumer.close()

    def check(self, context: str) -> None:
        if not self.alive():
            raise FuzzFailure(f"the broker process died ({context})\n{self._log_tail()}")
        self.check_log(context)
        self.produce([f"health-{len(self.values)}".encode()])
        got = self.read_all()
        if got != self.values:
            raise FuzzFailure(
                f"health topic reads {len(got)} records, {len(self.values)} written; first "
                f"difference at {_first_difference(got, self.values)} ({context})"
            )
        self.check_log(context)

    def check_log(self, context: str) -> None:
        text = self.log_path.read_text(errors="replace")
        new, self._log_pos = text[self._log_pos :], len(text)
        if "Traceback" in new:
            start = new.index("Traceback")
            excerpt = new[max(0, start - 300) : start + 3000]
            raise FuzzFailure(f"traceback in the broker log ({context}):\n{excerpt}")

    def _log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""


def _first_difference(a: list[bytes], b: list[bytes]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


# ------------------------------------------------------------------ a whole run


class LimitedBrookProcess(BrookProcess):
    """A broker whose address space is capped (``prlimit --as``): should a frame ever make it
    reserve memory without bound, it fails there instead of taking the machine's memory."""

    def __init__(self, *args: Any, address_space: int = 4 << 30, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.address_space = address_space

    def command(self) -> list[str]:
        return ["prlimit", f"--as={self.address_space}", "--", *super().command()]


FUZZ_BROKER_CONFIG = {
    "group.initial.rebalance.delay.ms": "0",  # a JoinGroup would otherwise park for 3 s
    "auto.create.topics.enable": "false",
}
HEALTH_TOPIC = "health-check"


def prepare(bootstrap: str) -> Env:
    """The topics the fuzzer aims at (with some records) and the health topic."""
    with RawClient(bootstrap) as client:
        create_topic(client, HEALTH_TOPIC, 1, HEALTH_TOPIC_CONFIGS)
        names = ["fuzz-t0", "fuzz-t1", "fuzz-t2"]
        for i, name in enumerate(names):
            create_topic(client, name, 3 - i)
            for p in range(3 - i):
                produce(client, name, p, build_simple_batch([b"a", b"b"]), acks=1)
        meta = client.request(
            3,
            12,
            {
                "topics": [{"name": n, "topic_id": None} for n in names],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        ids = [t.topic_id for t in meta.topics if t.topic_id is not None]
        node_id = int(meta.brokers[0].node_id)
    return Env(names, ids, ["fuzz-g0", "fuzz-g1"], node_id)


def run(
    broker: BrookProcess,
    frames: int,
    seed: int,
    *,
    health_every: int = 500,
    workers: int = 4,
    progress: Callable[[Fuzzer], None] | None = None,
) -> Fuzzer:
    """Fuzz ``broker`` with ``frames`` frames, a health check every ``health_every``; raises
    FuzzFailure (naming the seed and the last frames sent) if the broker dies, logs a
    traceback, loses a record or stops serving the real client."""
    env = prepare(broker.bootstrap)
    proc = broker.proc
    assert proc is not None
    health = Health(broker.bootstrap, HEALTH_TOPIC, broker.log_path, lambda: proc.poll() is None)
    health.seed_data(20)
    health.check("before fuzzing")
    host, port = broker.bootstrap.rsplit(":", 1)
    fuzzer = Fuzzer(host, int(port), env, seed, workers=workers, alive=health.alive)
    done = 0
    try:
        while done < frames:
            n = min(health_every, frames - done)
            asyncio.run(fuzzer.send(n))
            done += n
            health.check(f"after {done} frames")
            fuzzer.stats.health_checks += 1
            if progress is not None:
                progress(fuzzer)
    except FuzzFailure as exc:
        recent = "\n".join(fuzzer.recent)
        raise FuzzFailure(f"{exc}\n{fuzzer.describe()}\nlast frames sent:\n{recent}") from None
    return fuzzer
