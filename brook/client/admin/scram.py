"""Users' SCRAM credentials through the admin client (Java's ``Admin.describeUserScramCredentials``
and ``alterUserScramCredentials``): the password is salted and hashed here (PBKDF2 with the
mechanism's hash and a random salt), so only the salted password crosses the wire, as with
Java's client. AlterUserScramCredentials goes to any broker, which forwards it to the active
controller."""

from __future__ import annotations

import os
from dataclasses import dataclass

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError
from brook.security.scram import BY_ID, MECHANISMS, MIN_ITERATIONS, salted_password

from .core import AdminCore

__all__ = [
    "ScramCredentialInfo",
    "ScramDeletion",
    "ScramUpsertion",
    "alter_user_scram_credentials",
    "describe_user_scram_credentials",
]


@dataclass(frozen=True)
class ScramCredentialInfo:
    mechanism: str  # SCRAM-SHA-256 or SCRAM-SHA-512
    iterations: int


@dataclass(frozen=True)
class ScramUpsertion:
    user: str
    mechanism: str
    password: str
    iterations: int = MIN_ITERATIONS


@dataclass(frozen=True)
class ScramDeletion:
    user: str
    mechanism: str


def _mechanism_id(name: str) -> int:
    mech = MECHANISMS.get(name.upper())
    if mech is None:
        raise KafkaError(Errors.UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {name}")
    return mech.wire_id


async def describe_user_scram_credentials(
    core: AdminCore, users: list[str] | None = None, *, timeout_ms: int | None = None
) -> dict[str, list[ScramCredentialInfo]]:
    """Each user's mechanisms and iterations (every user with a credential when ``users`` is
    None); a per-user error raises its KafkaError."""
    deadline = core.deadline(timeout_ms)

    async def attempt() -> dict[str, list[ScramCredentialInfo]]:
        conn = await core.network.any_connection()
        data = {"users": None if users is None else [{"name": u} for u in users]}
        resp = await conn.send(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, data)
        if resp.error_code:
            raise KafkaError(int(resp.error_code), resp.error_message)
        out: dict[str, list[ScramCredentialInfo]] = {}
        for r in resp.results:
            if r.error_code:
                raise KafkaError(int(r.error_code), r.error_message)
            out[r.user] = [
                ScramCredentialInfo(BY_ID[int(i.mechanism)].name, int(i.iterations))
                for i in r.credential_infos
                if int(i.mechanism) in BY_ID
            ]
        return out

    result: dict[str, list[ScramCredentialInfo]] = await core.call(attempt, deadline)
    return result


async def alter_user_scram_credentials(
    core: AdminCore,
    alterations: list[ScramUpsertion | ScramDeletion],
    *,
    timeout_ms: int | None = None,
) -> dict[str, KafkaError | None]:
    """Per user: None when every alteration of that user was applied, else its error."""
    deletions = [
        {"name": a.user, "mechanism": _mechanism_id(a.mechanism)}
        for a in alterations
        if isinstance(a, ScramDeletion)
    ]
    upsertions = []
    for a in alterations:
        if isinstance(a, ScramUpsertion):
            mech = MECHANISMS[a.mechanism.upper()] if _mechanism_id(a.mechanism) else None
            assert mech is not None
            salt = os.urandom(32)
            upsertions.append(
                {
                    "name": a.user,
                    "mechanism": mech.wire_id,
                    "iterations": a.iterations,
                    "salt": salt,
                    "salted_password": salted_password(mech, a.password, salt, a.iterations),
                }
            )
    deadline = core.deadline(timeout_ms)

    async def attempt() -> dict[str, KafkaError | None]:
        conn = await core.network.any_connection()
        resp = await conn.send(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            {"deletions": deletions, "upsertions": upsertions},
        )
        return {
            r.user: KafkaError(int(r.error_code), r.error_message) if r.error_code else None
            for r in resp.results
        }

    result: dict[str, KafkaError | None] = await core.call(attempt, deadline)
    return result
