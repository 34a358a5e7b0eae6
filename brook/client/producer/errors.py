"""The producer's own errors; broker errors reach the user as KafkaError (name, retriable)."""

from __future__ import annotations

from brook.protocol.errors import Errors, KafkaError

__all__ = [
    "BufferExhaustedError",
    "KafkaTimeoutError",
    "ProducerClosedError",
    "RecordNotAppendedError",
    "RecordTooLargeError",
]


class KafkaTimeoutError(KafkaError):
    """Something did not happen in time (Java's TimeoutException: retriable, REQUEST_TIMED_OUT).

    Not a subclass of the built-in TimeoutError, which concurrent futures use for "the wait
    itself timed out".
    """

    def __init__(self, message: str) -> None:
        super().__init__(Errors.REQUEST_TIMED_OUT, message)


class BufferExhaustedError(KafkaTimeoutError):
    """send() waited max.block.ms for buffer.memory and none was freed."""


class RecordTooLargeError(KafkaError):
    """A record larger than max.request.size or buffer.memory (MESSAGE_TOO_LARGE)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.MESSAGE_TOO_LARGE, message)


class ProducerClosedError(KafkaError):
    """The producer was closed; a record it still held was never sent."""

    def __init__(self, message: str = "the producer is closed") -> None:
        super().__init__(Errors.UNKNOWN_SERVER_ERROR, message)

    def __str__(self) -> str:
        return self.message or "the producer is closed"


class RecordNotAppendedError(KafkaError):
    """The record itself was valid, but the broker refused its batch for other records in it
    (KIP-467 named those): it was not written and may be sent again. Java's producer raises a
    plain KafkaException with this message."""

    def __init__(self) -> None:
        super().__init__(
            Errors.UNKNOWN_SERVER_ERROR,
            "Failed to append record because it was part of a batch which had one more more "
            "invalid records",
        )

    def __str__(self) -> str:
        return self.message or ""
