"""Exactly-once copy: records read from ``source`` are written to ``sink`` (same partition,
value transformed by ``transform``) so that, whatever crashes, each appears in ``sink`` once
for a read_committed reader.

    python -m examples.exactly_once.copy BOOTSTRAP SOURCE SINK GROUP TRANSACTIONAL_ID

How: each batch the consumer returns is written in one transaction together with the
group's offsets after it (``send_offsets_to_transaction`` with ``consumer.group_metadata()``).
The output and the progress commit or abort together, so a copier killed at any moment
leaves either both or neither; the copier that takes over calls ``init_transactions()``
with the same transactional id, which aborts whatever the dead one left open and fences it
should it still be alive, then resumes from the committed offsets. The consumer reads
with ``isolation.level=read_committed`` so that a chain of such copiers never reads aborted
output.

Errors: an abortable one (a record or the offsets could not be written) aborts the
transaction and rewinds the consumer to the committed offsets; a fatal one (fenced by a
newer copier, not authorized) or a timeout ends the process with status 1, for a
supervisor to start it again.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from brook.client import (
    AbortableTransactionError,
    Consumer,
    ConsumerRecord,
    KafkaTimeoutError,
    Producer,
    TransactionError,
)

log = logging.getLogger("examples.exactly_once.copy")

MAX_RECORDS = 20  # records per transaction at most


def transform(value: bytes | None) -> bytes | None:
    """The transformation (the identity here: a copy)."""
    return value


def rewind(consumer: Consumer) -> None:
    """Back to the committed offsets: an aborted transaction's records are read again."""
    assignment = sorted(consumer.assignment())
    committed = consumer.committed(assignment)
    for tp in assignment:
        offset = committed.get(tp)
        if offset is None:
            consumer.seek_to_beginning([tp])
        else:
            consumer.seek(tp, offset.offset)


def copy_batch(
    producer: Producer, consumer: Consumer, records: Sequence[ConsumerRecord], sink: str
) -> None:
    producer.begin_transaction()
    for record in records:
        producer.send(sink, transform(record.value), key=record.key, partition=record.partition)
    positions = {tp: consumer.position(tp) for tp in consumer.assignment()}
    producer.send_offsets_to_transaction(positions, consumer.group_metadata())
    producer.commit_transaction()


def run(bootstrap: str, source: str, sink: str, group: str, transactional_id: str) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            # Static membership: a restarted copier takes its place in the group at once.
            "group.instance.id": f"{transactional_id}-member",
            "session.timeout.ms": 6000,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 10000,
        }
    )
    try:
        producer.init_transactions()
        consumer.subscribe([source])
        while True:
            records = consumer.poll(500, max_records=MAX_RECORDS)
            if not records:
                continue
            try:
                copy_batch(producer, consumer, records, sink)
            except AbortableTransactionError as exc:
                log.warning("aborting a transaction: %s", exc)
                producer.abort_transaction()
                rewind(consumer)
    except (TransactionError, KafkaTimeoutError) as exc:
        log.error("stopping: %s", exc)
        return 1
    finally:
        producer.close(5)
        consumer.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bootstrap")
    parser.add_argument("source")
    parser.add_argument("sink")
    parser.add_argument("group")
    parser.add_argument("transactional_id")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    return run(args.bootstrap, args.source, args.sink, args.group, args.transactional_id)


if __name__ == "__main__":
    sys.exit(main())
