"""The broker's configuration table (``server.properties``), with Kafka's names and defaults.

Keys Kafka's own sample files carry but that have no meaning in Brook (thread counts, socket
buffer sizes) are accepted and marked ``inert``; any other unknown key is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from brook.security.authorizer import (
    AUTHORIZER_CLASSES,
    BROOK_AUTHORIZER,
    STANDARD_AUTHORIZER,
    parse_super_users,
)
from brook.security.principal import KafkaPrincipal

from .defs import Config, ConfigDef, ConfigError, ConfigKey, Type, at_least, between, one_of
from .security import SASL_KEYS, SASL_MECHANISMS, SECURITY_PROTOCOLS, SSL_KEYS, check_settings
from .topic import COMPRESSION_TYPES, LONG_MAX, SERVER_DEFAULT

_K = ConfigKey

# The fault-injection delays of experiments (brook/broker/faults.py), dynamic broker configs.
PRODUCE_DELAY_KEY = "brook.fault.produce.delay.ms"
FOLLOWER_FETCH_DELAY_KEY = "brook.fault.follower.fetch.delay.ms"
CLEANER_SWAP_DELAY_KEY = "brook.fault.cleaner.swap.delay.ms"
# KIP-890: partition leaders verify a transaction's first batch with its coordinator (dynamic).
VERIFICATION_KEY = "transaction.partition.verification.enable"
# Test only: the principal of every connection of a listener (brook/broker/listener_principals.py).
TEST_PRINCIPALS_KEY = "brook.test.listener.principals"
# The Prometheus endpoint (brook/metrics/endpoint.py).
METRICS_LISTENER_KEY = "metrics.prometheus.listener"


def _check_super_users(name: str, value: Any) -> None:
    for principal in parse_super_users(value):
        try:
            KafkaPrincipal.parse(principal)
        except ValueError as exc:
            raise ConfigError(f"Invalid value {value} for configuration {name}: {exc}") from None


def _check_test_principals(name: str, value: Any) -> None:
    for entry in value or []:
        listener, sep, principal = entry.partition("=")
        try:
            if not sep or not listener.strip():
                raise ValueError("expected LISTENER=Type:name")
            KafkaPrincipal.parse(principal.strip())
        except ValueError as exc:
            raise ConfigError(f"Invalid value {entry} for configuration {name}: {exc}") from None


def _minus_one_or_at_least(low: int) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and value != -1 and value < low:
            raise ConfigError(
                f"Invalid value {value} for configuration {name}: must be -1 or >= {low}"
            )

    return check


SERVER_CONFIG = ConfigDef(
    "server",
    [
        # node and cluster
        _K(
            "process.roles",
            Type.LIST,
            ["broker", "controller"],
            one_of("broker", "controller"),
            "Roles of this node: broker, controller, or both (combined)",
        ),
        _K("node.id", Type.INT, 1, at_least(0), "This node's id"),
        _K("broker.id", Type.INT, -1, None, "Legacy synonym of node.id (ignored when -1)"),
        _K(
            "cluster.id",
            Type.STRING,
            None,
            None,
            "Cluster id written to meta.properties at first start (generated if unset)",
        ),
        _K(
            "controller.quorum.voters",
            Type.LIST,
            [],
            None,
            "The static controller quorum as id@host:port,...; empty on a lone combined node",
        ),
        _K(
            "controller.quorum.bootstrap.servers",
            Type.LIST,
            [],
            None,
            "Controller endpoints to bootstrap from (a single node needs none)",
            inert=True,
        ),
        _K(
            "controller.quorum.election.timeout.ms",
            Type.INT,
            1000,
            at_least(1),
            "A voter with no leader starts an election after a random time in [T, 2T)",
        ),
        _K(
            "controller.quorum.fetch.timeout.ms",
            Type.INT,
            2000,
            at_least(1),
            "A follower that has not fetched from its leader for this long starts an election",
        ),
        _K(
            "controller.quorum.election.backoff.max.ms",
            Type.INT,
            1000,
            at_least(1),
            "Longest pause of a candidate between two elections",
        ),
        _K(
            "controller.quorum.request.timeout.ms",
            Type.INT,
            2000,
            at_least(1),
            "Timeout of a Raft request to another voter",
        ),
        _K(
            "controller.quorum.retry.backoff.ms",
            Type.INT,
            20,
            at_least(0),
            "Pause before a failed Raft request to a voter is sent again",
        ),
        _K(
            "controller.quorum.append.linger.ms",
            Type.INT,
            25,
            at_least(0),
            "Kafka's leader batching of metadata records; Brook appends each operation at once",
            inert=True,
        ),
        _K(
            "metadata.log.max.record.bytes.between.snapshots",
            Type.LONG,
            20971520,
            at_least(1),
            "Metadata log bytes applied before the node writes a new metadata snapshot",
        ),
        _K(
            "metadata.log.max.snapshot.interval.ms",
            Type.LONG,
            3600000,
            at_least(0),
            "Longest time between metadata snapshots while records arrive (0: no limit)",
        ),
        _K(
            "metadata.max.retention.bytes",
            Type.LONG,
            104857600,
            at_least(-1),
            "Metadata log kept behind the latest snapshot before older segments are deleted",
        ),
        _K(
            "controller.listener.names",
            Type.LIST,
            ["CONTROLLER"],
            None,
            "Listeners used by the controller quorum",
        ),
        _K(
            "inter.broker.listener.name",
            Type.STRING,
            None,
            None,
            "Listener brokers use to talk to each other: followers fetch from their leaders' "
            "endpoints on it (unset: the first listener a broker registered)",
        ),
        _K(
            "listeners",
            Type.LIST,
            ["PLAINTEXT://127.0.0.1:9092"],
            None,
            "Listeners as NAME://host:port",
        ),
        _K(
            "advertised.listeners",
            Type.LIST,
            None,
            None,
            "Addresses given to clients; defaults to listeners",
        ),
        _K(
            "listener.security.protocol.map",
            Type.LIST,
            ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"],
            None,
            "Listener name to security protocol (PLAINTEXT or SSL); a listener named after a "
            "protocol needs no entry",
        ),
        _K("broker.rack", Type.STRING, None, None, "Rack of this broker"),
        # broker lifecycle (KIP-631)
        _K(
            "broker.heartbeat.interval.ms",
            Type.INT,
            2000,
            at_least(1),
            "How often a broker sends a heartbeat to the active controller",
        ),
        _K(
            "broker.session.timeout.ms",
            Type.INT,
            9000,
            at_least(1),
            "A broker without a heartbeat for this long is fenced by the controller",
        ),
        _K(
            "controlled.shutdown.enable",
            Type.BOOLEAN,
            True,
            None,
            "On SIGTERM, move this broker's leaderships away before it stops",
        ),
        _K(
            "initial.broker.registration.timeout.ms",
            Type.INT,
            60000,
            at_least(1),
            "How long a starting broker tries to register before it gives up",
        ),
        # storage
        _K(
            "log.dirs",
            Type.LIST,
            None,
            None,
            "Data directories; each new partition goes to the one holding the fewest",
        ),
        _K("log.dir", Type.STRING, "/tmp/brook-logs", None, "Data directory when log.dirs unset"),
        _K(
            "metadata.log.dir",
            Type.STRING,
            None,
            None,
            "Where Kafka keeps the metadata log; Brook keeps it in the first log directory",
            inert=True,
        ),
        _K("log.segment.bytes", Type.INT, 1073741824, at_least(14), "Size of a segment file"),
        _K("log.roll.ms", Type.LONG, None, at_least(1), "Roll a segment after this long"),
        _K("log.roll.hours", Type.INT, 168, at_least(1), "log.roll.ms in hours"),
        _K("log.roll.jitter.ms", Type.LONG, None, at_least(0), "Jitter for segment rolls"),
        _K("log.roll.jitter.hours", Type.INT, 0, at_least(0), "log.roll.jitter.ms in hours"),
        _K("log.retention.ms", Type.LONG, None, at_least(-1), "Delete segments older than this"),
        _K("log.retention.minutes", Type.INT, None, at_least(-1), "log.retention.ms in minutes"),
        _K("log.retention.hours", Type.INT, 168, at_least(-1), "log.retention.ms in hours"),
        _K("log.retention.bytes", Type.LONG, -1, None, "Largest partition size; -1 = unlimited"),
        _K(
            "log.retention.check.interval.ms",
            Type.LONG,
            300000,
            at_least(1),
            "How often retention runs",
        ),
        _K(
            "log.segment.delete.delay.ms",
            Type.LONG,
            60000,
            at_least(0),
            "Delay before deleted segment files are removed",
        ),
        _K(
            "log.flush.interval.messages",
            Type.LONG,
            LONG_MAX,
            at_least(1),
            "fsync a partition after this many messages",
        ),
        _K(
            "log.flush.interval.ms",
            Type.LONG,
            None,
            at_least(0),
            "fsync a partition when its oldest unflushed message is this old",
        ),
        _K(
            "log.flush.scheduler.interval.ms",
            Type.LONG,
            LONG_MAX,
            at_least(0),
            "How often the flusher checks; also log.flush.interval.ms when that is unset",
        ),
        _K(
            "log.flush.offset.checkpoint.interval.ms",
            Type.INT,
            60000,
            at_least(0),
            "How often the recovery point is checkpointed",
        ),
        _K(
            "replica.high.watermark.checkpoint.interval.ms",
            Type.LONG,
            5000,
            at_least(1),
            "How often high watermarks are checkpointed",
        ),
        _K("log.index.interval.bytes", Type.INT, 4096, at_least(0), "Bytes between index entries"),
        _K("log.index.size.max.bytes", Type.INT, 10485760, at_least(4), "Largest index size"),
        _K(
            "num.recovery.threads.per.data.dir",
            Type.INT,
            8,
            at_least(1),
            "Threads per log directory that flush the logs at a clean shutdown (logs load "
            "one after the other at startup). Kafka's default is 1; the fsyncs of thousands of "
            "small files wait on the disk, not the CPU, so Brook's is 8",
        ),
        _K(
            "brook.log.max.open.files",
            Type.INT,
            -1,
            _minus_one_or_at_least(1),
            "Descriptors the segment and index files of all logs may hold at once; the least "
            "recently used are closed and reopened on demand. -1 sizes it from the process's "
            "RLIMIT_NOFILE: half of what is left after 64 reserved, the other half being for "
            "connections",
        ),
        _K(
            "log.cleanup.policy",
            Type.LIST,
            ["delete"],
            one_of("delete", "compact"),
            "Default cleanup.policy",
        ),
        _K(
            "log.cleaner.delete.retention.ms",
            Type.LONG,
            86400000,
            at_least(0),
            "Default delete.retention.ms",
        ),
        # the log cleaner (brook/log/log_cleaner.py)
        _K(
            "log.cleaner.enable",
            Type.BOOLEAN,
            True,
            None,
            "Run the log cleaner, which compacts the topics with cleanup.policy=compact "
            "(__consumer_offsets among them); without it they grow without end",
        ),
        _K(
            "log.cleaner.threads",
            Type.INT,
            1,
            at_least(0),
            "Threads that clean logs, each one log at a time, off the event loop",
        ),
        _K(
            "log.cleaner.backoff.ms",
            Type.LONG,
            15000,
            at_least(0),
            "How long a cleaner thread sleeps when no log needs cleaning",
        ),
        _K(
            "log.cleaner.dedupe.buffer.size",
            Type.LONG,
            134217728,
            None,
            "Memory the cleaner threads' offset maps (key -> latest offset) may take, shared "
            "between the threads; a log with more distinct keys in its dirty part than a map "
            "holds is cleaned in several passes",
        ),
        _K(
            "log.cleaner.io.buffer.size",
            Type.INT,
            524288,
            at_least(0),
            "Read buffers of the cleaner threads, shared between them (grown for a larger batch)",
        ),
        _K(
            "log.cleaner.io.buffer.load.factor",
            Type.DOUBLE,
            0.9,
            None,
            "How full an offset map may get before the cleaning pass stops mapping keys",
        ),
        _K(
            "log.cleaner.io.max.bytes.per.second",
            Type.DOUBLE,
            1.7976931348623157e308,
            None,
            "The cleaner threads together read and write at most this many bytes a second",
        ),
        _K(
            "log.cleaner.min.cleanable.ratio",
            Type.DOUBLE,
            0.5,
            between(0, 1),
            "Default min.cleanable.dirty.ratio",
        ),
        _K(
            "log.cleaner.min.compaction.lag.ms",
            Type.LONG,
            0,
            at_least(0),
            "Default min.compaction.lag.ms",
        ),
        _K(
            "log.cleaner.max.compaction.lag.ms",
            Type.LONG,
            LONG_MAX,
            at_least(1),
            "Default max.compaction.lag.ms",
        ),
        _K(
            "log.message.timestamp.type",
            Type.STRING,
            "CreateTime",
            one_of("CreateTime", "LogAppendTime"),
            "Default message.timestamp.type",
        ),
        _K(
            "log.message.timestamp.before.max.ms",
            Type.LONG,
            LONG_MAX,
            at_least(0),
            "Default message.timestamp.before.max.ms",
        ),
        _K(
            "log.message.timestamp.after.max.ms",
            Type.LONG,
            LONG_MAX,
            at_least(0),
            "Default message.timestamp.after.max.ms",
        ),
        _K("log.preallocate", Type.BOOLEAN, False, None, "Default preallocate", inert=True),
        _K(
            "compression.type",
            Type.STRING,
            "producer",
            one_of(*COMPRESSION_TYPES),
            "Default compression.type",
        ),
        _K("message.max.bytes", Type.INT, 1048588, at_least(0), "Largest record batch accepted"),
        # topics
        _K("num.partitions", Type.INT, 1, at_least(1), "Default partitions of a new topic"),
        _K(
            "max.broker.partitions",
            Type.INT,
            100_000,  # twice what docs/performance.md measures one node hosting
            at_least(1),
            "Partition replicas a broker may host, internal topics included (KIP-578's name); "
            "CreateTopics, CreatePartitions, auto-creation and reassignments that would exceed "
            "it fail with POLICY_VIOLATION",
        ),
        _K(
            "default.replication.factor",
            Type.INT,
            1,
            at_least(1),
            "Default replication factor of a new topic",
        ),
        _K("min.insync.replicas", Type.INT, 1, at_least(1), "Default min.insync.replicas"),
        _K(
            "auto.create.topics.enable",
            Type.BOOLEAN,
            True,
            None,
            "Create a topic when Metadata or Produce names an unknown one",
        ),
        _K("delete.topic.enable", Type.BOOLEAN, True, None, "Allow DeleteTopics"),
        _K(
            "unclean.leader.election.enable",
            Type.BOOLEAN,
            False,
            None,
            "Default unclean.leader.election.enable",
        ),
        # leader balancing (brook/metadata/leader_balance.py)
        _K(
            "auto.leader.rebalance.enable",
            Type.BOOLEAN,
            True,
            None,
            "The active controller moves leadership back to each partition's preferred replica "
            "(the first in its assignment) when that replica is in the ISR and can lead",
        ),
        _K(
            "leader.imbalance.check.interval.seconds",
            Type.LONG,
            300,
            at_least(1),
            "How often the active controller checks for partitions not led by their preferred "
            "replica",
        ),
        _K(
            "leader.imbalance.per.broker.percentage",
            Type.INT,
            10,
            None,
            "Ignored, as by Kafka's KRaft controller: every imbalanced partition is balanced",
            inert=True,
        ),
        # replication
        _K(
            "replica.lag.time.max.ms",
            Type.LONG,
            30000,
            at_least(0),
            "A follower that has not caught up to the leader's log end for this long leaves "
            "the ISR; the leader checks every half of it",
        ),
        _K(
            "replica.fetch.max.bytes",
            Type.INT,
            1048576,
            at_least(0),
            "Bytes a follower asks of each partition in a fetch (PartitionMaxBytes); the first "
            "batch comes whole even when larger",
        ),
        _K(
            "replica.fetch.response.max.bytes",
            Type.INT,
            10485760,
            at_least(0),
            "Bytes a follower asks for in a whole fetch response (MaxBytes)",
        ),
        _K(
            "replica.fetch.wait.max.ms",
            Type.INT,
            500,
            at_least(0),
            "Longest a leader holds a follower's fetch waiting for data (MaxWait)",
        ),
        _K(
            "replica.fetch.min.bytes",
            Type.INT,
            1,
            None,
            "Bytes a leader waits for before answering a follower's fetch (MinBytes)",
        ),
        _K(
            "replica.fetch.backoff.ms",
            Type.INT,
            1000,
            at_least(0),
            "How long a follower waits before fetching a partition again after an error",
        ),
        _K(
            "num.replica.fetchers",
            Type.INT,
            1,
            at_least(1),
            "Fetchers (connections) per source broker; partitions are spread over them",
        ),
        # network
        _K(
            "socket.request.max.bytes",
            Type.INT,
            104857600,
            at_least(1),
            "Largest request frame accepted; larger ones close the connection",
        ),
        _K(
            "max.connections",
            Type.INT,
            -1,
            _minus_one_or_at_least(1),
            "Client connections the node holds at once; more are closed as they come (Kafka "
            "makes them wait). -1: what RLIMIT_NOFILE leaves after 64 reserved descriptors "
            "and brook.log.max.open.files",
        ),
        _K(
            "queued.max.request.bytes",
            Type.LONG,
            268435456,
            None,
            "Bytes of requests held at once, from their size prefix until handled; past it, "
            "requests larger than 256 KiB wait and their connections stop reading. <= 0: "
            "unbounded (Kafka's default is -1; Brook bounds it, and only allocates a request "
            "as its bytes arrive). Must be at least socket.request.max.bytes when set",
        ),
        _K(
            "connections.max.idle.ms",
            Type.LONG,
            600000,
            None,
            "Close connections idle for this long",
        ),
        _K(
            "request.timeout.ms",
            Type.INT,
            30000,
            at_least(0),
            "Timeout of the broker's own requests to other nodes (none yet)",
            inert=True,
        ),
        _K(
            "max.incremental.fetch.session.cache.slots",
            Type.INT,
            1000,
            at_least(0),
            "Fetch sessions (KIP-227) the broker caches",
        ),
        _K(
            "fetch.max.bytes",
            Type.INT,
            57671680,
            at_least(1024),
            "Largest fetch response the broker builds (caps each request's max_bytes)",
        ),
        # groups and offsets
        _K(
            "offsets.topic.num.partitions",
            Type.INT,
            50,
            at_least(1),
            "Partitions of __consumer_offsets",
        ),
        _K(
            "offsets.topic.replication.factor",
            Type.SHORT,
            3,
            at_least(1),
            "Replication factor of __consumer_offsets; the topic is not created (groups wait, "
            "COORDINATOR_NOT_AVAILABLE) until this many brokers are alive",
        ),
        _K(
            "offsets.topic.segment.bytes",
            Type.INT,
            104857600,
            at_least(1),
            "Segment size of __consumer_offsets",
        ),
        _K(
            "offsets.retention.minutes",
            Type.INT,
            10080,
            at_least(1),
            "How long committed offsets of an empty group are kept",
        ),
        _K(
            "offsets.retention.check.interval.ms",
            Type.LONG,
            600000,
            at_least(1),
            "How often expired offsets are removed",
        ),
        _K("offset.metadata.max.bytes", Type.INT, 4096, None, "Largest commit metadata"),
        _K(
            "transaction.state.log.num.partitions",
            Type.INT,
            50,
            at_least(1),
            "Partitions of __transaction_state",
        ),
        _K(
            "transaction.state.log.replication.factor",
            Type.SHORT,
            3,
            at_least(1),
            "Replication factor of __transaction_state; the topic is not created (transactional "
            "producers wait, COORDINATOR_NOT_AVAILABLE) until this many brokers are alive",
        ),
        _K(
            "transaction.state.log.min.isr",
            Type.INT,
            2,
            at_least(1),
            "min.insync.replicas of __transaction_state",
        ),
        _K(
            "transaction.state.log.segment.bytes",
            Type.INT,
            104857600,
            at_least(1),
            "Segment size of __transaction_state",
        ),
        _K(
            "transaction.max.timeout.ms",
            Type.INT,
            900000,
            at_least(1),
            "Largest transaction timeout a producer may ask for (INVALID_TRANSACTION_TIMEOUT "
            "above it)",
        ),
        _K(
            "transactional.id.expiration.ms",
            Type.INT,
            604800000,
            at_least(1),
            "How long a transactional id with no transaction is kept",
        ),
        _K(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            Type.INT,
            10000,
            at_least(1),
            "How often transactions past their timeout are aborted",
        ),
        _K(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            Type.INT,
            3600000,
            at_least(1),
            "How often expired transactional ids are removed",
        ),
        _K(
            VERIFICATION_KEY,
            Type.BOOLEAN,
            True,
            None,
            "Before a partition leader writes the first transactional batch of a producer's "
            "transaction, ask the transaction coordinator whether the partition is in that "
            "transaction (KIP-890); a batch for a partition not in it is refused "
            "(INVALID_TXN_STATE) instead of opening a transaction nobody ends; a dynamic broker "
            "config, changed at run time through IncrementalAlterConfigs",
        ),
        _K(
            "group.initial.rebalance.delay.ms",
            Type.INT,
            3000,
            None,
            "Delay of the first rebalance of a new group",
        ),
        _K("group.min.session.timeout.ms", Type.INT, 6000, None, "Smallest session timeout"),
        _K("group.max.session.timeout.ms", Type.INT, 1800000, None, "Largest session timeout"),
        _K("group.max.size", Type.INT, 2**31 - 1, at_least(1), "Most members in a group"),
        # metrics
        _K(
            METRICS_LISTENER_KEY,
            Type.STRING,
            None,
            lambda name, value: parse_metrics_listener(name, value),
            "Where the Prometheus endpoint listens, as http://host:port (metrics at /metrics); "
            "unset or empty: no endpoint",
        ),
        # experiments
        _K(
            PRODUCE_DELAY_KEY,
            Type.INT,
            0,
            at_least(0),
            "Fault injection: delay every produce response by this much (for experiments); "
            "a dynamic broker config, changed at run time through IncrementalAlterConfigs",
        ),
        _K(
            CLEANER_SWAP_DELAY_KEY,
            Type.INT,
            0,
            at_least(0),
            "Fault injection: the log cleaner waits this long with each cleaned segment "
            "written and synced, before swapping it in (for crash tests); static",
        ),
        _K(
            FOLLOWER_FETCH_DELAY_KEY,
            Type.INT,
            0,
            at_least(0),
            "Fault injection: the replica fetcher waits this long before each fetch it sends as "
            "a follower (for experiments); a dynamic broker config, like the produce delay",
        ),
        # authorization (brook/security/authorizer.py)
        _K(
            "authorizer.class.name",
            Type.CLASS,
            "",
            one_of("", *AUTHORIZER_CLASSES),
            "The authorizer: empty for none (every request allowed), or Kafka's "
            f"{STANDARD_AUTHORIZER} (also accepted as {BROOK_AUTHORIZER}), whose ACLs "
            "live in the metadata log",
        ),
        _K(
            "super.users",
            Type.STRING,
            "",
            _check_super_users,
            "Principals allowed everything by the authorizer, separated by semicolons "
            "(User:admin;User:broker)",
        ),
        _K(
            "allow.everyone.if.no.acl.found",
            Type.BOOLEAN,
            False,
            None,
            "Whether the authorizer allows an operation on a resource no ACL applies to",
        ),
        _K(
            TEST_PRINCIPALS_KEY,
            Type.LIST,
            [],
            _check_test_principals,
            "Test only: LISTENER=Type:name pairs "
            "giving every connection of a PLAINTEXT listener that principal instead of "
            "User:ANONYMOUS",
        ),
        # TLS and SASL (brook/config/security.py; per listener as listener.name.<l>.<key>)
        *SSL_KEYS,
        *SASL_KEYS,
        # accepted for compatibility, no effect
        *(
            _K(name, t, default, None, "Accepted for compatibility; no effect in Brook", inert=True)
            for name, t, default in [
                ("num.network.threads", Type.INT, 3),
                ("num.io.threads", Type.INT, 8),
                ("socket.send.buffer.bytes", Type.INT, 102400),
                ("socket.receive.buffer.bytes", Type.INT, 102400),
                ("share.coordinator.state.topic.replication.factor", Type.SHORT, 3),
                ("share.coordinator.state.topic.min.isr", Type.SHORT, 2),
                ("group.coordinator.rebalance.protocols", Type.LIST, ["classic"]),
            ]
        ),
    ],
)


# What a node run without a config file (``make run``) starts from: the values Kafka's
# quickstart config/server.properties sets for a single node, below any --override.
QUICKSTART_DEFAULTS: dict[str, str] = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}


LISTENER_PREFIX = "listener.name."
# Keys a listener may override (Kafka's listener-prefixed configs this node reads).
_LISTENER_KEYS = frozenset(
    [key.name for key in SSL_KEYS]
    + ["sasl.enabled.mechanisms", "sasl.server.max.receive.size", "connections.max.reauth.ms"]
)
# listener.name.<l>.<mechanism>.<key>: the JAAS configuration of one mechanism.
_MECHANISM_KEYS = frozenset(["sasl.jaas.config"])


def parse_server_config(props: dict[str, Any]) -> Config:
    plain = {k: v for k, v in props.items() if not k.startswith(LISTENER_PREFIX)}
    cfg = SERVER_CONFIG.parse(plain)
    cfg.prefixed = _parse_listener_overrides(
        {k: v for k, v in props.items() if k.startswith(LISTENER_PREFIX)}
    )
    for listener in cfg["listeners"]:
        parse_listener(listener)
    for listener in cfg["advertised.listeners"] or []:
        parse_listener(listener)
    if not cfg["listeners"]:
        raise ConfigError("Invalid value for configuration listeners: at least one is required")
    _check_security_protocols(cfg)
    _check_roles(cfg)
    _check_queued_bytes(cfg)
    _check_cleaner_buffer(cfg)
    return cfg


def _check_cleaner_buffer(cfg: Config) -> None:
    """Kafka's rule: each cleaner thread's offset map gets at least 1 MiB."""
    threads, size = cfg["log.cleaner.threads"], cfg["log.cleaner.dedupe.buffer.size"]
    if cfg["log.cleaner.enable"] and threads > 0 and size / threads <= 1024 * 1024:
        raise ConfigError(
            f"Invalid value {size} for configuration log.cleaner.dedupe.buffer.size: must be "
            f"at least 1MB per cleaner thread ({threads} threads)"
        )


def _check_queued_bytes(cfg: Config) -> None:
    """Kafka's rule: a pool smaller than the largest request could never admit it."""
    queued, largest = cfg["queued.max.request.bytes"], cfg["socket.request.max.bytes"]
    if 0 < queued < largest:
        raise ConfigError(
            f"Invalid value {queued} for configuration queued.max.request.bytes: must be "
            f"<= 0 (unbounded) or at least socket.request.max.bytes ({largest})"
        )


