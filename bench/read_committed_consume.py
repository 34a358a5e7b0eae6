"""Consume throughput under read_committed against read_uncommitted, on the same topic of the
same single-node broker, same librdkafka client, same run.

    python -m bench.read_committed_consume [--transactions 2000] [--per-txn 100] [--size 1000]

The topic (one partition) holds ``--transactions`` transactions of ``--per-txn`` records of
``--size`` bytes, one batch each, every tenth aborted; the markers are written with
WriteTxnMarkers as a coordinator would. Each round reads the partition from offset 0 with a
fresh confluent-kafka consumer at each isolation level (order alternating): read_committed
reads up to the last stable offset and drops the aborted batches from the aborted-transaction
index the broker sends; read_uncommitted reads every record. Throughput counts the bytes of
the records each consumer delivers, timed from its first record. Raw results go to
``bench/results/read_committed_consume.json``.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from .broker_throughput import timed_consume
from .common import brook_process, machine, median, save

ABORT_EVERY = 10


def fill(bootstrap: str, topic: str, transactions: int, per_txn: int, size: int) -> int:
    """Write the transactions; returns how many records were committed."""
    from rawclient import RawClient, create_topic
    from txn_support import TxnProducer

    committed = 0
    with RawClient(bootstrap, timeout=60) as c:
        create_topic(c, topic)
        producer = TxnProducer(c, topic)
        value = b"v" * size
        for n in range(transactions):
            error, _ = producer.send(*([value] * per_txn))
            assert error == 0, error
            commit = n % ABORT_EVERY != ABORT_EVERY - 1
            assert producer.end(commit=commit) == 0
            committed += per_txn if commit else 0
    return committed


def consume(bootstrap: str, topic: str, level: str, expected: int, size: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": level,
            "fetch.max.bytes": 52428800,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        return timed_consume(consumer, expected, size)
    except RuntimeError as exc:
        raise RuntimeError(f"{level}: {exc}") from None
    finally:
        consumer.close()


def run(transactions: int, per_txn: int, size: int, rounds: int) -> dict[str, Any]:
    results: dict[str, list[float]] = {"read_committed": [], "read_uncommitted": []}
    from txn_support import UNVERIFIED

    # the transactions are raw batches and markers with no coordinator behind them, which
    # KIP-890's verification would refuse
    with brook_process(UNVERIFIED) as broker:
        topic = f"bench-txn-{uuid.uuid4().hex[:6]}"
        committed = fill(broker.bootstrap, topic, transactions, per_txn, size)
        expected = {"read_committed": committed, "read_uncommitted": transactions * per_txn}
        for r in range(rounds):
            order = list(results) if r % 2 == 0 else list(reversed(results))
            for level in order:
                mb_s = consume(broker.bootstrap, topic, level, expected[level], size)
                results[level].append(mb_s)
                print(f"round {r + 1}: {level:16} {mb_s:7.1f} MB/s", flush=True)
    medians = {name: round(median(v), 2) for name, v in results.items()}
    return {
        "machine": machine(),
        "transactions": transactions,
        "records_per_transaction": per_txn,
        "size": size,
        "aborted_fraction": 1 / ABORT_EVERY,
        "rounds": rounds,
        "mb_per_s": results,
        "median_mb_per_s": medians,
        "ratio_committed_over_uncommitted": round(
            medians["read_committed"] / medians["read_uncommitted"], 2
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=2000)
    parser.add_argument("--per-txn", type=int, default=100)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result = run(args.transactions, args.per_txn, args.size, args.rounds)
    m = result["median_mb_per_s"]
    print(
        f"median: read_committed {m['read_committed']} MB/s, read_uncommitted "
        f"{m['read_uncommitted']} MB/s, ratio {result['ratio_committed_over_uncommitted']}"
    )
    print(f"saved to {save('read_committed_consume', result)}")


if __name__ == "__main__":
    main()
