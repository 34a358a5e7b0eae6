"""The node's figures at one instant, under Kafka's names as the Prometheus JMX exporter
renders Kafka's MBeans (jmx_exporter's kafka-2_0_0.yml rules, lower-cased): a
``kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=t`` meter becomes the
counter ``kafka_server_brokertopicmetrics_messagesin_total{topic="t"}``, a gauge
``kafka.log:type=Log,name=Size,topic=t,partition=0`` becomes ``kafka_log_log_size{...}``.

``take_snapshot`` runs on the event loop (it reads the replica manager, the logs, the groups,
the quorum and the counters, none of which is safe to read from another thread) and returns
plain values the scrape thread may format at leisure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brook.protocol.api import api_name

from .counters import FETCH_CONSUMER, FETCH_FOLLOWER, BrokerCounters, Histogram, TopicCounters

if TYPE_CHECKING:
    from brook.broker.server import Broker

Labels = dict[str, str]
COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"


@dataclass
class Family:
    """One metric: ``name`` as exposed (a counter's without its ``_total``), its samples."""

    name: str
    kind: str
    doc: str
    samples: list[tuple[Labels, float]] = field(default_factory=list)
    histograms: list[tuple[Labels, Histogram]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> Family:
        self.samples.append((labels, value))
        return self


def kafka_request_name(api_key: int) -> str:
    """Kafka's ApiKeys name (``Produce``, ``ListOffsets``) from Brook's (``list_offsets``);
    ``FetchConsumer`` / ``FetchFollower`` for the counters' pseudo keys."""
    if api_key == FETCH_CONSUMER:
        return "FetchConsumer"
    if api_key == FETCH_FOLLOWER:
        return "FetchFollower"
    return "".join(part.capitalize() for part in api_name(api_key).split("_"))


# BrokerTopicMetrics meters: (attribute of TopicCounters, name, doc)
_TOPIC_METERS = (
    ("messages_in", "messagesin", "Records appended by leaders, from produce requests"),
    ("bytes_in", "bytesin", "Bytes of record batches produced by clients"),
    ("bytes_out", "bytesout", "Bytes of records sent to consumers in fetch responses"),
    ("replication_bytes_in", "replicationbytesin", "Bytes of records followers appended"),
    ("replication_bytes_out", "replicationbytesout", "Bytes of records sent to followers"),
    ("produce_requests", "totalproducerequests", "Produce requests, counted per partition"),
    ("failed_produce_requests", "failedproducerequests", "Produce partitions that failed"),
    ("fetch_requests", "totalfetchrequests", "Fetch requests, counted per partition"),
    ("failed_fetch_requests", "failedfetchrequests", "Fetch partitions answered with an error"),
)


def take_snapshot(broker: Broker) -> list[Family]:
    """Every metric of ``broker``; call on its event loop."""
    counters: BrokerCounters = broker.counters
    families: list[Family] = []
    families += _topic_families(counters.all_topics, counters.topics)
    families += _request_families(broker, counters)
    families += _replica_families(broker)
    families += _controller_families(broker)
    families += _log_families(broker)
    families += _fetch_session_families(broker)
    families += _group_families(broker)
    families += _quorum_families(broker)
    return families


def _topic_families(total: TopicCounters, topics: dict[str, TopicCounters]) -> list[Family]:
    out = []
    for attr, short, doc in _TOPIC_METERS:
        fam = Family(f"kafka_server_brokertopicmetrics_{short}", COUNTER, doc)
        fam.add(getattr(total, attr))
        for topic, c in sorted(topics.items()):
            fam.add(getattr(c, attr), topic=topic)
        out.append(fam)
    return out


def _request_families(broker: Broker, counters: BrokerCounters) -> list[Family]:
    requests = Family(
        "kafka_network_requestmetrics_requests", COUNTER, "Requests handled, per API and version"
    )
    for (key, version), n in sorted(counters.requests.items()):
        requests.add(n, request=kafka_request_name(key), version=str(version))
    latency = Family(
        "kafka_network_requestmetrics_totaltimems",
        HISTOGRAM,
        "Time from a request's dispatch to its response handed to the socket, in ms",
    )
    for key, hist in sorted(counters.request_latency.items()):
        latency.histograms.append(({"request": kafka_request_name(key)}, hist.copy()))
    queue = Family(
        "kafka_network_requestchannel_requestqueuesize",
        GAUGE,
        "Requests read from connections and waiting for the one before them to be answered",
    )
    queue.add(sum(c.queued_requests for c in broker.socket_server.connections))
    connections = Family(
        "kafka_server_socketservermetrics_connection_count", GAUGE, "Open client connections"
    )
    connections.add(len(broker.socket_server.connections))
    lag = Family(
        "brook_eventloop_lag_ms",
        HISTOGRAM,
        "How late the event loop ran a probe scheduled every 500 ms, in ms (Brook's own)",
    )
    lag.histograms.append(({}, counters.loop_lag.copy()))
    return [requests, latency, queue, connections, lag]


def _replica_families(broker: Broker) -> list[Family]:
    rm = broker.replica_manager
    if rm is None:
        return []
    leaders = under_replicated = under_min_isr = at_min_isr = 0
    for p in rm.partitions.values():
        if not p.is_leader:
            continue
        leaders += 1
        if len(p.isr) < len(p.replicas):
            under_replicated += 1
        state = p.leader_state
        if state is not None:
            if state.under_min_isr:
                under_min_isr += 1
            elif len(state.isr) == state.effective_min_isr:
                at_min_isr += 1
    prefix = "kafka_server_replicamanager_"
    return [
        Family(prefix + "partitioncount", GAUGE, "Partitions hosted here").add(len(rm.partitions)),
        Family(prefix + "leadercount", GAUGE, "Partitions this broker leads").add(leaders),
        Family(
            prefix + "underreplicatedpartitions",
            GAUGE,
            "Partitions led here whose ISR is smaller than their replica set",
        ).add(under_replicated),
        Family(
            prefix + "underminisrpartitioncount",
            GAUGE,
            "Partitions led here whose ISR is below the effective min.insync.replicas",
        ).add(under_min_isr),
        Family(
            prefix + "atminisrpartitioncount",
            GAUGE,
            "Partitions led here whose ISR is exactly the effective min.insync.replicas",
        ).add(at_min_isr),
        Family(prefix + "offlinereplicacount", GAUGE, "Replicas here that cannot be served").add(
            len(rm.offline)
        ),
        Family(
            prefix + "isrshrinks", COUNTER, "ISR shrinks of partitions led here, once committed"
        ).add(rm.isr_shrinks),
        Family(
            prefix + "isrexpands", COUNTER, "ISR expansions of partitions led here, once committed"
        ).add(rm.isr_expands),
    ]


def _controller_families(broker: Broker) -> list[Family]:
    """KafkaController's gauges: figures on the active controller, 0 on every other node."""
    if "controller" not in broker.roles or broker.quorum is None:
        return []
    active = broker.quorum.leader.leader_id == broker.node_id
    image = broker.image
    offline = partitions = 0
    if active:
        for topic in image.topics.values():
            partitions += len(topic.partitions)
            offline += sum(1 for p in topic.partitions.values() if p.leader == -1)
    prefix = "kafka_controller_kafkacontroller_"
    return [
        Family(prefix + "activecontrollercount", GAUGE, "1 on the active controller").add(
            int(active)
        ),
        Family(prefix + "offlinepartitionscount", GAUGE, "Partitions without a leader").add(
            offline
        ),
        Family(prefix + "globaltopiccount", GAUGE, "Topics in the cluster").add(
            len(image.topics) if active else 0
        ),
        Family(prefix + "globalpartitioncount", GAUGE, "Partitions in the cluster").add(partitions),
    ]


def _log_families(broker: Broker) -> list[Family]:
    size = Family("kafka_log_log_size", GAUGE, "Bytes of a partition's log on disk")
    segments = Family("kafka_log_log_numlogsegments", GAUGE, "Segments of a partition's log")
    end = Family("kafka_log_log_logendoffset", GAUGE, "A partition's log end offset")
    start = Family("kafka_log_log_logstartoffset", GAUGE, "A partition's log start offset")
    for plog in sorted(broker.log_manager.logs(), key=lambda p: (p.topic, p.partition)):
        segs = plog.segments()
        labels = {"topic": plog.topic, "partition": str(plog.partition)}
        size.samples.append((labels, sum(s.size for s in segs)))
        segments.samples.append((labels, len(segs)))
        end.samples.append((labels, plog.log_end_offset))
        start.samples.append((labels, plog.log_start_offset))
    return [size, segments, end, start]


def _fetch_session_families(broker: Broker) -> list[Family]:
    cache = broker.fetch_sessions
    prefix = "kafka_server_fetchsessioncache_"
    return [
        Family(
            prefix + "numincrementalfetchsessions", GAUGE, "Incremental fetch sessions cached"
        ).add(cache.num_sessions),
        Family(
            prefix + "numincrementalfetchpartitionscached",
            GAUGE,
            "Partitions held by the cached fetch sessions",
        ).add(cache.num_partitions_cached),
        Family(
            prefix + "incrementalfetchsessionevictions",
            COUNTER,
            "Fetch sessions evicted for newer ones",
        ).add(cache.evictions),
    ]


def _group_families(broker: Broker) -> list[Family]:
    coordinator = broker.group_coordinator
    if coordinator is None:
        return []
    groups = list(coordinator.groups.values())
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    out = [
        Family(prefix + "numgroups", GAUGE, "Groups this coordinator holds").add(len(groups)),
        Family(prefix + "numoffsets", GAUGE, "Committed offsets this coordinator holds").add(
            sum(len(g.offsets) for g in groups)
        ),
    ]
    for state, short in (
        ("PreparingRebalance", "numgroupspreparingrebalance"),
        ("CompletingRebalance", "numgroupscompletingrebalance"),
        ("Stable", "numgroupsstable"),
        ("Dead", "numgroupsdead"),
        ("Empty", "numgroupsempty"),
    ):
        out.append(
            Family(prefix + short, GAUGE, f"Groups in state {state}").add(
                sum(1 for g in groups if g.state.value == state)
            )
        )
    lag = Family(
        "kafka_consumergroup_lag",
        GAUGE,
        "High watermark minus the group's committed offset, for partitions led by this node "
        "(kafka_exporter's name; Brook's own)",
    )
    rm = broker.replica_manager
    if rm is not None:
        for group in sorted(groups, key=lambda g: g.group_id):
            for (topic, index), committed in sorted(group.offsets.items()):
                partition = rm.partitions.get((topic, index))
                if partition is None or not partition.is_leader:
                    continue
                lag.add(
                    max(0, partition.high_watermark - committed.offset),
                    consumergroup=group.group_id,
                    topic=topic,
                    partition=str(index),
                )
    out.append(lag)
    return out


def _quorum_families(broker: Broker) -> list[Family]:
    quorum = broker.quorum
    if quorum is None:
        return []
    leader = quorum.leader
    prefix = "kafka_server_raft_metrics_"
    return [
        Family(prefix + "current_leader", GAUGE, "The metadata quorum's leader; -1 if unknown").add(
            -1 if leader.leader_id is None else leader.leader_id
        ),
        Family(prefix + "current_epoch", GAUGE, "The metadata quorum's epoch").add(leader.epoch),
        Family(
            prefix + "high_watermark", GAUGE, "The metadata log's high watermark; -1 if unknown"
        ).add(quorum.high_watermark),
    ]
