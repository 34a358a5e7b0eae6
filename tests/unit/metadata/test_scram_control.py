"""AlterUserScramCredentials and DescribeUserScramCredentials decided on an image: Kafka's
per-user errors, records only for accepted users, never a password in a record."""

from __future__ import annotations

from brook.metadata.image import MetadataImage
from brook.metadata.records import (
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
    decode,
    encode,
)
from brook.metadata.scram_control import (
    ScramDeletion,
    ScramUpsertion,
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from brook.protocol.errors import Errors
from brook.security.scram import SCRAM_SHA_256, salted_password

SALT = b"0123456789abcdef"


def upsert(name: str, mech: int = 1, iterations: int = 8192) -> ScramUpsertion:
    salted = salted_password(SCRAM_SHA_256, "pw-" + name, SALT, iterations)
    return ScramUpsertion(name, mech, iterations, SALT, salted)


def applied(image: MetadataImage, records: list) -> MetadataImage:
    for i, r in enumerate(records):
        image.apply(decode(encode(r)), i)
    return image


def test_upsert_then_delete() -> None:
    image = MetadataImage()
    records, results = alter_user_scram_credentials(image, [], [upsert("alice")])
    assert [(r.user, r.error_code) for r in results] == [("alice", Errors.NONE)]
    (record,) = records
    assert isinstance(record, UserScramCredentialRecord)
    assert b"pw-alice" not in encode(record)
    applied(image, records)
    assert describe_user_scram_credentials(image, None) == [
        ("alice", Errors.NONE, None, [(1, 8192)])
    ]
    records, results = alter_user_scram_credentials(image, [ScramDeletion("alice", 1)], [])
    assert records == [RemoveUserScramCredentialRecord("alice", 1)]
    applied(image, records)
    assert image.scram == {}


def test_per_user_errors_in_kafkas_words() -> None:
    image = MetadataImage()
    records, results = alter_user_scram_credentials(
        image,
        [ScramDeletion("ghost", 1), ScramDeletion("dup", 1)],
        [
            upsert("few", iterations=100),
            upsert("many", iterations=20000),
            upsert("weird", mech=7),
            upsert(""),
            upsert("dup"),
            upsert("ok", mech=2),
        ],
    )
    by_user = {r.user: (r.error_code, r.error_message) for r in results}
    assert by_user == {
        "ghost": (
            Errors.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        "dup": (
            Errors.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
        "few": (Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "weird": (Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "ok": (Errors.NONE, None),
    }
    assert [(r.name, r.mechanism) for r in records] == [("ok", 2)]


def test_describe_errors() -> None:
    image = applied(
        MetadataImage(), alter_user_scram_credentials(MetadataImage(), [], [upsert("a")])[0]
    )
    found = describe_user_scram_credentials(image, ["a", "b", "c", "c"])
    assert [(u, code) for u, code, _, _ in found] == [
        ("a", Errors.NONE),
        ("b", Errors.RESOURCE_NOT_FOUND),
        ("c", Errors.DUPLICATE_RESOURCE),
    ]


def test_credentials_are_in_the_snapshot_and_digest() -> None:
    image = applied(
        MetadataImage(), alter_user_scram_credentials(MetadataImage(), [], [upsert("a")])[0]
    )
    rebuilt = applied(MetadataImage(), image.snapshot_records())
    assert rebuilt.scram == image.scram
    assert rebuilt.digest() == image.digest() != MetadataImage().digest()
