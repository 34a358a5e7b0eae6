"""``__consumer_offsets`` records: Kafka's key and value encodings, and replay semantics."""

from __future__ import annotations

import struct
from collections import namedtuple

from hypothesis import given
from hypothesis import strategies as st

from brook.broker.group.store import (
    GroupKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetAndMetadata,
    OffsetKey,
    Replay,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_offset_value,
    group_key,
    java_string_hash,
    offset_key,
    partition_for,
    subscribed_topics,
)

text = st.text(max_size=40)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


def test_offset_key_bytes_match_kafka() -> None:
    # version 1, group "g", topic "t", partition 3
    assert offset_key("g", "t", 3) == b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x03"
    assert group_key("grp") == b"\x00\x02\x00\x03grp"


def test_offset_value_v3_bytes_match_kafka() -> None:
    value = OffsetAndMetadata(offset=42, leader_epoch=5, metadata="m", commit_timestamp=1000)
    assert encode_offset_value(value) == (
        struct.pack(">hqi", 3, 42, 5) + b"\x00\x01m" + struct.pack(">q", 1000)
    )


def test_offset_value_with_expiry_is_v1() -> None:
    value = OffsetAndMetadata(7, -1, "", 10, expire_timestamp=99)
    data = encode_offset_value(value)
    assert data[:2] == b"\x00\x01"
    assert decode_offset_value(data) == value


def test_older_offset_value_versions_decode() -> None:
    v0 = struct.pack(">hq", 0, 9) + b"\x00\x02md" + struct.pack(">q", 123)
    assert decode_offset_value(v0) == OffsetAndMetadata(9, -1, "md", 123)
    v2 = struct.pack(">hq", 2, 9) + b"\x00\x00" + struct.pack(">q", 5)
    assert decode_offset_value(v2) == OffsetAndMetadata(9, -1, "", 5)
    # v4 is flexible: compact string and tagged fields
    v4 = struct.pack(">hqi", 4, 9, 2) + b"\x03ab" + struct.pack(">q", 5) + b"\x00"
    assert decode_offset_value(v4) == OffsetAndMetadata(9, 2, "ab", 5)


@given(int64, int32, text, int64)
def test_offset_value_round_trip(offset: int, epoch: int, metadata: str, ts: int) -> None:
    value = OffsetAndMetadata(offset, epoch, metadata, ts)
    assert decode_offset_value(encode_offset_value(value)) == value


members = st.builds(
    MemberMetadata,
    text,
    st.none() | text,
    text,
    text,
    int32,
    int32,
    st.binary(max_size=50),
    st.binary(max_size=50),
)


@given(
    st.builds(
        GroupMetadataValue,
        text,
        int32,
        st.none() | text,
        st.none() | text,
        int64,
        st.lists(members, max_size=4).map(tuple),
    )
)
def test_group_value_round_trip(value: GroupMetadataValue) -> None:
    assert decode_group_value(encode_group_value(value)) == value


def test_group_value_v0_decodes_with_session_timeout_as_rebalance_timeout() -> None:
    data = (
        struct.pack(">h", 0)
        + b"\x00\x08consumer"
        + struct.pack(">i", 4)
        + b"\x00\x05range"
        + b"\x00\x02m1"
        + struct.pack(">i", 1)
        + b"\x00\x02m1\x00\x01c\x00\x01h"
        + struct.pack(">i", 10000)
        + struct.pack(">i", 1)
        + b"s"
        + struct.pack(">i", 1)
        + b"a"
    )
    value = decode_group_value(data)
    assert value.generation == 4
    assert value.current_state_timestamp == -1
    assert value.members == (MemberMetadata("m1", None, "c", "h", 10000, 10000, b"s", b"a"),)


def test_keys_decode() -> None:
    assert decode_key(offset_key("g", "t", 1)) == OffsetKey("g", "t", 1)
    assert decode_key(b"\x00\x00" + offset_key("g", "t", 1)[2:]) == OffsetKey("g", "t", 1)
    assert decode_key(group_key("g")) == GroupKey("g")
    assert decode_key(b"\x00\x07whatever") is None  # newer record types are not ours


def test_java_hash_and_partition_for() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Kafka's Utils.abs maps it to 0.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    # A negative hash uses its absolute value, not a bit mask.
    h = java_string_hash("my-group")
    assert partition_for("my-group", 50) == abs(h) % 50
    # Characters beyond the BMP count as two UTF-16 units, as on the JVM.
    assert java_string_hash("\U0001f600") == (31 * 0xD83D + 0xDE00)


