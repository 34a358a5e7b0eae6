"""AlterUserScramCredentials decided as Kafka's controller (ScramControlManager) decides it:
per user, the first error among its alterations, in Kafka's words; records only for the users
whose every alteration is accepted. Pure: image in, records and results out.

Upsertions carry the salt and the salted password (the client salts it); the controller keeps
the stored and server keys derived from it, never the password.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from brook.protocol.errors import Errors
from brook.security.scram import BY_ID, MAX_ITERATIONS, MIN_ITERATIONS, credential_from_salted

from .image import MetadataImage
from .records import MetadataRecord, RemoveUserScramCredentialRecord, UserScramCredentialRecord


@dataclass(frozen=True, slots=True)
class ScramDeletion:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True, slots=True)
class UserResult:
    user: str
    error_code: int = Errors.NONE
    error_message: str | None = None


def _check(image: MetadataImage, item: ScramDeletion | ScramUpsertion) -> tuple[int, str] | None:
    if not item.name:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    mech = BY_ID.get(item.mechanism)
    if mech is None:
        return Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if isinstance(item, ScramDeletion):
        if (item.name, item.mechanism) not in image.scram:
            return (
                Errors.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        return None
    if item.iterations < MIN_ITERATIONS:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if item.iterations > MAX_ITERATIONS:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not item.salt or not item.salted_password:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    return None


def alter_user_scram_credentials(
    image: MetadataImage,
    deletions: Sequence[ScramDeletion],
    upsertions: Sequence[ScramUpsertion],
) -> tuple[list[MetadataRecord], list[UserResult]]:
    items: list[ScramDeletion | ScramUpsertion] = [*deletions, *upsertions]
    twice = Counter((i.name, i.mechanism) for i in items)
    errors: dict[str, tuple[int, str]] = {}
    for item in items:
        if item.name in errors:
            continue
        if twice[(item.name, item.mechanism)] > 1:
            errors[item.name] = (
                Errors.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
            continue
        problem = _check(image, item)
        if problem is not None:
            errors[item.name] = problem
    records: list[MetadataRecord] = []
    for item in items:
        if item.name in errors:
            continue
        if isinstance(item, ScramDeletion):
            records.append(RemoveUserScramCredentialRecord(item.name, item.mechanism))
        else:
            cred = credential_from_salted(
                BY_ID[item.mechanism], item.salted_password, item.salt, item.iterations
            )
            records.append(
                UserScramCredentialRecord(
                    item.name,
                    item.mechanism,
                    cred.salt,
                    cred.stored_key,
                    cred.server_key,
                    cred.iterations,
                )
            )
    users = list(dict.fromkeys(i.name for i in items))
    results = [UserResult(u, *errors[u]) if u in errors else UserResult(u) for u in users]
    return records, results


def describe_user_scram_credentials(
    image: MetadataImage, users: Sequence[str] | None
) -> list[tuple[str, int, str | None, list[tuple[int, int]]]]:
    """(user, error, message, [(mechanism, iterations)]) per user asked (every user with a
    credential when ``users`` is None or empty), as Kafka answers DescribeUserScramCredentials."""
    by_user: dict[str, list[tuple[int, int]]] = {}
    for (name, mech), record in sorted(image.scram.items()):
        by_user.setdefault(name, []).append((mech, record.iterations))
    if not users:
        return [(u, Errors.NONE, None, infos) for u, infos in by_user.items()]
    counts = Counter(users)
    out: list[tuple[str, int, str | None, list[tuple[int, int]]]] = []
    for user in dict.fromkeys(users):
        if counts[user] > 1:
            out.append(
                (
                    user,
                    Errors.DUPLICATE_RESOURCE,
                    "Cannot describe SCRAM credentials for the same user twice in a single request",
                    [],
                )
            )
        elif user not in by_user:
            out.append(
                (
                    user,
                    Errors.RESOURCE_NOT_FOUND,
                    "Attempt to describe a user credential that does not exist",
                    [],
                )
            )
        else:
            out.append((user, Errors.NONE, None, by_user[user]))
    return out