SERVED_PROTOCOLS = SECURITY_PROTOCOLS
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
SERVED_MECHANISMS = SASL_MECHANISMS


def _parse_listener_overrides(props: dict[str, Any]) -> dict[str, Any]:
    """``listener.name.<l>.<key>`` entries, each value checked as ``<key>`` is; the listener
    name is kept in lower case, as Kafka's ``ListenerName.configPrefix``."""
    parsed: dict[str, Any] = {}
    for full, raw in props.items():
        listener, dot, key = full[len(LISTENER_PREFIX) :].partition(".")
        mechanism, _, mech_key = key.partition(".")
        if mech_key in _MECHANISM_KEYS and mechanism.upper() in _MECHANISM_PREFIXES:
            key = f"{mechanism.lower()}.{mech_key}"
            value = SERVER_CONFIG.parse_one(mech_key, raw)
        elif dot and listener and key in _LISTENER_KEYS:
            value = SERVER_CONFIG.parse_one(key, raw)
        else:
            raise ConfigError(f"Unknown server configuration '{full}'")
        parsed[f"{LISTENER_PREFIX}{listener.lower()}.{key}"] = value
    return parsed


# Mechanisms whose JAAS configuration a listener may carry (Kafka's names, lower case in keys).
_MECHANISM_PREFIXES = frozenset([*SASL_MECHANISMS, "GSSAPI", "OAUTHBEARER"])


