"""The producer's own errors; broker errors reach the user as KafkaError (name, retriable)."""

from __future__ import annotations

from brook.protocol.errors import Errors, KafkaError

__all__ = [
    "AbortableTransactionError",
    "BufferExhaustedError",
    "FatalTransactionError",
    "KafkaTimeoutError",
    "ProducerClosedError",
    "ProducerFencedError",
    "RecordNotAppendedError",
    "RecordTooLargeError",
    "TransactionAbortedError",
    "TransactionError",
    "TransactionStateError",
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


class TransactionError(KafkaError):
    """A transaction failed; ``abortable`` says whether abort_transaction() recovers from it.

    Java's producer raises these as KafkaException subclasses; here one base class lets an
    application tell the two outcomes apart without knowing every cause.
    """

    abortable = False

    def __str__(self) -> str:
        return self.message or self.name


class AbortableTransactionError(TransactionError):
    """The current transaction cannot commit (a record or an offset commit failed, the
    coordinator lost the producer id, a group or topic was not authorized): call
    abort_transaction(), then a new transaction may start. ``code`` is the cause's."""

    abortable = True


class FatalTransactionError(TransactionError):
    """The producer cannot go on (another producer took over its transactional.id, it is
    not authorized, the coordinator answered what a correct client never causes): close it.
    ``code`` is the cause's."""


class ProducerFencedError(FatalTransactionError):
    """Another producer with the same transactional.id called init_transactions() (a newer
    epoch): this one is a zombie and must close (Java's ProducerFencedException)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            Errors.PRODUCER_FENCED,
            message
            or "There is a newer producer with the same transactional.id which fences the "
            "current one.",
        )


class TransactionAbortedError(KafkaError):
    """A record was not sent because its transaction was aborted first (Java's
    TransactionAbortedException); it may be sent again in a new transaction."""

    def __init__(self, message: str = "Failing batch since transaction was aborted") -> None:
        super().__init__(Errors.UNKNOWN_SERVER_ERROR, message)

    def __str__(self) -> str:
        return self.message or ""


class TransactionStateError(RuntimeError):
    """A transactional call made in the wrong state: send() outside a transaction,
    begin_transaction() twice, transactions on a producer without transactional.id (Java's
    IllegalStateException). Nothing was sent; the producer is unchanged."""
