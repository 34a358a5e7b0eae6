"""Produce and consume MB/s over SSL and SASL_SSL against PLAINTEXT: one broker with the three
listeners, the same librdkafka client (confluent-kafka), the same run.

    python -m bench.tls_throughput [--records 200000] [--size 1024] [--rounds 3]

1 KiB records, 3 partitions, acks=1, linger 5 ms, batch 256 KiB. The CA and the broker's
certificate are made at start with trustme; SASL_SSL logs in with SCRAM-SHA-256. Each round
measures the three protocols, rotating which goes first; medians are reported with the ratio
to PLAINTEXT.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from .broker_throughput import PARTITIONS, consume, produce
from .common import BrookProcess, free_port, machine, make_tls_files, median, save

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
SETTINGS = {"linger.ms": 5, "batch.size": 262144}


def client_settings(protocol: str, ca: Path) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if protocol != "PLAINTEXT":
        settings.update({"security.protocol": protocol, "ssl.ca.location": str(ca)})
    if protocol == "SASL_SSL":
        settings.update(
            {
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": "bench",
                "sasl.password": "bench-secret",
            }
        )
    return settings


def run(records: int, size: int, rounds: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="brook-bench-tls-"))
    try:
        tls = make_tls_files(tmp / "tls")
        ports = {p: free_port() for p in PROTOCOLS}
        overrides = {
            "listeners": ",".join(f"{p}://127.0.0.1:{port}" for p, port in ports.items()),
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            **tls.broker_settings(),
        }
        results: dict[str, dict[str, list[float]]] = {}
        with BrookProcess(tmp / "data", overrides, port=ports["PLAINTEXT"]) as broker:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
            for f in admin.alter_user_scram_credentials(
                [UserScramCredentialUpsertion("bench", info, b"bench-secret")]
            ).values():
                f.result(30)
            for rnd in range(rounds):
                order = PROTOCOLS[rnd % 3 :] + PROTOCOLS[: rnd % 3]
                for protocol in order:
                    bootstrap = f"127.0.0.1:{ports[protocol]}"
                    settings = client_settings(protocol, tls.ca_pem)
                    topic = f"bench-{protocol.lower()}-{uuid.uuid4().hex[:6]}"
                    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
                        f.result(30)
                    p = produce(bootstrap, topic, records, size, {**SETTINGS, **settings})
                    c = consume(bootstrap, topic, records, size, settings)
                    slot = results.setdefault(protocol, {})
                    slot.setdefault("produce", []).append(p)
                    slot.setdefault("consume", []).append(c)
                    print(
                        f"round {rnd + 1} {protocol:10} produce {p:7.1f} MB/s  "
                        f"consume {c:7.1f} MB/s",
                        flush=True,
                    )
        summary: dict[str, Any] = {}
        for op in ("produce", "consume"):
            base = median(results["PLAINTEXT"][op])
            summary[op] = {
                protocol: {
                    "mb_s": round(median(results[protocol][op]), 1),
                    "ratio": round(median(results[protocol][op]) / base, 2),
                }
                for protocol in PROTOCOLS
            }
        return {
            "records": records,
            "record_size": size,
            "partitions": PARTITIONS,
            "acks": 1,
            "rounds": rounds,
            "machine": machine(),
            "raw": results,
            "summary": summary,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    out = run(args.records, args.size, args.rounds)
    print("\n| op | protocol | MB/s | / PLAINTEXT |")
    print("|---|---|---|---|")
    for op, row in out["summary"].items():
        for protocol, r in row.items():
            print(f"| {op} | {protocol} | {r['mb_s']} | {r['ratio']} |")
    print(f"\nsaved to {save('tls_throughput', out)}")


if __name__ == "__main__":
    main()
