"""Offset lookups for the consumer through ListOffsets on each partition's leader: resetting
positions (auto.offset.reset, seek_to_beginning / seek_to_end) in the background, and the
blocking beginning_offsets / end_offsets / offsets_for_times calls, retried within a deadline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from brook.protocol.errors import Errors, KafkaError

from ..admin.types import ListedOffset
from ..cluster import TopicPartition
from ..list_offsets import ISOLATION_LEVELS, list_offsets
from ..network import NetworkClient, backoff_ms
from .subscription import SubscriptionState

__all__ = ["OffsetLookup"]

log = logging.getLogger(__name__)


class OffsetLookup:
    """ListOffsets for one consumer. ``wake`` is called when a reset has set positions."""

    def __init__(
        self,
        config: Mapping[str, Any],
        network: NetworkClient,
        subscriptions: SubscriptionState,
        wake: Callable[[], None],
    ) -> None:
        self._config = config
        self._network = network
        self._subscriptions = subscriptions
        self._wake = wake
        self._level = ISOLATION_LEVELS[config["isolation.level"]]
        self._reset_task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None

    def _backoff(self, attempt: int) -> float:
        cfg = self._config
        return backoff_ms(cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"], attempt) / 1000

    async def _ensure_metadata(self, topics: Iterable[str]) -> None:
        topics = set(topics)
        self._network.add_topics(topics)
        cluster = self._network.cluster
        if any(t not in cluster.topics and t not in cluster.topic_errors for t in topics):
            await self._network.fetch_metadata(sorted(topics), allow_auto_topic_creation=False)

    async def _round(
        self, specs: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, ListedOffset | KafkaError]:
        """One attempt: a request per leader, every partition's result or error."""
        await self._ensure_metadata(tp.topic for tp in specs)
        return await list_offsets(
            self._network,
            specs,
            isolation_level=self._level,
            timeout_ms=int(self._config["request.timeout.ms"]),
            leader_epochs=True,
        )

    # -- blocking lookups ------------------------------------------------------------------

    async def lookup(
        self, specs: Mapping[TopicPartition, int], timeout_ms: int
    ) -> dict[TopicPartition, ListedOffset]:
        """Offsets for ``specs`` (tp -> timestamp or OffsetSpec), retrying retriable errors
        until ``timeout_ms``; an unknown topic or a lasting failure raises KafkaError."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        pending = dict(specs)
        results: dict[TopicPartition, ListedOffset] = {}
        attempt = 0
        while pending:
            try:
                outcome = await asyncio.wait_for(
                    self._round(pending), max(0.001, deadline - loop.time())
                )
            except TimeoutError:
                raise KafkaError(
                    Errors.REQUEST_TIMED_OUT,
                    f"offsets of {_names(pending)} not found within {timeout_ms} ms",
                ) from None
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                outcome = dict.fromkeys(pending, exc)
            retry: dict[TopicPartition, int] = {}
            last: KafkaError | None = None
            for tp, value in outcome.items():
                if isinstance(value, ListedOffset):
                    results[tp] = value
                elif value.retriable and value.code != Errors.UNKNOWN_TOPIC_OR_PARTITION:
                    retry[tp] = pending[tp]
                    last = value
                else:
                    raise value
            pending = retry
            if pending:
                self._network.cluster.request_update()
                wait = self._backoff(attempt)
                attempt += 1
                if loop.time() + wait >= deadline:
                    raise KafkaError(
                        last.code if last else Errors.REQUEST_TIMED_OUT,
                        f"offsets of {_names(pending)} not found within {timeout_ms} ms"
                        + (f": {last}" if last else ""),
                    )
                await asyncio.sleep(wait)
        return results

    # -- position resets -------------------------------------------------------------------

    def maybe_reset_positions(self) -> None:
        """Start the background lookup for partitions waiting for a reset (if not running);
        raises the error a previous lookup ended with."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if self._reset_task is not None and not self._reset_task.done():
            return
        if self._subscriptions.awaiting_reset():
            self._reset_task = asyncio.get_running_loop().create_task(self._reset())

    async def _reset(self) -> None:
        attempt = 0
        while True:
            pending = self._subscriptions.awaiting_reset()
            if not pending:
                return
            try:
                outcome = await self._round(pending)
            except KafkaError as exc:
                outcome = dict.fromkeys(pending, exc)
            except Exception as exc:
                self._error = exc
                return
            progress = False
            for tp, value in outcome.items():
                if isinstance(value, ListedOffset):
                    if value.offset < 0:
                        continue  # no such offset (only for timestamp lookups)
                    if self._subscriptions.complete_reset(
                        tp, pending[tp], value.offset, value.leader_epoch
                    ):
                        progress = True
                elif not value.retriable:
                    self._error = value
                    return
            if progress:
                self._wake()
            if self._subscriptions.awaiting_reset():
                self._network.cluster.request_update()
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1

    async def close(self) -> None:
        task = self._reset_task
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except BaseException:
                pass


def _names(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(tps))