def test_subscribed_topics() -> None:
    data = struct.pack(">hi", 1, 2) + b"\x00\x01a\x00\x02bc" + struct.pack(">i", -1) + b"extra"
    assert subscribed_topics(data) == {"a", "bc"}
    assert subscribed_topics(b"\x00") is None


def test_replay_last_value_wins_and_tombstones_delete() -> None:
    g1 = GroupMetadataValue("consumer", 1, "range", "m", 5, ())
    g2 = GroupMetadataValue("consumer", 2, None, None, 6, ())
    records = [
        (offset_key("a", "t", 0), encode_offset_value(OffsetAndMetadata(1)), 0),
        (group_key("a"), encode_group_value(g1), 1),
        (offset_key("a", "t", 0), encode_offset_value(OffsetAndMetadata(2, metadata="x")), 2),
        (offset_key("a", "t", 1), encode_offset_value(OffsetAndMetadata(3)), 3),
        (group_key("a"), encode_group_value(g2), 4),
        (offset_key("a", "t", 1), None, 5),
        (offset_key("b", "u", 0), encode_offset_value(OffsetAndMetadata(7)), 6),
        (group_key("c"), encode_group_value(g1), 7),
        (group_key("c"), None, 8),
        (None, b"junk", 9),
        (b"\x00\x01\x00", b"truncated key", 10),
    ]
    replay = Replay().apply_all(records)
    assert replay.groups == {"a": g2}
    assert replay.offsets == {
        "a": {("t", 0): (OffsetAndMetadata(2, metadata="x"), 2)},
        "b": {("u", 0): (OffsetAndMetadata(7), 6)},
    }
    assert replay.group_ids() == {"a", "b"}
    assert replay.skipped == 2


def test_replay_drops_groups_whose_offsets_are_all_deleted() -> None:
    records = [
        (offset_key("a", "t", 0), encode_offset_value(OffsetAndMetadata(1)), 0),
        (offset_key("a", "t", 0), None, 1),
    ]
    assert Replay().apply_all(records).group_ids() == set()


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["g1", "g2"]),
            st.sampled_from(["t", "u"]),
            st.integers(0, 2),
            st.none() | st.integers(0, 100),
        ),
        max_size=40,
    )
)
def test_replay_equals_a_dict_of_last_values(ops: list[tuple[str, str, int, int | None]]) -> None:
    expected: dict[tuple[str, str, int], int] = {}
    records = []
    for pos, (group, topic, partition, offset) in enumerate(ops):
        key = offset_key(group, topic, partition)
        if offset is None:
            expected.pop((group, topic, partition), None)
            records.append((key, None, pos))
        else:
            expected[(group, topic, partition)] = offset
            records.append((key, encode_offset_value(OffsetAndMetadata(offset)), pos))
    replay = Replay().apply_all(records)
    got = {
        (group, tp[0], tp[1]): value.offset
        for group, offsets in replay.offsets.items()
        for tp, (value, _) in offsets.items()
    }
    assert got == expected


def test_a_group_with_only_open_transaction_offsets_is_loaded() -> None:
    """Kafka creates (Empty) a group whose only records are the offsets of a transaction still
    open at the end of the log: they are held for its marker, which must find the group."""
    Rec = namedtuple("Rec", "key value offset")
    replay = Replay().apply_all(
        [(offset_key("a", "t", 0), encode_offset_value(OffsetAndMetadata(1)), 0)]
    )
    open_txn = [
        Rec(offset_key("a", "t", 0), encode_offset_value(OffsetAndMetadata(5)), 1),
        Rec(offset_key("only-txn", "t", 1), encode_offset_value(OffsetAndMetadata(7)), 2),
        Rec(offset_key("tombstoned", "t", 0), None, 3),
        Rec(None, b"junk", 4),
    ]
    pending = replay.open_txn_offsets(open_txn)
    assert pending == {
        "a": {("t", 0): (OffsetAndMetadata(5), 1)},
        "only-txn": {("t", 1): (OffsetAndMetadata(7), 2)},
    }
    assert replay.group_ids([pending]) == {"a", "only-txn"}
    assert replay.group_ids() == {"a"}
