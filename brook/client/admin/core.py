"""The admin client's plumbing, shared by every domain module: the network client, deadlines,
retries with backoff (whole calls and item by item), and where a request goes (the controller
Kafka's clients are told of, or the least loaded broker).

It knows nothing of topics, configs or groups: the domain modules build their requests, parse
their responses and say which errors an item may be retried on; this module runs the loop.
A call that fails as a whole raises its KafkaError; per-item failures raise one AdminError
(see :mod:`.types`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from brook.protocol.errors import Errors, KafkaError

from ..config import parse_admin_config
from ..connection import NetworkError, RequestTimeoutError, UnsupportedVersionError
from ..network import NetworkClient, backoff_ms
from .types import AdminError

__all__ = [
    "AdminCore",
    "Outcome",
    "gather",
    "item_error",
    "needs_refresh",
    "retry_controller",
    "retry_transport",
]

K = TypeVar("K")
R = TypeVar("R")
Outcome = dict[Any, Any]  # item -> result or KafkaError


def item_error(code: int, what: str, message: str | None = None) -> KafkaError:
    """One item's error, its text naming the item (``topic 'x': message``)."""
    return KafkaError(code, f"{what}: {message}" if message else what)


def retry_controller(exc: KafkaError) -> bool:
    """Requests to the controller are retried when it moved (NOT_CONTROLLER)."""
    return exc.code == Errors.NOT_CONTROLLER


def needs_refresh(exc: KafkaError) -> bool:
    """A lost connection may mean a broker or the controller moved: look again before
    retrying."""
    return exc.invalid_metadata or retry_controller(exc) or isinstance(exc, NetworkError)


def retry_transport(exc: KafkaError) -> bool:
    """Only a lost connection or a timeout: the broker's own answer is final."""
    return isinstance(exc, NetworkError | RequestTimeoutError)


class AdminCore:
    """One admin client's connections and retry policy (``default.api.timeout.ms``,
    ``retries``, ``retry.backoff.ms`` / ``retry.backoff.max.ms``, ``request.timeout.ms``)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = parse_admin_config(config)
        self.network = NetworkClient(self.config, kind="adminclient", all_topics=True)
        self._started = False

    async def start(self) -> None:
        """Connect to the cluster (raises if no bootstrap address answers)."""
        if not self._started:
            await self.network.start()
            self._started = True

    async def close(self) -> None:
        await self.network.close()

    # -- time ------------------------------------------------------------------------------

    def deadline(self, timeout_ms: int | None) -> float:
        """The loop time by which a call ends: its ``timeout_ms`` or default.api.timeout.ms."""
        total = self.config["default.api.timeout.ms"] if timeout_ms is None else timeout_ms
        return asyncio.get_running_loop().time() + total / 1000

    def op_timeout(self, deadline: float) -> int:
        """The timeout handed to the broker for an operation: what is left, at most a request."""
        left = (deadline - asyncio.get_running_loop().time()) * 1000
        return max(0, int(min(left, self.config["request.timeout.ms"])))

    async def backoff(self, attempt: int, deadline: float, refresh: bool) -> bool:
        """Sleep before attempt ``attempt + 1``; False when the deadline or retries ran out."""
        loop = asyncio.get_running_loop()
        if attempt >= self.config["retries"] or loop.time() >= deadline:
            return False
        if refresh:
            try:
                await self.network.refresh_metadata()
            except KafkaError:
                pass
        wait = (
            backoff_ms(
                self.config["retry.backoff.ms"], self.config["retry.backoff.max.ms"], attempt
            )
            / 1000
        )
        await asyncio.sleep(max(0.0, min(wait, deadline - loop.time())))
        return loop.time() < deadline

    # -- retry loops -----------------------------------------------------------------------

    async def per_item(
        self,
        items: Mapping[K, Any],
        attempt: Callable[[dict[K, Any], float], Awaitable[Outcome]],
        deadline: float,
        retry_item: Callable[[KafkaError], bool],
    ) -> dict[K, Any]:
        """Run ``attempt`` on the items still pending until all succeed or fail for good;
        AdminError names those that failed."""
        pending: dict[K, Any] = dict(items)
        results: dict[K, Any] = {}
        errors: dict[K, KafkaError] = {}
        tries = 0
        while pending:
            try:
                outcome = await attempt(pending, deadline)
            except KafkaError as exc:
                if exc.retriable and await self.backoff(tries, deadline, needs_refresh(exc)):
                    tries += 1
                    continue
                raise
            retry: dict[K, Any] = {}
            refresh = False
            for key, value in outcome.items():
                if isinstance(value, KafkaError):
                    if retry_item(value):
                        retry[key] = pending[key]
                        refresh = refresh or needs_refresh(value)
                    else:
                        errors[key] = value
                else:
                    results[key] = value
            pending = retry
            if pending:
                if not await self.backoff(tries, deadline, refresh):
                    for key in pending:
                        errors[key] = outcome[key]
                    break
                tries += 1
        if errors:
            raise AdminError(errors, results)
        return results

    async def call(self, attempt: Callable[[], Awaitable[R]], deadline: float) -> R:
        """Retry a whole-request call on retriable errors (and NOT_CONTROLLER)."""
        tries = 0
        while True:
            try:
                return await attempt()
            except KafkaError as exc:
                retry = exc.retriable or retry_controller(exc)
                if retry and await self.backoff(tries, deadline, needs_refresh(exc)):
                    tries += 1
                    continue
                raise

    # -- where requests go -----------------------------------------------------------------

    def controller(self) -> int | None:
        """The controller the cluster's metadata names, if it is a known broker."""
        cluster = self.network.cluster
        if cluster.controller_id >= 0 and cluster.controller_id in cluster.brokers:
            return cluster.controller_id
        return None

    async def send_controller(self, api_key: int, data: Mapping[str, Any], **kw: Any) -> Any:
        """To the controller; to the least loaded broker while none is known (it forwards)."""
        controller = self.controller()
        if controller is None:
            return await self.network.send_any(api_key, data, **kw)
        return await self.network.send_to(controller, api_key, data, **kw)

    async def send_any(self, api_key: int, data: Mapping[str, Any], **kw: Any) -> Any:
        """To the least loaded broker."""
        return await self.network.send_any(api_key, data, **kw)

    async def send_to(self, node_id: int, api_key: int, data: Mapping[str, Any], **kw: Any) -> Any:
        return await self.network.send_to(node_id, api_key, data, **kw)


async def gather(
    one: Callable[[Any], Awaitable[Outcome]],
    items: Iterable[Any],
    describe: Callable[[Any], str] = repr,
) -> Outcome:
    """One request per item, concurrently; a request-level failure becomes that item's error
    (an item missing from its answer too, named by ``describe``)."""
    keys = list(items)
    answers = await asyncio.gather(*(one(k) for k in keys), return_exceptions=True)
    out: Outcome = {}
    for key, answer in zip(keys, answers, strict=True):
        if isinstance(answer, UnsupportedVersionError):
            raise answer
        if isinstance(answer, KafkaError):
            out[key] = answer
        elif isinstance(answer, BaseException):
            raise answer
        else:
            out.update(answer)
            out.setdefault(
                key,
                item_error(Errors.UNKNOWN_SERVER_ERROR, describe(key), "missing from the response"),
            )
    return out
