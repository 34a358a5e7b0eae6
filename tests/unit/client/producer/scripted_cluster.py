"""Two scripted loopback brokers that play one small cluster for producer tests.

Metadata answers from a mutable view (leader and leader epoch of each partition of topic
"t"); Produce and InitProducerId go to per-node handlers the test sets. Every request is
logged with the time it arrived, so tests can assert where a retry went and when.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scripted_broker import DEFAULT_RANGES, Request, ScriptedBroker, metadata_response

from brook.protocol.api import ApiKey
from brook.protocol.batch import read_header
from brook.protocol.produce_codec import PartitionProduceResult, encode_produce_response

TOPIC = "t"
DROP = object()  # a produce handler's answer: leave the whole request unanswered
RANGES = {**DEFAULT_RANGES, 0: (3, 11), 22: (0, 4)}

ProduceHandler = Callable[["ScriptedCluster", int, "ProduceCall"], Any]


@dataclass
class ProduceCall:
    """One partition of one Produce request as a broker saw it."""

    node: int
    at: float
    partition: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int
    request: Request = field(repr=False)


class ScriptedCluster:
    def __init__(self, partitions: int = 1, ranges: dict[int, tuple[int, int]] | None = None):
        self.ranges = RANGES if ranges is None else ranges
        self.brokers: dict[int, ScriptedBroker] = {}
        self.leaders: dict[int, tuple[int, int]] = {p: (1, 5) for p in range(partitions)}
        self.produce_calls: list[ProduceCall] = []
        self.metadata_calls: list[tuple[int, float]] = []
        self.init_calls: list[Request] = []
        self.next_producer_id = 1000
        self.offsets: dict[int, int] = {}
        # node -> handler(cluster, node, call) returning a PartitionProduceResult (or None
        # for the default: success at the next offset).
        self.produce: dict[int, ProduceHandler] = {}
        self.node_endpoints: list[tuple[int, str, int, str | None]] = []

    async def __aenter__(self) -> ScriptedCluster:
        for node in (1, 2):
            broker = ScriptedBroker(self._script(node), ranges=self.ranges)
            await broker.__aenter__()
            self.brokers[node] = broker
        return self

    async def __aexit__(self, *exc: object) -> None:
        for broker in self.brokers.values():
            await broker.__aexit__(*exc)

    def port(self, node: int) -> int:
        return self.brokers[node].port

    @property
    def bootstrap(self) -> str:
        return self.brokers[1].address

    def _script(self, node: int) -> Callable[[ScriptedBroker, Request], None]:
        def script(broker: ScriptedBroker, req: Request) -> None:
            if req.api_key == ApiKey.METADATA:
                self.metadata_calls.append((node, time.monotonic()))
                broker.respond(req, self.metadata())
            elif req.api_key == ApiKey.INIT_PRODUCER_ID:
                self.init_calls.append(req)
                self.next_producer_id += 1
                broker.respond(
                    req,
                    {
                        "throttle_time": 0,
                        "error_code": 0,
                        "producer_id": self.next_producer_id,
                        "producer_epoch": 0,
                    },
                )
            elif req.api_key == ApiKey.PRODUCE:
                self._on_produce(broker, node, req)

        return script

    def metadata(self) -> dict[str, Any]:
        partitions = [
            {
                "error_code": 0,
                "partition_index": p,
                "leader_id": leader,
                "leader_epoch": epoch,
                "replica_nodes": [1, 2],
                "isr_nodes": [1, 2],
                "offline_replicas": [],
            }
            for p, (leader, epoch) in self.leaders.items()
        ]
        topic = {
            "error_code": 0,
            "name": TOPIC,
            "topic_id": None,
            "is_internal": False,
            "partitions": partitions,
            "topic_authorized_operations": -2147483648,
        }
        brokers = [(n, "127.0.0.1", b.port) for n, b in self.brokers.items()]
        return metadata_response("scripted", brokers, [topic], controller_id=1)

    def _on_produce(self, broker: ScriptedBroker, node: int, req: Request) -> None:
        body = req.decode()
        acks = int(body.acks)
        topics = []
        drop = False
        for topic_data in body.topic_data:
            results = []
            for pdata in topic_data.partition_data:
                header = read_header(pdata.records)
                call = ProduceCall(
                    node,
                    time.monotonic(),
                    int(pdata.index),
                    header.producer_id,
                    header.producer_epoch,
                    header.base_sequence,
                    header.records_count,
                    req,
                )
                self.produce_calls.append(call)
                handler = self.produce.get(node)
                result = handler(self, node, call) if handler is not None else None
                if result is DROP:
                    drop = True
                    continue
                if result is None:
                    result = self.success(call)
                results.append(result)
            topics.append((topic_data.name, results))
        if acks != 0 and not drop:
            broker.respond(req, encode_produce_response(req.version, topics, self.node_endpoints))

    def success(self, call: ProduceCall) -> PartitionProduceResult:
        offset = self.offsets.get(call.partition, 0)
        self.offsets[call.partition] = offset + call.count
        return PartitionProduceResult(call.partition, 0, offset, -1, 0)

    def calls_to(self, node: int) -> list[ProduceCall]:
        return [c for c in self.produce_calls if c.node == node]
