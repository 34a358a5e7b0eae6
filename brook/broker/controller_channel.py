"""How this broker reaches the active controller.

The broker's ``ControllerApi`` is ``remote_controller.ControllerRouter``: its own controller
when that is the active one, else the Kafka RPCs over the controller listener.
``call_controller`` runs one operation of the typed controller interface
(``brook.metadata.controller_api``) and returns only once this node's own image has applied
what the operation wrote, so that a client that created a topic through this broker finds it
in this broker's next Metadata answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from brook.metadata.controller_api import Committed, ControllerApi, ControllerError
from brook.protocol.errors import Errors

if TYPE_CHECKING:
    from .server import Broker

T = TypeVar("T")


async def call_controller(
    broker: Broker,
    call: Callable[[ControllerApi], Awaitable[Committed[T]]],
    timeout_ms: int | None = None,
    *,
    local: bool = False,
) -> T:
    """Run an operation on the active controller and return its result once this node's own
    image holds it, so the client's next request here sees what it just did. ``local``: the
    request came in on the controller listener, so this node's own controller decides it
    (NOT_CONTROLLER if it is not the active one) and nothing waits for the image. Raises
    ControllerError (REQUEST_TIMED_OUT when ``timeout_ms``, or request.timeout.ms, passes)."""
    if timeout_ms is None or timeout_ms <= 0:
        timeout_ms = int(broker.config["request.timeout.ms"])
    try:
        async with asyncio.timeout(timeout_ms / 1000):
            if local:
                return (await call(broker.local_controller())).value
            result = await call(broker.controller)
            await broker.loader.wait_for_offset(result.offset)
    except TimeoutError:
        raise ControllerError(
            Errors.REQUEST_TIMED_OUT, f"The controller did not answer within {timeout_ms} ms."
        ) from None
    return result.value
