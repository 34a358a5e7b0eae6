"""What the authorizer costs the broker: CPU time per Produce and per Fetch request with no
authorizer, then with Kafka's StandardAuthorizer and an ACL set of ``--acls`` entries.

    python -m bench.authorizer_cpu [--requests 6000] [--rounds 3] [--acls 1000]

The requests are bench.request_cpu's (Produce v9 of three 16 KiB batches, acks=1; Fetch v12
of the same three partitions), sent as User:alice on a listener of her own (the test-only
``brook.test.listener.principals``), eight in flight. With the authorizer on, alice holds
WRITE and READ on the topic among ``--acls`` other ACLs (half literal on other topics, half
prefixed on other prefixes, for other principals), so every decision looks up the literal,
wildcard and prefixed ACLs of the topic's name. Reports the broker's user + system CPU per
request (median of the rounds). Raw results go to ``bench/results/authorizer_cpu.json``.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

from brook.protocol.api import request_class
from brook.protocol.build import build
from brook.protocol.framing import encode_kio, encode_request
from brook.security.acl import AclOperation, ResourceType, binding_of
from brook.security.authorizer import Caller, StandardAuthorizer
from brook.security.principal import KafkaPrincipal

from .common import BrookProcess, free_port, machine, process_cpu_seconds, save
from .request_cpu import TOPIC, _create_topic, _fetch_frames, _produce_frames, _pump

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _acl(name: str, pattern: int, principal: str, op: int) -> dict[str, Any]:
    return {
        "resource_type": 2,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": "*",
        "operation": op,
        "permission_type": 3,
    }


def _create_acls(sock: socket.socket, count: int) -> None:
    creations = [_acl(TOPIC, 3, "User:alice", 4), _acl(TOPIC, 3, "User:alice", 3)]
    for i in range(count):
        if i % 2:
            creations.append(_acl(f"other-{i}", 3, f"User:u{i}", 3))
        else:
            creations.append(_acl(f"{TOPIC[:2]}{i}-", 4, f"User:u{i}", 4))
    for start in range(0, len(creations), 500):
        data = {"creations": creations[start : start + 500]}
        body = encode_kio(build(request_class(30, 3), data))
        _pump(sock, [encode_request(30, 3, start, "bench", body)])


def _round(requests: int, acls: int | None) -> dict[str, float]:
    admin_port, alice_port = free_port(), free_port()
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{admin_port},ALICE://127.0.0.1:{alice_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,ALICE:PLAINTEXT",
        "brook.test.listener.principals": "PLAINTEXT=User:admin,ALICE=User:alice",
    }
    if acls is not None:
        overrides |= {"authorizer.class.name": STANDARD, "super.users": "User:admin"}
    with (
        tempfile.TemporaryDirectory(prefix="brook-bench-") as tmp,
        BrookProcess(Path(tmp) / "data", overrides, port=admin_port) as broker,
    ):
        assert broker.proc is not None
        return _measure(broker.proc.pid, admin_port, alice_port, requests, acls)


def _measure(
    pid: int, admin_port: int, alice_port: int, requests: int, acls: int | None
) -> dict[str, float]:
    """Set up as the super user, then time alice's requests (the broker's CPU only)."""
    out: dict[str, float] = {}
    with socket.create_connection(("127.0.0.1", admin_port)) as admin:
        _create_topic(admin)
        if acls is not None:
            _create_acls(admin, acls)
    with socket.create_connection(("127.0.0.1", alice_port)) as sock:
        for name, make in (("produce", _produce_frames), ("fetch", _fetch_frames)):
            _pump(sock, make(50))
            frames = make(requests)
            cpu0 = process_cpu_seconds(pid)
            _pump(sock, frames)
            out[name] = (process_cpu_seconds(pid) - cpu0) / requests * 1e6
    return out


def decision_cost_us(acls: int, number: int = 100_000) -> dict[str, float]:
    """One decision in-process over the same ACL set: first time (decided) and repeated
    (remembered)."""
    bindings = [
        binding_of(2, TOPIC, 3, "User:alice", "*", 4, 3),
        binding_of(2, TOPIC, 3, "User:alice", "*", 3, 3),
    ]
    for i in range(acls):
        if i % 2:
            bindings.append(binding_of(2, f"other-{i}", 3, f"User:u{i}", "*", 3, 3))
        else:
            bindings.append(binding_of(2, f"{TOPIC[:2]}{i}-", 4, f"User:u{i}", "*", 4, 3))
    authorizer = StandardAuthorizer(bindings)
    alice = Caller(KafkaPrincipal("User", "alice"), "127.0.0.1")
    args = (alice, AclOperation.WRITE, ResourceType.TOPIC, TOPIC)
    decided = timeit.timeit(lambda: authorizer._decide(*args), number=number)
    remembered = timeit.timeit(lambda: authorizer.authorize(*args), number=number)
    return {
        "decided_us": round(decided / number * 1e6, 2),
        "remembered_us": round(remembered / number * 1e6, 2),
    }


def run(requests: int, rounds: int, acls: int) -> dict[str, Any]:
    samples: dict[str, dict[str, list[float]]] = {"off": {}, "on": {}}
    for r in range(rounds):
        for mode, count in (("off", None), ("on", acls)):
            started = time.perf_counter()
            for name, value in _round(requests, count).items():
                samples[mode].setdefault(name, []).append(value)
                print(f"round {r + 1} authorizer {mode:3} {name:8} cpu {value:6.1f} us/request")
            print(f"  ({time.perf_counter() - started:.1f} s)")
    summary = {
        mode: {name: round(statistics.median(v), 1) for name, v in by_api.items()}
        for mode, by_api in samples.items()
    }
    decision = decision_cost_us(acls)
    print(f"one decision in-process: {decision}")
    return {
        "requests": requests,
        "rounds": rounds,
        "acls": acls,
        "decision": decision,
        "machine": machine(),
        "raw": samples,
        "summary_cpu_us_per_request": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--acls", type=int, default=1000)
    args = parser.parse_args()
    out = run(args.requests, args.rounds, args.acls)
    for mode, row in out["summary_cpu_us_per_request"].items():
        print(f"authorizer {mode}: " + ", ".join(f"{k} {v} us" for k, v in row.items()))
    print(f"saved to {save('authorizer_cpu', out)}")


if __name__ == "__main__":
    main()