def jaas_config(cfg: Config, listener: str, mechanism: str) -> str | None:
    """``listener.name.<listener>.<mechanism>.sasl.jaas.config``, as Kafka's broker reads
    its server-side JAAS configuration."""
    return cfg.prefixed.get(
        f"{LISTENER_PREFIX}{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    )


def listener_value(cfg: Config, listener: str, key: str) -> Any:
    """``key`` as ``listener`` sees it: its ``listener.name.<l>.`` override, else the value."""
    full = f"{LISTENER_PREFIX}{listener.lower()}.{key}"
    return cfg.prefixed[full] if full in cfg.prefixed else cfg[key]


def security_protocols(cfg: Config) -> dict[str, str]:
    """Listener name -> security protocol, from listener.security.protocol.map (a listener
    named after a protocol needs no entry)."""
    protocols = {}
    for entry in cfg["listener.security.protocol.map"]:
        name, sep, protocol = entry.partition(":")
        if not sep:
            raise ConfigError(
                f"Invalid value {entry} for configuration listener.security.protocol.map: "
                "expected NAME:PROTOCOL"
            )
        protocol = protocol.strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"Invalid value {entry} for configuration listener.security.protocol.map: "
                f"{protocol} is not one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        protocols[name.strip().upper()] = protocol
    for text in cfg["listeners"]:
        name = parse_listener(text)[0]
        if name not in protocols and name in SECURITY_PROTOCOLS:
            protocols[name] = name
    return protocols


def _check_security_protocols(cfg: Config) -> None:
    """Every listener has a protocol this node serves; refused otherwise rather than served
    in plain text."""
    protocols = security_protocols(cfg)
    for text in cfg["listeners"]:
        name = parse_listener(text)[0]
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(
                f"Invalid value {text} for configuration listeners: listener {name} has no "
                "security protocol in listener.security.protocol.map"
            )
        if protocol not in SERVED_PROTOCOLS:
            raise ConfigError(
                f"Invalid value {text} for configuration listeners: listener {name} uses "
                f"{protocol}, and Brook serves {' and '.join(SERVED_PROTOCOLS)} only (see "
                "listener.security.protocol.map)"
            )
        if protocol in TLS_PROTOCOLS:
            check_settings(
                lambda key, name=name: listener_value(cfg, name, key),
                f"listener {name}",
                server=True,
            )
        if protocol in SASL_PROTOCOLS:
            _check_sasl_listener(cfg, name)
    if cfg["inter.broker.listener.name"] and "security.inter.broker.protocol" in cfg.explicit:
        raise ConfigError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should "
            "be set."
        )
    _check_node_links(cfg, protocols)


