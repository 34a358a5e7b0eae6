"""SaslAuthenticate (36), v0-2: one SASL token of the mechanism chosen by SaslHandshake v1,
answered with the server's challenge; once the mechanism is satisfied the connection's
principal is ``User:<name>``. A failure is SASL_AUTHENTICATION_FAILED with Kafka's message,
and the connection closes after the answer. Before a handshake, on a listener without SASL,
or once authenticated: ILLEGAL_SASL_STATE. v1+ carries the session lifetime: 0, as Brook
does not re-authenticate (connections.max.reauth.ms)."""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import BROKER, CONTROLLER, RequestContext, handler


@handler(ApiKey.SASL_AUTHENTICATE, (0, 2), scopes=(BROKER, CONTROLLER))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    auth = ctx.connection.sasl
    if auth is None or auth.complete:
        return {
            "error_code": Errors.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful authentication"
            if auth is not None
            else "SaslAuthenticate on a listener without SASL",
            "auth_bytes": b"",
            "session_lifetime": 0,
        }
    answer = auth.authenticate(bytes(request.auth_bytes))
    ctx.connection.sasl_answered(answer)
    return {
        "error_code": answer.error,
        "error_message": answer.message,
        "auth_bytes": answer.token,
        "session_lifetime": 0,
    }
