"""What send() hands back: per-batch delivery results and the light per-record futures on them.

One :class:`ProduceResult` per batch (Java's ProduceRequestResult) is completed once, from the
sender; each record's :class:`RecordFuture` only points at it with its offset in the batch, so
completing a batch of a thousand records costs one event, not a thousand futures.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Generator
from typing import Any, NamedTuple

__all__ = ["DeliveryCallback", "ProduceResult", "RecordFuture", "RecordMetadata"]

log = logging.getLogger(__name__)

DeliveryCallback = Callable[["RecordMetadata", BaseException | None], Any]


class RecordMetadata(NamedTuple):
    """Where a record landed (Java's RecordMetadata); offset -1 when unknown (acks=0, errors).

    Sizes are the serialized key and value lengths, -1 for null.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int


class ProduceResult:
    """A batch's outcome: base offset and log-append time, or the error, set once."""

    __slots__ = (
        "_callbacks",
        "_done",
        "_event",
        "_lock",
        "base_offset",
        "error",
        "log_append_time",
        "partition",
        "record_errors",
        "topic",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        # KIP-467: when the broker named the records that made it refuse the batch, each
        # record's own error (by its index in the batch); ``error`` is then the batch's.
        self.record_errors: Callable[[int], BaseException] | None = None
        self._done = False
        self._event = threading.Event()
        self._lock = threading.Lock()
        # (future, callback) pairs; callback(future) or, for on_delivery, (metadata, error).
        self._callbacks: list[tuple[RecordFuture, Callable[..., Any], bool]] | None = []

    @property
    def done(self) -> bool:
        return self._done

    def add_callback(
        self, future: RecordFuture, callback: Callable[..., Any], delivery: bool
    ) -> None:
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.append((future, callback, delivery))
                return
        _invoke(future, callback, delivery)

    def complete(
        self,
        base_offset: int,
        log_append_time: int,
        error: BaseException | None,
        record_errors: Callable[[int], BaseException] | None = None,
    ) -> bool:
        """Set the outcome and run the callbacks; False if it was already set.
        ``record_errors`` gives a failed batch's records errors of their own (Java's
        ProducerBatch.completeExceptionally with record exceptions)."""
        with self._lock:
            if self._done:
                return False
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            self.record_errors = record_errors
            self._done = True
            callbacks, self._callbacks = self._callbacks, None
        self._event.set()
        if callbacks:
            topic = self.topic
            partition = self.partition
            ok = error is None and base_offset >= 0
            for future, callback, delivery in callbacks:
                try:
                    if delivery:
                        # RecordFuture._metadata inlined: this loop runs once per record.
                        offset = base_offset + future._relative_offset if ok else -1
                        timestamp = log_append_time if log_append_time >= 0 else future.timestamp
                        callback(
                            RecordMetadata(
                                topic,
                                partition,
                                offset,
                                timestamp,
                                future.key_size,
                                future.value_size,
                            ),
                            error if record_errors is None else future.error,
                        )
                    else:
                        callback(future)
                except Exception:
                    log.exception("producer callback %r raised", callback)
        return True

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    async def wait_async(self, future: RecordFuture | None = None) -> None:
        """Wait on the running loop (the batch may complete on another thread's loop)."""
        if self._done:
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        owner = threading.get_ident()

        def wake(_: object) -> None:
            if threading.get_ident() == owner:
                _set_if_pending(waiter)
            else:
                loop.call_soon_threadsafe(_set_if_pending, waiter)

        self.add_callback(future or RecordFuture(self, 0, 0, -1, -1), wake, False)
        await waiter


def _invoke(future: RecordFuture, callback: Callable[..., Any], delivery: bool) -> None:
    try:
        if delivery:
            callback(future._metadata(), future.error)
        else:
            callback(future)
    except Exception:
        log.exception("producer callback %r raised", callback)


class RecordFuture:
    """The delivery of one record: ``result(timeout)`` blocks, ``await`` suspends, callbacks run
    on the thread that completes the batch (the sender's loop). Raises the batch's error."""

    __slots__ = ("_relative_offset", "_result", "key_size", "timestamp", "value_size")

    def __init__(
        self,
        result: ProduceResult,
        relative_offset: int,
        timestamp: int,
        key_size: int,
        value_size: int,
    ) -> None:
        self._result = result
        self._relative_offset = relative_offset
        self.timestamp = timestamp
        self.key_size = key_size
        self.value_size = value_size

    def __repr__(self) -> str:
        state = (
            "pending"
            if not self._result.done
            else (f"failed {self._result.error!r}" if self._result.error else "done")
        )
        return f"<RecordFuture {self._result.topic}-{self._result.partition} {state}>"

    def done(self) -> bool:
        return self._result.done

    def cancelled(self) -> bool:
        return False

    @property
    def error(self) -> BaseException | None:
        """This record's error once done: its batch's, or its own when the broker named the
        records that made it refuse the batch."""
        r = self._result
        if r.record_errors is not None:
            return r.record_errors(self._relative_offset)
        return r.error

    def _metadata(self) -> RecordMetadata:
        r = self._result
        offset = -1
        if r.error is None and r.base_offset >= 0:
            offset = r.base_offset + self._relative_offset
        timestamp = r.log_append_time if r.log_append_time >= 0 else self.timestamp
        return RecordMetadata(
            r.topic, r.partition, offset, timestamp, self.key_size, self.value_size
        )

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Block until the record is acknowledged; raises its error, or TimeoutError."""
        r = self._result
        if not r.done and not r.wait(timeout):
            raise TimeoutError(f"record not acknowledged within {timeout} s")
        if r.error is not None:
            raise self.error or r.error
        return self._metadata()

    get = result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        r = self._result
        if not r.done and not r.wait(timeout):
            raise TimeoutError(f"record not acknowledged within {timeout} s")
        return self.error

    def add_done_callback(self, fn: Callable[[RecordFuture], Any]) -> None:
        """``fn(future)`` once the record is acknowledged or failed."""
        self._result.add_callback(self, fn, False)

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        if not self._result.done:
            yield from self._result.wait_async(self).__await__()
        return self.result(0)


def _set_if_pending(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