def inter_broker_listener(cfg: Config) -> str | None:
    """The listener brokers use to reach each other: inter.broker.listener.name, else the
    listener named by an explicit security.inter.broker.protocol, else the first broker
    listener."""
    if cfg["inter.broker.listener.name"]:
        return str(cfg["inter.broker.listener.name"]).upper()
    if "security.inter.broker.protocol" in cfg.explicit:
        return str(cfg["security.inter.broker.protocol"]).upper()
    controller = {n.upper() for n in cfg["controller.listener.names"]}
    names = [parse_listener(text)[0] for text in cfg["listeners"]]
    return next((n for n in names if n not in controller), None)


def _check_node_links(cfg: Config, protocols: dict[str, str]) -> None:
    """A node of a cluster logs in to the others' controller and inter-broker listeners with
    the username and password of that listener's JAAS configuration for the link's mechanism
    (sasl.mechanism.controller.protocol, sasl.mechanism.inter.broker.protocol), as Kafka's
    brokers do: without them the cluster could not talk to itself, so the start is refused."""
    from brook.security.jaas import parse_jaas

    if not voters(cfg) or is_sole_voter(cfg):
        return
    controller = (cfg["controller.listener.names"] or [None])[0]
    links = (
        (controller, "sasl.mechanism.controller.protocol"),
        (inter_broker_listener(cfg), "sasl.mechanism.inter.broker.protocol"),
    )
    for name, key in links:
        if name is None or protocols.get(name.upper(), "PLAINTEXT") not in SASL_PROTOCOLS:
            continue
        mechanism = str(cfg[key]).upper()
        where = f"listener.name.{name.lower()}.{mechanism.lower()}.sasl.jaas.config"
        text = jaas_config(cfg, name, mechanism)
        entry = parse_jaas(text, where) if text else None
        if mechanism not in SASL_MECHANISMS or entry is None or not entry.username:
            raise ConfigError(
                f"listener {name} uses {protocols[name.upper()]}: this node logs in to the "
                f"other nodes' {name} listeners with {key}={mechanism} and the username and "
                f"password of {where}"
            )


