"""Clickstream generator: page views as JSON records in a Brook topic, in real time, keyed by
user so one user's clicks stay in order in one partition. Event times arrive slightly out of
order, and a few arrive far too late (the job's watermark drops those from its counts).

    python -m examples.clickstream.generator --bootstrap 127.0.0.1:9092 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from brook.client.producer import Producer

PAGES = ("/home", "/search", "/product", "/cart", "/checkout")
WEIGHTS = (40, 25, 20, 10, 5)
HEARTBEAT_PAGE = "/_heartbeat"  # moves event time on at the end; the job does not count it


@dataclass
class Sent:
    """What the generator sent, to check the job's results against."""

    events: int = 0
    late: int = 0
    per_page: Counter[str] = field(default_factory=Counter)
    last_event_ms: int = 0


def generate(
    bootstrap: str,
    topic: str,
    *,
    seconds: float,
    rate: int,
    late_fraction: float = 0.01,
    seed: int = 7,
) -> Sent:
    """Send ``rate`` page views a second for ``seconds``; then heartbeats 60 s later in event
    time, so every window the events fall in can close."""
    rng = random.Random(seed)
    sent = Sent()
    config = {"bootstrap.servers": bootstrap, "linger.ms": "20", "acks": "all"}
    with Producer(config) as producer:
        start = time.monotonic()
        while (elapsed := time.monotonic() - start) < seconds:
            now_ms = int(time.time() * 1000)
            for _ in range(max(1, rate // 20)):
                late = rng.random() < late_fraction
                # Real clients report a little late, out of order; a few report very late.
                ts = now_ms - (rng.randint(30_000, 40_000) if late else rng.randint(0, 3000))
                user = f"u{rng.randint(1, 200)}"
                page = rng.choices(PAGES, WEIGHTS)[0]
                event = {"user": user, "page": page, "ts": ts}
                producer.send(topic, value=json.dumps(event).encode(), key=user.encode())
                sent.events += 1
                sent.late += late
                sent.per_page[page] += 1
                sent.last_event_ms = max(sent.last_event_ms, ts)
            time.sleep(max(0.0, 0.05 - (time.monotonic() - start - elapsed)))
        heartbeat = {"user": "-", "page": HEARTBEAT_PAGE, "ts": sent.last_event_ms + 60_000}
        for partition in range(len(producer.partitions_for(topic))):
            producer.send(topic, value=json.dumps(heartbeat).encode(), partition=partition)
        producer.flush()
    return sent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Send page views to a Brook topic.")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="clicks")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=int, default=500, help="events per second")
    args = parser.parse_args(argv)
    sent = generate(args.bootstrap, args.topic, seconds=args.seconds, rate=args.rate)
    print(f"sent {sent.events} events ({sent.late} late): {dict(sent.per_page)}")


if __name__ == "__main__":
    main()
