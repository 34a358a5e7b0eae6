"""The API table: each Kafka API's handler, registered once with the versions it serves.

ApiVersions is answered from this table, so the broker never advertises a version it cannot
serve. A handler receives the request decoded by kio (or the raw body when registered with
``raw=True``) and returns a dict (built into that version's response class), ready body bytes
or a list of body parts, None (no response: acks=0), or an awaitable of one of those.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brook.protocol.api import ApiKey

if TYPE_CHECKING:
    from .network import Connection
    from .server import Broker

Response = dict[str, Any] | bytes | list[bytes] | None
HandlerFn = Callable[["RequestContext", Any], Response | Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    api_key: ApiKey
    min_version: int
    max_version: int
    advertised_min: int
    fn: HandlerFn
    raw: bool


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    connection: Connection
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    listener: str


HANDLERS: dict[int, HandlerSpec] = {}


def handler(
    api_key: ApiKey,
    versions: tuple[int, int],
    *,
    advertised_min: int | None = None,
    raw: bool = False,
) -> Callable[[HandlerFn], HandlerFn]:
    """Register ``fn`` as the handler of ``api_key`` for ``versions`` (inclusive).

    ``advertised_min`` lets ApiVersions announce a lower minimum than is served (Kafka does
    this for Produce so that old librdkafka keeps compression on); requests below
    ``versions[0]`` still close the connection.
    """

    def register(fn: HandlerFn) -> HandlerFn:
        if int(api_key) in HANDLERS:
            raise RuntimeError(f"a handler for {api_key.name} is already registered")
        low, high = versions
        HANDLERS[int(api_key)] = HandlerSpec(
            api_key, low, high, low if advertised_min is None else advertised_min, fn, raw
        )
        return fn

    return register
