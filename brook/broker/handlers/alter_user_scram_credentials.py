"""AlterUserScramCredentials (51), v0: add, replace or delete users' SCRAM credentials
(SCRAM-SHA-256 = 1, SCRAM-SHA-512 = 2), decided by the active controller with Kafka's per-user
errors (metadata/scram_control.py) and kept in the metadata log as salt, stored key, server
key and iterations. Brokers forward it to the active controller, as Kafka's do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from brook.metadata.controller_api import ControllerError
from brook.metadata.scram_control import ScramDeletion, ScramUpsertion, UserResult
from brook.protocol.api import ApiKey

from ..controller_channel import call_controller
from ..registry import BROKER, CONTROLLER, RequestContext, handler

REMOTE_VERSION = 0
_TIMEOUT_MS = 30_000


def request_of(deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]) -> dict:
    return {
        "deletions": [{"name": d.name, "mechanism": d.mechanism} for d in deletions],
        "upsertions": [
            {
                "name": u.name,
                "mechanism": u.mechanism,
                "iterations": u.iterations,
                "salt": u.salt,
                "salted_password": u.salted_password,
            }
            for u in upsertions
        ],
    }


def results_of(response: Any) -> list[UserResult]:
    return [UserResult(r.user, r.error_code, r.error_message) for r in response.results]


@handler(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, (0, 0), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    deletions = [ScramDeletion(d.name, int(d.mechanism)) for d in request.deletions]
    upsertions = [
        ScramUpsertion(
            u.name, int(u.mechanism), int(u.iterations), bytes(u.salt), bytes(u.salted_password)
        )
        for u in request.upsertions
    ]
    try:
        results = await call_controller(
            ctx.broker,
            lambda c: c.alter_user_scram_credentials(deletions, upsertions),
            _TIMEOUT_MS,
            local=ctx.on_controller_listener,
        )
    except ControllerError as exc:
        users = dict.fromkeys(i.name for i in [*deletions, *upsertions])
        results = [UserResult(u, exc.error_code, exc.message) for u in users]
    return {
        "throttle_time": 0,
        "results": [
            {"user": r.user, "error_code": r.error_code, "error_message": r.error_message}
            for r in results
        ],
    }
