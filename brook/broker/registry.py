"""The API tables: each Kafka API's handler, registered once with the versions it serves.

There are two tables, as Kafka has KafkaApis and ControllerApis: ``HANDLERS`` for broker
listeners and ``CONTROLLER_HANDLERS`` for the controller listener; a handler names the
listener kinds it serves (``scopes``). ApiVersions is answered from the table of the listener
it arrives on, so a node never advertises a version it cannot serve there.

A handler receives the request decoded by kio (or the raw body when registered with
``raw=True``) and returns a dict (built into that version's response class), ready body bytes
or a list of body parts, None (no response: acks=0), or an awaitable of one of those.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brook.protocol.api import ApiKey
from brook.security.principal import KafkaPrincipal

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
    scope: str = "broker"
    # Set by Fetch: whether a follower sent it (RequestMetrics' FetchFollower / FetchConsumer)
    fetch_from_follower: bool | None = None

    @property
    def on_controller_listener(self) -> bool:
        return self.scope == CONTROLLER

    @property
    def principal(self) -> KafkaPrincipal:
        return self.connection.principal


BROKER = "broker"
CONTROLLER = "controller"
HANDLERS: dict[int, HandlerSpec] = {}
CONTROLLER_HANDLERS: dict[int, HandlerSpec] = {}
TABLES = {BROKER: HANDLERS, CONTROLLER: CONTROLLER_HANDLERS}


def handler(
    api_key: ApiKey,
    versions: tuple[int, int],
    *,
    advertised_min: int | None = None,
    raw: bool = False,
    scopes: tuple[str, ...] = (BROKER,),
) -> Callable[[HandlerFn], HandlerFn]:
    """Register ``fn`` as the handler of ``api_key`` for ``versions`` (inclusive).

    ``advertised_min`` lets ApiVersions announce a lower minimum than is served (Kafka does
    this for Produce so that old librdkafka keeps compression on); requests below
    ``versions[0]`` still close the connection.
    """

    def register(fn: HandlerFn) -> HandlerFn:
        low, high = versions
        spec = HandlerSpec(
            api_key, low, high, low if advertised_min is None else advertised_min, fn, raw
        )
        for scope in scopes:
            table = TABLES[scope]
            if int(api_key) in table:
                raise RuntimeError(f"a {scope} handler for {api_key.name} is already registered")
            table[int(api_key)] = spec
        return fn

    return register