def _check_sasl_listener(cfg: Config, name: str) -> None:
    """Kafka's start-up checks of a SASL listener: every enabled mechanism is one this node
    serves, and PLAIN has its JAAS configuration (SCRAM's users live in the metadata)."""
    mechanisms = listener_value(cfg, name, "sasl.enabled.mechanisms")
    if not mechanisms:
        raise ConfigError(f"listener {name} uses SASL: sasl.enabled.mechanisms is empty")
    for mechanism in mechanisms:
        if mechanism not in SERVED_MECHANISMS:
            raise ConfigError(
                f"Invalid value {mechanism} for configuration sasl.enabled.mechanisms (listener "
                f"{name}): Brook serves {', '.join(SERVED_MECHANISMS)}"
            )
    if "PLAIN" in mechanisms and jaas_config(cfg, name, "PLAIN") is None:
        raise ConfigError(
            f"listener {name} enables PLAIN and has no JAAS configuration: set "
            f"listener.name.{name.lower()}.plain.sasl.jaas.config"
        )


def parse_voters(entries: list[str]) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters`` (``id@host:port,...``) -> {id: (host, port)}."""
    voters: dict[int, tuple[str, int]] = {}
    for entry in entries:
        ident, at, address = entry.strip().partition("@")
        host, colon, port = address.rpartition(":")
        if not at or not colon or not ident.strip().isdigit() or not port.isdigit() or not host:
            raise ConfigError(
                f"Invalid value {entry} for configuration controller.quorum.voters: expected "
                "id@host:port"
            )
        voters[int(ident)] = (host.strip("[]"), int(port))
    return voters


def voters(cfg: Config) -> dict[int, tuple[str, int]]:
    """The static voter set; empty on a lone combined node (it is its own quorum of one)."""
    return parse_voters(cfg["controller.quorum.voters"])


def roles(cfg: Config) -> frozenset[str]:
    return frozenset(cfg["process.roles"])


def is_sole_voter(cfg: Config) -> bool:
    """A node that is the whole quorum by itself (``make run``): it needs no controller
    listener and formats its own storage at first start."""
    v = voters(cfg)
    return "controller" in roles(cfg) and (not v or set(v) == {node_id(cfg)})


def _check_roles(cfg: Config) -> None:
    """Kafka's KRaft checks on process.roles, the voters and the controller listeners."""
    given = roles(cfg)
    if not given:
        raise ConfigError("Invalid value for configuration process.roles: at least one role")
    me = node_id(cfg)
    quorum = voters(cfg)
    controller_names = {n.upper() for n in cfg["controller.listener.names"]}
    listener_names = [parse_listener(text)[0] for text in cfg["listeners"]]
    if "controller" in given:
        if quorum and me not in quorum:
            raise ConfigError(
                f"Invalid value {','.join(cfg['controller.quorum.voters'])} for configuration "
                f"controller.quorum.voters: node.id {me} of a node with the controller role "
                "must be one of the voters"
            )
        if not controller_names:
            raise ConfigError("controller.listener.names must not be empty on a controller")
        if not is_sole_voter(cfg) and not controller_names & set(listener_names):
            raise ConfigError(
                "controller.listener.names must contain at least one value appearing in the "
                f"'listeners' configuration when running the controller role: "
                f"{','.join(cfg['controller.listener.names'])} is not among "
                f"{','.join(cfg['listeners'])}"
            )
    if "broker" in given and not quorum and "controller" not in given:
        raise ConfigError(
            "controller.quorum.voters must name the controllers of a broker-only node "
            "(process.roles=broker)"
        )
    if given == {"broker"} and controller_names & set(listener_names):
        raise ConfigError(
            "controller.listener.names must not contain a value appearing in the 'listeners' "
            "configuration when running with just the broker role"
        )
    if given == {"controller"}:
        other = [n for n in listener_names if n not in controller_names]
        if other:
            raise ConfigError(
                "The listeners config must only contain controller listeners from "
                f"controller.listener.names when process.roles=controller; {','.join(other)} "
                "is not one"
            )
    broker_listeners = [n for n in listener_names if n not in controller_names]
    if "broker" in given and not broker_listeners and not is_sole_voter(cfg):
        raise ConfigError("listeners must include a broker listener on a broker")


