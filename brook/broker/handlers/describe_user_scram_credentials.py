"""DescribeUserScramCredentials (50), v0: each user's SCRAM mechanisms and iterations from
this node's metadata image (never salts or keys); every user with a credential when none is
named; RESOURCE_NOT_FOUND and DUPLICATE_RESOURCE per user, as Kafka answers."""

from __future__ import annotations

from typing import Any

from brook.metadata.scram_control import describe_user_scram_credentials
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import RequestContext, handler


@handler(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, (0, 0))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    users = None if request.users is None else [u.name for u in request.users]
    found = describe_user_scram_credentials(ctx.broker.image, users)
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "error_message": None,
        "results": [
            {
                "user": user,
                "error_code": code,
                "error_message": message,
                "credential_infos": [
                    {"mechanism": mech, "iterations": iterations} for mech, iterations in infos
                ],
            }
            for user, code, message, infos in found
        ],
    }
