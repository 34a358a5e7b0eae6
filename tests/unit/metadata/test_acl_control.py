"""The controller's ACL decisions, and ACLs through the metadata log's records and image."""

from __future__ import annotations

import uuid

from brook.metadata.acl_control import create_acls, delete_acls
from brook.metadata.image import MetadataImage
from brook.metadata.records import (
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
    decode,
    encode,
)
from brook.protocol.errors import Errors
from brook.security.acl import AclBindingFilter, binding_of

READ_T = binding_of(2, "t", 3, "User:alice", "*", 3, 3)
DENY_P = binding_of(2, "p-", 4, "User:bob", "10.0.0.1", 4, 2)


def apply(image: MetadataImage, records: list) -> None:
    for record in records:
        image.apply(decode(encode(record)), image.offset + 1)


def test_records_have_kafkas_api_keys_and_round_trip() -> None:
    add = AccessControlEntryRecord(uuid.uuid4(), 2, "t", 3, "User:alice", "*", 3, 3)
    remove = RemoveAccessControlEntryRecord(add.id)
    assert (add.API_KEY, remove.API_KEY) == (6, 7)
    assert decode(encode(add)) == add and decode(encode(remove)) == remove


def test_create_writes_one_record_per_new_acl_and_refuses_malformed_ones() -> None:
    image = MetadataImage()
    bad = binding_of(99, "t", 3, "User:a", "*", 3, 3)
    records, results = create_acls(image, [READ_T, bad, READ_T, DENY_P])
    assert [r.error_code for r in results] == [0, Errors.INVALID_REQUEST, 0, 0]
    assert len(records) == 2
    apply(image, records)
    assert set(image.acls.values()) == {READ_T, DENY_P}
    again, results = create_acls(image, [READ_T])
    assert again == [] and results[0].error_code == 0


def test_delete_removes_what_each_filter_matches_once() -> None:
    image = MetadataImage()
    apply(image, create_acls(image, [READ_T, DENY_P])[0])
    everything = AclBindingFilter.of(1, None, 1, None, None, 1, 1)
    alice = AclBindingFilter.of(1, None, 1, "User:alice", None, 1, 1)
    broken = AclBindingFilter.of(1, None, 0, None, None, 1, 1)
    records, results = delete_acls(image, [alice, everything, broken])
    assert [r.removed for r in results[:2]] == [[READ_T], [DENY_P]]
    assert results[2].error_code == Errors.INVALID_REQUEST
    apply(image, records)
    assert image.acls == {}


def test_the_image_snapshot_carries_the_acls() -> None:
    image = MetadataImage()
    apply(image, create_acls(image, [READ_T, DENY_P])[0])
    rebuilt = MetadataImage()
    apply(rebuilt, image.snapshot_records())
    assert rebuilt.acls == image.acls and rebuilt.digest() == image.digest()
    copy = image.copy()
    assert copy.acls == image.acls and copy.acls is not image.acls
