"""SaslHandshake (17), v0-1: the mechanism a client wants, answered with the listener's
enabled mechanisms. v1 is followed by SaslAuthenticate requests, v0 by raw SASL tokens
(the connection reads them, see network.py). On a listener without SASL, or once
authenticated, ILLEGAL_SASL_STATE (Kafka's KafkaApis answer); an unknown mechanism gets
UNSUPPORTED_SASL_MECHANISM and the connection closes after the answer."""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import BROKER, CONTROLLER, RequestContext, handler


@handler(ApiKey.SASL_HANDSHAKE, (0, 1), scopes=(BROKER, CONTROLLER))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    auth = ctx.connection.sasl
    if auth is None or auth.complete:
        return {"error_code": Errors.ILLEGAL_SASL_STATE, "mechanisms": ()}
    answer = auth.handshake(request.mechanism, ctx.api_version)
    ctx.connection.sasl_answered(answer)
    return {"error_code": answer.error, "mechanisms": answer.mechanisms}
