"""This broker's registration and heartbeats with the active controller (KIP-631; Kafka's
BrokerLifecycleManager).

A starting broker registers with a new incarnation id and gets its broker epoch; it starts
fenced. It heartbeats every few milliseconds until the controller says it has caught up with
the metadata log and unfences it, then every ``broker.heartbeat.interval.ms``. A broker the
controller fenced (a pause longer than ``broker.session.timeout.ms``) is unfenced again by its
next heartbeat once it has caught up. On SIGTERM (``controlled.shutdown.enable``) it asks to
shut down and keeps heartbeating until the controller has moved its leaderships away and says
it may stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence

from brook.metadata.controller_api import (
    BrokerHeartbeat,
    BrokerRegistration,
    ControllerApi,
    ControllerError,
    HeartbeatReply,
)
from brook.metadata.records import BrokerFeature, Endpoint
from brook.protocol.errors import Errors

log = logging.getLogger(__name__)

_STARTING_INTERVAL_S = 0.01
_SHUTDOWN_INTERVAL_S = 0.05
_RETRY_BACKOFF_S = 0.1
_RETRY_LOG_INTERVAL_S = 5.0  # how often a registration still being refused is logged


class RegistrationError(RuntimeError):
    """The broker could not register in time (or was refused for good)."""


class BrokerLifecycleManager:
    def __init__(
        self,
        node_id: int,
        cluster_id: str,
        controller: ControllerApi,
        metadata_offset: Callable[[], int],
        *,
        heartbeat_interval_ms: int,
        registration_timeout_ms: int,
    ) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.controller = controller
        self.metadata_offset = metadata_offset
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.registration_timeout_s = registration_timeout_ms / 1000
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self.fenced = True
        self.caught_up = False
        self._registration: BrokerRegistration | None = None
        self._unfenced = asyncio.Event()
        self._caught_up = asyncio.Event()
        self._ready = False
        self._may_shut_down = asyncio.Event()
        self._want_shutdown = False
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    async def start(
        self,
        endpoints: Sequence[Endpoint],
        rack: str | None,
        features: Sequence[BrokerFeature] = (),
    ) -> None:
        """Register (retrying until ``initial.broker.registration.timeout.ms``), then keep
        heartbeating in the background."""
        self._registration = BrokerRegistration(
            self.node_id,
            self.cluster_id,
            self.incarnation_id,
            tuple(endpoints),
            rack,
            tuple(features),
        )
        await self._register(self.registration_timeout_s)
        self._task = asyncio.get_running_loop().create_task(self._heartbeats())

    async def _register(self, timeout_s: float) -> None:
        assert self._registration is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        last: Exception | None = None
        logged = loop.time()
        while loop.time() < deadline:
            try:
                result = await self.controller.register_broker(self._registration)
            except ControllerError as exc:
                if exc.error_code in (Errors.INCONSISTENT_CLUSTER_ID,):
                    raise RegistrationError(f"registration refused: {exc}") from exc
                last = exc
            except (TimeoutError, OSError) as exc:
                last = exc
            else:
                self.broker_epoch = result.value
                log.info(
                    "broker %d registered with broker epoch %d", self.node_id, self.broker_epoch
                )
                return
            if loop.time() - logged >= _RETRY_LOG_INTERVAL_S:
                logged = loop.time()
                log.info("broker %d is not registered yet, retrying: %s", self.node_id, last)
            await asyncio.sleep(_RETRY_BACKOFF_S)
        raise RegistrationError(
            f"broker {self.node_id} could not register with the controller within "
            f"{timeout_s * 1000:.0f} ms (initial.broker.registration.timeout.ms): {last}"
        )

    async def wait_caught_up(self) -> None:
        """Until the controller says this broker's metadata has reached its registration."""
        await self._caught_up.wait()

    def ready(self) -> None:
        """The broker can serve (its logs are loaded): stop asking to stay fenced."""
        self._ready = True
        self._wake.set()

    async def wait_unfenced(self) -> None:
        await self._unfenced.wait()

    async def _heartbeats(self) -> None:
        while True:
            try:
                reply = await self.controller.broker_heartbeat(
                    BrokerHeartbeat(
                        self.node_id,
                        self.broker_epoch,
                        self.metadata_offset(),
                        want_fence=not self._ready,
                        want_shutdown=self._want_shutdown,
                    )
                )
            except ControllerError as exc:
                if exc.error_code == Errors.STALE_BROKER_EPOCH:
                    log.warning("broker epoch %d is stale; registering again", self.broker_epoch)
                    with contextlib.suppress(RegistrationError):
                        await self._register(self.registration_timeout_s)
                await self._sleep(_RETRY_BACKOFF_S)
                continue
            except (TimeoutError, OSError):
                await self._sleep(_RETRY_BACKOFF_S)
                continue
            self._on_reply(reply)
            if reply.should_shutdown and self._want_shutdown:
                self._may_shut_down.set()
                return
            if self._want_shutdown:
                interval = _SHUTDOWN_INTERVAL_S
            elif not reply.is_caught_up or (reply.is_fenced and self._ready):
                interval = _STARTING_INTERVAL_S
            elif not self._ready:
                interval = _STARTING_INTERVAL_S * 10
            else:
                interval = self.heartbeat_interval_s
            await self._sleep(interval)

    def _on_reply(self, reply: HeartbeatReply) -> None:
        self.caught_up = reply.is_caught_up
        if reply.is_caught_up:
            self._caught_up.set()
        if reply.is_fenced != self.fenced:
            log.info("broker %d is %s", self.node_id, "fenced" if reply.is_fenced else "unfenced")
        self.fenced = reply.is_fenced
        if reply.is_fenced:
            self._unfenced.clear()
        else:
            self._unfenced.set()

    async def _sleep(self, seconds: float) -> None:
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask to shut down and wait until the controller lets this broker go (its
        leaderships moved). Returns False if that did not happen within ``timeout_s``."""
        if self._task is None or self._task.done():
            return False
        self._want_shutdown = True
        self._wake.set()
        try:
            await asyncio.wait_for(self._may_shut_down.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
