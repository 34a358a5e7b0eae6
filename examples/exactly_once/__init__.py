"""Exactly-once consume-transform-produce with Brook's client: ``copy`` reads one topic in a
consumer group and writes what it read to another, each batch in one transaction with the
group's offsets (``python -m examples.exactly_once.copy --help``)."""