def parse_metrics_listener(name: str, value: str | None) -> tuple[str, int]:
    """``http://host:port`` -> (host, port); port 0 takes a free one. Anything else (another
    scheme, no host or port, a path) is refused with the key's name."""
    if not value:
        return ("", 0)
    scheme, sep, rest = value.partition("://")
    host, colon, port = rest.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if sep == "" or scheme.lower() != "http" or not colon or not host or "/" in rest:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: expected http://host:port"
        )
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(
            f"Invalid value {value} for configuration {name}: the port must be a number "
            "in [0, 65535]"
        )
    return host, int(port)


def parse_listener(text: str) -> tuple[str, str, int]:
    """``NAME://host:port`` -> (NAME, host, port)."""
    name, sep, rest = text.partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or not colon or not name:
        raise ConfigError(
            f"Invalid value {text} for configuration listeners: expected NAME://host:port"
        )
    try:
        port_num = int(port)
    except ValueError:
        raise ConfigError(f"Invalid port in listener {text}: expected a number") from None
    between(0, 65535)("listeners", port_num)
    return name.upper(), host.strip("[]"), port_num


def log_dirs(cfg: Config) -> list[str]:
    return list(cfg["log.dirs"] or [cfg["log.dir"]])


def node_id(cfg: Config) -> int:
    if "node.id" not in cfg.explicit and cfg["broker.id"] >= 0:
        return int(cfg["broker.id"])
    return int(cfg["node.id"])


def topic_defaults(cfg: Config) -> dict[str, Any]:
    """Broker-level defaults for each topic config, resolving Kafka's hour/minute fallbacks."""
    resolved = dict(cfg)
    if resolved["log.roll.ms"] is None:
        resolved["log.roll.ms"] = cfg["log.roll.hours"] * 3600_000
    if resolved["log.roll.jitter.ms"] is None:
        resolved["log.roll.jitter.ms"] = cfg["log.roll.jitter.hours"] * 3600_000
    if resolved["log.retention.ms"] is None:
        if cfg["log.retention.minutes"] is not None:
            minutes = cfg["log.retention.minutes"]
            resolved["log.retention.ms"] = -1 if minutes < 0 else minutes * 60_000
        else:
            hours = cfg["log.retention.hours"]
            resolved["log.retention.ms"] = -1 if hours < 0 else hours * 3600_000
    if resolved["log.flush.interval.ms"] is None:
        resolved["log.flush.interval.ms"] = cfg["log.flush.scheduler.interval.ms"]
    return {topic_key: resolved[server_key] for topic_key, server_key in SERVER_DEFAULT.items()}
