"""Offset discovery on the driver through Brook's admin client, as Spark's KafkaOffsetReaderAdmin:
which partitions the subscription covers now, their earliest / latest offsets, and the offsets
that ``startingOffsets`` / ``endingOffsets`` / timestamps resolve to. Calls are retried
``fetchOffset.numRetries`` times, ``fetchOffset.retryIntervalMs`` apart.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from brook.client.admin import Admin, AdminError
from brook.client.admin.types import OffsetSpec
from brook.client.config import ADMIN_CONFIG
from brook.protocol.errors import Errors, KafkaError

from .offsets import PartitionOffsets, TopicPartitionKey
from .options import EARLIEST, LATEST, OffsetLimit, OffsetLimitKind, SourceOptions

__all__ = ["OffsetReader"]

log = logging.getLogger(__name__)
T = TypeVar("T")
ReportDataLoss = Callable[[str], None]

_GONE = (Errors.UNKNOWN_TOPIC_OR_PARTITION,)


def _name(tp: TopicPartitionKey) -> str:
    return f"{tp[0]}-{tp[1]}"


class OffsetReader:
    """Driver-side partition and offset lookups for one source."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        # The admin client takes the connection settings of the kafka.* options.
        self._config = {k: v for k, v in options.client_config.items() if k in ADMIN_CONFIG}
        self._admin: Admin | None = None

    def _client(self) -> Admin:
        if self._admin is None:
            self._admin = Admin(self._config)
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            admin, self._admin = self._admin, None
            admin.close()

    def _with_retries(self, body: Callable[[], T]) -> T:
        attempts = max(1, self.options.fetch_offset_retries)
        for attempt in range(1, attempts + 1):
            try:
                return body()
            except (KafkaError, OSError) as exc:
                if attempt == attempts:
                    raise
                log.warning("Error in attempt %d getting Brook offsets: %s", attempt, exc)
                time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
                # A fresh client, as Spark resets its AdminClient between attempts.
                self.close()
        raise AssertionError("unreachable")

    # -- partitions ------------------------------------------------------------------------

    def partitions(self) -> set[TopicPartitionKey]:
        """The partitions the subscription covers now (topics that do not exist yet: none)."""
        sub = self.options.subscription
        if sub.kind == "assign":
            return set(sub.partitions)

        def body() -> set[TopicPartitionKey]:
            admin = self._client()
            topics = [t for t in admin.list_topics() if sub.matches(t)]
            if not topics:
                return set()
            try:
                described = admin.describe_topics(topics)
            except AdminError as exc:
                # A topic deleted between the two calls simply has no partitions now.
                described = exc.results
            return {(name, p.partition) for name, d in described.items() for p in d.partitions}

        return self._with_retries(body)

    # -- offsets ---------------------------------------------------------------------------

    def _list(self, specs: Mapping[TopicPartitionKey, int]) -> dict[TopicPartitionKey, int]:
        """Offsets per partition for ListOffsets specs; partitions that are gone are left out."""
        if not specs:
            return {}

        def body() -> dict[TopicPartitionKey, int]:
            try:
                listed = self._client().list_offsets(specs)
            except AdminError as exc:
                failed = [e for e in exc.errors.values() if e.code not in _GONE]
                if failed:
                    raise failed[0] from None
                listed = exc.results
            return {(tp.topic, tp.partition): lo.offset for tp, lo in listed.items()}

        return self._with_retries(body)

    def earliest(self, tps: Iterable[TopicPartitionKey] | None = None) -> PartitionOffsets:
        tps = self.partitions() if tps is None else tps
        return self._list(dict.fromkeys(tps, int(OffsetSpec.EARLIEST)))

    def latest(self, tps: Iterable[TopicPartitionKey] | None = None) -> PartitionOffsets:
        tps = self.partitions() if tps is None else tps
        return self._list(dict.fromkeys(tps, int(OffsetSpec.LATEST)))

    def resolve(
        self, limit: OffsetLimit, report_data_loss: ReportDataLoss, *, is_start: bool
    ) -> PartitionOffsets:
        """Concrete offsets for a starting or ending limit."""
        if limit.kind is OffsetLimitKind.EARLIEST:
            return self.earliest()
        if limit.kind is OffsetLimitKind.LATEST:
            return self.latest()
        if limit.kind is OffsetLimitKind.SPECIFIC:
            return self._specific(limit.offsets, report_data_loss, is_start=is_start)
        if limit.kind is OffsetLimitKind.TIMESTAMP:
            timestamps = dict.fromkeys(self.partitions(), limit.timestamp)
        else:
            timestamps = dict(limit.offsets)
            option = "startingOffsetsByTimestamp" if is_start else "endingOffsetsByTimestamp"
            self._check_all_assigned(timestamps, option)
        return self._by_timestamp(timestamps, fail_on_no_match=limit.fail_on_no_match and is_start)

    def _check_all_assigned(self, given: Mapping[TopicPartitionKey, int], option: str) -> None:
        assigned = self.partitions()
        if set(given) != assigned:
            raise ValueError(
                f"If {option} contains specific offsets, you must specify all "
                "TopicPartitions.\nUse -1 for latest, -2 for earliest.\n"
                f"Specified: {sorted(_name(tp) for tp in given)} "
                f"Assigned: {sorted(_name(tp) for tp in assigned)}"
            )

    def _specific(
        self,
        offsets: Mapping[TopicPartitionKey, int],
        report_data_loss: ReportDataLoss,
        *,
        is_start: bool,
    ) -> PartitionOffsets:
        self._check_all_assigned(offsets, "startingOffsets" if is_start else "endingOffsets")
        earliest = self.earliest(offsets)
        latest = self.latest(offsets)
        out: PartitionOffsets = {}
        for tp, offset in offsets.items():
            if offset == EARLIEST:
                out[tp] = earliest[tp]
            elif offset == LATEST:
                out[tp] = latest[tp]
            elif is_start and tp in earliest and offset < earliest[tp]:
                report_data_loss(
                    f"startingOffsets for {_name(tp)} was {offset} but the earliest offset "
                    f"still in the log is {earliest[tp]}"
                )
                out[tp] = earliest[tp]
            else:
                out[tp] = offset
        return out

    def _by_timestamp(
        self, timestamps: Mapping[TopicPartitionKey, int], *, fail_on_no_match: bool
    ) -> PartitionOffsets:
        found = self._list(timestamps)
        latest = None
        out: PartitionOffsets = {}
        for tp, ts in timestamps.items():
            offset = found.get(tp, -1)
            if offset < 0:
                # No record at or after the timestamp.
                if fail_on_no_match:
                    raise ValueError(
                        f"No offset matched from request of topic-partition {_name(tp)} and "
                        f"timestamp {ts}."
                    )
                latest = self.latest(timestamps) if latest is None else latest
                offset = latest[tp]
            out[tp] = offset
        return out
