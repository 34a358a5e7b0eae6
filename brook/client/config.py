"""The client config tables (producer, consumer, admin) with Kafka's property names and defaults.

Keys every client shares are declared once and reused; ``parse_*_config`` apply the cross-key
rules Java's clients apply (idempotence and its prerequisites, delivery.timeout.ms bounds).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from brook.config.defs import (
    NO_DEFAULT,
    Config,
    ConfigDef,
    ConfigError,
    ConfigKey,
    Type,
    at_least,
    between,
    one_of,
)
from brook.config.security import SSL_KEYS

__all__ = [
    "ADMIN_CONFIG",
    "CONSUMER_CONFIG",
    "PRODUCER_CONFIG",
    "acks_value",
    "parse_admin_config",
    "parse_bootstrap",
    "parse_consumer_config",
    "parse_producer_config",
    "resolve_deserializer",
    "resolve_serializer",
]

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")

_K = ConfigKey


# ---------------------------------------------------------------------------------------------
# Validators and value helpers
# ---------------------------------------------------------------------------------------------


def parse_bootstrap(
    servers: Iterable[str], key: str = "bootstrap.servers"
) -> list[tuple[str, int]]:
    """``["host:port", "[::1]:9092"]`` -> ``[(host, port), ...]``; a bad entry names the key."""
    out: list[tuple[str, int]] = []
    for entry in servers:
        text = entry.strip()
        if "://" in text:
            # Kafka accepts listener-style entries such as PLAINTEXT://host:port.
            text = text.split("://", 1)[1]
        host, sep, port_text = text.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ConfigError(
                f"Invalid url in {key}: {entry!r}: expected host:port with a port in 1-65535"
            )
        out.append((host, int(port_text)))
    return out


def _bootstrap_validator(name: str, value: Any) -> None:
    if value is None or not value:
        raise ConfigError(
            f"Invalid value {value!r} for configuration {name}: "
            "expected a non-empty list of host:port"
        )
    parse_bootstrap(value, name)


def _at_least_or_minus_one(low: int) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and value != -1 and value < low:
            raise ConfigError(
                f"Invalid value {value} for configuration {name}: must be -1 or >= {low}"
            )

    return check


def _level(low: int, high: int) -> Callable[[str, Any], None]:
    """Compression levels: a value in [low, high], or Kafka's 'codec default' marker."""

    def check(name: str, value: Any) -> None:
        if value is not None and not low <= value <= high:
            raise ConfigError(
                f"Invalid value {value} for configuration {name}: must be in [{low}, {high}]"
            )

    return check


def _non_empty_list(name: str, value: Any) -> None:
    if value is not None and not value:
        raise ConfigError(f"Invalid value {value!r} for configuration {name}: must not be empty")


def _non_empty_string(name: str, value: Any) -> None:
    if value is not None and not str(value).strip():
        raise ConfigError(
            f"Invalid value {value!r} for configuration {name}: String must be non-empty"
        )


def _partitioner_validator(name: str, value: Any) -> None:
    # Loading happens in the producer (it may instantiate the class); only the form is checked.
    if value is None or isinstance(value, str | type):
        return
    if callable(getattr(value, "partition", None)):
        return
    raise ConfigError(
        f"Invalid value {value!r} for configuration {name}: expected None, a class, an instance "
        "with partition(), or an import path 'module:Class'"
    )


# Kafka's own (de)serializer class names, so a properties file written for Java still loads.
def _utf8_encode(value: Any) -> bytes | None:
    return None if value is None else str(value).encode("utf-8")


def _utf8_decode(data: bytes | None) -> str | None:
    return None if data is None else bytes(data).decode("utf-8")


def _identity(value: Any) -> Any:
    return value


_KAFKA_SERDE = "org.apache.kafka.common.serialization."
_SERIALIZERS: dict[str, Callable[[Any], Any]] = {
    _KAFKA_SERDE + "StringSerializer": _utf8_encode,
    _KAFKA_SERDE + "ByteArraySerializer": _identity,
    _KAFKA_SERDE + "BytesSerializer": _identity,
    _KAFKA_SERDE + "ByteBufferSerializer": _identity,
}
_DESERIALIZERS: dict[str, Callable[[Any], Any]] = {
    _KAFKA_SERDE + "StringDeserializer": _utf8_decode,
    _KAFKA_SERDE + "ByteArrayDeserializer": _identity,
    _KAFKA_SERDE + "BytesDeserializer": _identity,
    _KAFKA_SERDE + "ByteBufferDeserializer": _identity,
}


def _resolve_callable(
    name: str, value: Any, known: Mapping[str, Callable[[Any], Any]]
) -> Callable[[Any], Any] | None:
    if value is None or callable(value):
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if text in known:
            return known[text]
        module_name, sep, attr = text.partition(":")
        if sep and module_name and attr:
            try:
                obj: Any = importlib.import_module(module_name)
                for part in attr.split("."):
                    obj = getattr(obj, part)
            except (ImportError, AttributeError) as exc:
                raise ConfigError(
                    f"Invalid value {value!r} for configuration {name}: cannot load it: {exc}"
                ) from None
            if callable(obj):
                return obj
    raise ConfigError(
        f"Invalid value {value!r} for configuration {name}: expected a callable, None, "
        f"an import path 'module:function', or one of {', '.join(sorted(known))}"
    )


def resolve_serializer(name: str, value: Any) -> Callable[[Any], Any] | None:
    """The callable behind key.serializer / value.serializer (None: values must be bytes)."""
    return _resolve_callable(name, value, _SERIALIZERS)


def resolve_deserializer(name: str, value: Any) -> Callable[[Any], Any] | None:
    """The callable behind key.deserializer / value.deserializer (None: bytes as received)."""
    return _resolve_callable(name, value, _DESERIALIZERS)


def _serializer_validator(name: str, value: Any) -> None:
    resolve_serializer(name, value)


def _deserializer_validator(name: str, value: Any) -> None:
    resolve_deserializer(name, value)


def acks_value(acks: str | int) -> int:
    """``acks`` as the int a Produce request carries: all -> -1."""
    text = str(acks).strip().lower()
    return -1 if text == "all" else int(text)


# ---------------------------------------------------------------------------------------------
# Keys shared by every client
# ---------------------------------------------------------------------------------------------

BOOTSTRAP_SERVERS = _K(
    "bootstrap.servers",
    Type.LIST,
    NO_DEFAULT,
    _bootstrap_validator,
    "host:port pairs used to reach the cluster the first time; the client then uses the "
    "brokers the cluster metadata lists. Each is tried in turn until one answers.",
)
CLIENT_ID = _K(
    "client.id",
    Type.STRING,
    "",
    None,
    "Sent with every request so brokers can tell clients apart in logs and quotas; "
    "empty = generated (producer-N, consumer-N, adminclient-N).",
)
SECURITY_PROTOCOL = _K(
    "security.protocol",
    Type.STRING,
    "PLAINTEXT",
    one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", case_insensitive=True),
    "Protocol used to talk to brokers: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
)
# TLS: Java's names (brook/config/security.py) and librdkafka's PEM file names.
_CLIENT_SSL = [
    k for k in SSL_KEYS if k.name not in ("ssl.client.auth", "ssl.principal.mapping.rules")
]
SECURITY_KEYS = [
    *_CLIENT_SSL,
    _K(
        "ssl.ca.location",
        Type.STRING,
        None,
        None,
        "librdkafka's name: PEM file of the CA certificates that sign the brokers' certificates",
    ),
    _K(
        "ssl.certificate.location",
        Type.STRING,
        None,
        None,
        "librdkafka's name: PEM file of this client's certificate chain (mTLS)",
    ),
    _K(
        "ssl.key.location",
        Type.STRING,
        None,
        None,
        "librdkafka's name: PEM file of this client's private key",
    ),
    _K(
        "sasl.mechanism",
        Type.STRING,
        "GSSAPI",
        None,
        "SASL mechanism (Java's name): PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
    ),
    _K("sasl.mechanisms", Type.STRING, None, None, "librdkafka's name for sasl.mechanism"),
    _K("sasl.username", Type.STRING, None, None, "SASL user name (librdkafka's name)"),
    _K("sasl.password", Type.PASSWORD, None, None, "SASL password (librdkafka's name)"),
    _K(
        "sasl.jaas.config",
        Type.PASSWORD,
        None,
        None,
        'Java\'s login: PlainLoginModule or ScramLoginModule with username="..." password="..."',
    ),
]
CLIENT_DNS_LOOKUP = _K(
    "client.dns.lookup",
    Type.STRING,
    "use_all_dns_ips",
    one_of("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"),
    "How host names are resolved; connections try every address the name resolves to.",
    inert=True,
)
REQUEST_TIMEOUT_MS = _K(
    "request.timeout.ms",
    Type.INT,
    30000,
    at_least(0),
    "How long to wait for the response to one request before failing it with a retriable "
    "REQUEST_TIMED_OUT error.",
)
METADATA_MAX_AGE_MS = _K(
    "metadata.max.age.ms",
    Type.LONG,
    300000,
    at_least(0),
    "Refresh the cluster metadata at least this often, even when nothing went wrong, so new "
    "brokers and partitions are discovered.",
)
RETRIES = _K(
    "retries",
    Type.INT,
    INT_MAX,
    between(0, INT_MAX),
    "How many times a request that failed with a retriable error is sent again "
    "(bounded in time by delivery.timeout.ms / default.api.timeout.ms).",
)
RETRY_BACKOFF_MS = _K(
    "retry.backoff.ms",
    Type.LONG,
    100,
    at_least(0),
    "Initial wait before retrying a failed request; doubles per attempt with 20% jitter up to "
    "retry.backoff.max.ms.",
)
RETRY_BACKOFF_MAX_MS = _K(
    "retry.backoff.max.ms",
    Type.LONG,
    1000,
    at_least(0),
    "Upper bound of the exponential retry backoff.",
)
RECONNECT_BACKOFF_MS = _K(
    "reconnect.backoff.ms",
    Type.LONG,
    50,
    at_least(0),
    "Initial wait before reconnecting to a broker after a failed connection; doubles per "
    "consecutive failure with 20% jitter.",
)
RECONNECT_BACKOFF_MAX_MS = _K(
    "reconnect.backoff.max.ms",
    Type.LONG,
    1000,
    at_least(0),
    "Upper bound of the reconnect backoff.",
)
SOCKET_CONNECTION_SETUP_TIMEOUT_MS = _K(
    "socket.connection.setup.timeout.ms",
    Type.LONG,
    10000,
    at_least(0),
    "How long one connection attempt (TCP connect plus the ApiVersions handshake) may take; "
    "doubles per consecutive failure up to socket.connection.setup.timeout.max.ms.",
)
SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS = _K(
    "socket.connection.setup.timeout.max.ms",
    Type.LONG,
    30000,
    at_least(0),
    "Upper bound of the connection setup timeout.",
)
CONNECTIONS_MAX_IDLE_MS = _K(
    "connections.max.idle.ms",
    Type.LONG,
    540000,
    None,
    "Close a broker connection that had no request for this long; -1 = never.",
)
SEND_BUFFER_BYTES = _K(
    "send.buffer.bytes",
    Type.INT,
    -1,
    at_least(-1),
    "SO_SNDBUF for broker sockets; -1 = the OS default with its autotuning (Kafka's default "
    "is 131072, which caps a fast loopback link, so Brook leaves it to the OS unless set).",
)
RECEIVE_BUFFER_BYTES = _K(
    "receive.buffer.bytes",
    Type.INT,
    -1,
    at_least(-1),
    "SO_RCVBUF for broker sockets; -1 = the OS default with its autotuning (Kafka's default "
    "is 32768 for producers and 65536 for consumers).",
)
METRICS_SAMPLE_WINDOW_MS = _K(
    "metrics.sample.window.ms",
    Type.LONG,
    30000,
    at_least(0),
    "Length of one metrics sample window; rates and averages cover metrics.num.samples windows.",
)
METRICS_NUM_SAMPLES = _K(
    "metrics.num.samples",
    Type.INT,
    2,
    at_least(1),
    "How many sample windows rates and averages are computed over.",
)
DEFAULT_API_TIMEOUT_MS = _K(
    "default.api.timeout.ms",
    Type.INT,
    60000,
    at_least(0),
    "Time budget of a blocking client call (its retries included) when the call gives none.",
)

_COMMON = [
    BOOTSTRAP_SERVERS,
    CLIENT_ID,
    SECURITY_PROTOCOL,
    CLIENT_DNS_LOOKUP,
    REQUEST_TIMEOUT_MS,
    METADATA_MAX_AGE_MS,
    RETRIES,
    RETRY_BACKOFF_MS,
    RETRY_BACKOFF_MAX_MS,
    RECONNECT_BACKOFF_MS,
    RECONNECT_BACKOFF_MAX_MS,
    SOCKET_CONNECTION_SETUP_TIMEOUT_MS,
    SOCKET_CONNECTION_SETUP_TIMEOUT_MAX_MS,
    CONNECTIONS_MAX_IDLE_MS,
    SEND_BUFFER_BYTES,
    RECEIVE_BUFFER_BYTES,
    METRICS_SAMPLE_WINDOW_MS,
    METRICS_NUM_SAMPLES,
    *SECURITY_KEYS,
]


def _with_default(key: ConfigKey, default: Any) -> ConfigKey:
    return dataclasses.replace(key, default=default)


# ---------------------------------------------------------------------------------------------
# Producer
# ---------------------------------------------------------------------------------------------

PRODUCER_CONFIG = ConfigDef(
    "producer",
    [
        *_COMMON,
        _K(
            "acks",
            Type.STRING,
            "all",
            one_of("all", "-1", "0", "1", case_insensitive=True),
            "Acknowledgements the leader waits for before answering: 0 = none (no response), "
            "1 = the leader's own write, all / -1 = every in-sync replica.",
        ),
        _K(
            "enable.idempotence",
            Type.BOOLEAN,
            True,
            None,
            "Give the producer an id and number its batches so retries never duplicate or "
            "reorder records. Needs acks=all, retries > 0 and "
            "max.in.flight.requests.per.connection <= 5; when those are set otherwise and this "
            "key is not set explicitly, idempotence is turned off as Java does.",
        ),
        _K(
            "delivery.timeout.ms",
            Type.INT,
            120000,
            at_least(0),
            "Upper bound on the time from send() to success or failure, retries included; "
            "must be >= linger.ms + request.timeout.ms.",
        ),
        _K(
            "linger.ms",
            Type.LONG,
            5,
            at_least(0),
            "How long a batch waits for more records before it is sent. Kafka 4.0's default "
            "(KIP-1030) is 5; Kafka 3.x used 0.",
        ),
        _K(
            "batch.size",
            Type.INT,
            16384,
            at_least(0),
            "Target size in bytes of one partition's batch; also the amount the built-in "
            "partitioner sends to one partition before it moves on (KIP-794).",
        ),
        _K(
            "buffer.memory",
            Type.LONG,
            33554432,
            at_least(0),
            "Bytes of records the producer may hold unsent; send() blocks up to max.block.ms "
            "when it is full.",
        ),
        _K(
            "max.block.ms",
            Type.LONG,
            60000,
            at_least(0),
            "How long send() may block waiting for metadata or buffer space.",
        ),
        _K(
            "max.request.size",
            Type.INT,
            1048576,
            at_least(0),
            "Largest Produce request; a record bigger than this is rejected at send().",
        ),
        _K(
            "max.in.flight.requests.per.connection",
            Type.INT,
            5,
            at_least(1),
            "Unanswered requests allowed per broker connection.",
        ),
        _K(
            "compression.type",
            Type.STRING,
            "none",
            one_of(*COMPRESSION_TYPES),
            "Codec for record batches: none, gzip, snappy, lz4 or zstd.",
        ),
        _K(
            "compression.gzip.level",
            Type.INT,
            -1,
            _at_least_or_minus_one(1),
            "gzip level 1-9, or -1 for the codec's default.",
        ),
        _K(
            "compression.lz4.level",
            Type.INT,
            9,
            _level(1, 17),
            "lz4 level 1-17.",
        ),
        _K(
            "compression.zstd.level",
            Type.INT,
            3,
            _level(-131072, 22),
            "zstd level -131072 to 22.",
        ),
        _K(
            "metadata.max.idle.ms",
            Type.LONG,
            300000,
            at_least(5000),
            "Forget the metadata of a topic nothing was sent to for this long.",
        ),
        _K(
            "partitioner.class",
            Type.CLASS,
            None,
            _partitioner_validator,
            "Custom partitioner (class, instance or 'module:Class'); None = the built-in KIP-794 "
            "partitioner. Kafka's DefaultPartitioner / UniformStickyPartitioner names select the "
            "pre-KIP-794 sticky behaviour.",
        ),
        _K(
            "partitioner.adaptive.partitioning.enable",
            Type.BOOLEAN,
            True,
            None,
            "KIP-794: send more to partitions whose brokers drain their queues faster, weighting "
            "by queue length; false = uniform choice.",
        ),
        _K(
            "partitioner.availability.timeout.ms",
            Type.LONG,
            0,
            at_least(0),
            "KIP-794: leave out a broker's partitions after it had data ready but could not take "
            "it for this long; 0 = off.",
        ),
        _K(
            "partitioner.ignore.keys",
            Type.BOOLEAN,
            False,
            None,
            "KIP-794: place keyed records with the sticky partitioner instead of the key hash.",
        ),
        _K(
            "transactional.id",
            Type.STRING,
            None,
            _non_empty_string,
            "Makes the producer transactional: init_transactions() fences every earlier "
            "producer with this id and aborts its open transaction; records are then sent "
            "in transactions. Needs idempotence (turned on when not set).",
        ),
        _K(
            "transaction.timeout.ms",
            Type.INT,
            60000,
            None,
            "How long the transaction coordinator lets a transaction stay open before it "
            "aborts it; InitProducerId fails with INVALID_TRANSACTION_TIMEOUT above the "
            "broker's transaction.max.timeout.ms.",
        ),
        _K(
            "key.serializer",
            Type.CLASS,
            None,
            _serializer_validator,
            "Turns a key into bytes: a callable, 'module:function', Kafka's String/ByteArray "
            "serializer name, or None (keys must then be bytes).",
        ),
        _K(
            "value.serializer",
            Type.CLASS,
            None,
            _serializer_validator,
            "Turns a value into bytes; same forms as key.serializer.",
        ),
        _K(
            "brook.leader.discovery.enable",
            Type.BOOLEAN,
            True,
            None,
            "KIP-951: apply the new leader that Produce and Fetch errors carry and retry there at "
            "once; false = wait for a metadata refresh as before Kafka 3.7.",
        ),
    ],
)


# ---------------------------------------------------------------------------------------------
# Consumer
# ---------------------------------------------------------------------------------------------

_RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"
_COOPERATIVE_STICKY = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"

CONSUMER_CONFIG = ConfigDef(
    "consumer",
    [
        *_COMMON,
        DEFAULT_API_TIMEOUT_MS,
        _K("group.id", Type.STRING, None, None, "Consumer group this consumer belongs to."),
        _K(
            "group.instance.id",
            Type.STRING,
            None,
            None,
            "Static membership id (KIP-345); None = a dynamic member.",
        ),
        _K(
            "group.protocol",
            Type.STRING,
            "classic",
            one_of("classic", case_insensitive=True),
            "Group protocol; only the classic protocol is implemented (not KIP-848's).",
        ),
        _K(
            "fetch.min.bytes",
            Type.INT,
            1,
            at_least(0),
            "The broker holds a Fetch until this many bytes are available or "
            "fetch.max.wait.ms passed.",
        ),
        _K(
            "fetch.max.wait.ms",
            Type.INT,
            500,
            at_least(0),
            "Longest time the broker holds a Fetch waiting for fetch.min.bytes.",
        ),
        _K(
            "fetch.max.bytes",
            Type.INT,
            52428800,
            at_least(0),
            "Most bytes one Fetch response should carry (a first batch larger than this is "
            "still returned so the consumer makes progress).",
        ),
        _K(
            "max.partition.fetch.bytes",
            Type.INT,
            1048576,
            at_least(0),
            "Most bytes per partition in one Fetch response (same first-batch exception).",
        ),
        _K(
            "auto.offset.reset",
            Type.STRING,
            "latest",
            one_of("latest", "earliest", "none", case_insensitive=True),
            "Where to start when there is no committed offset or it is out of range.",
        ),
        _K(
            "enable.auto.commit",
            Type.BOOLEAN,
            True,
            None,
            "Commit consumed offsets in the background every auto.commit.interval.ms "
            "(only with a group.id).",
        ),
        _K(
            "auto.commit.interval.ms",
            Type.INT,
            5000,
            at_least(0),
            "How often offsets are committed when enable.auto.commit is true.",
        ),
        _K(
            "isolation.level",
            Type.STRING,
            "read_uncommitted",
            one_of("read_uncommitted", "read_committed", case_insensitive=True),
            "read_committed returns only committed transactional records.",
        ),
        _K(
            "check.crcs",
            Type.BOOLEAN,
            True,
            None,
            "Verify the CRC32C of fetched record batches.",
        ),
        _K(
            "max.poll.records",
            Type.INT,
            500,
            at_least(1),
            "Most records one poll() returns.",
        ),
        _K(
            "max.poll.interval.ms",
            Type.INT,
            300000,
            at_least(1),
            "Longest gap between poll() calls before the consumer leaves its group.",
        ),
        _K(
            "session.timeout.ms",
            Type.INT,
            45000,
            None,
            "The group coordinator drops a member it has not heard from for this long.",
        ),
        _K(
            "heartbeat.interval.ms",
            Type.INT,
            3000,
            None,
            "How often the consumer heartbeats to its group coordinator.",
        ),
        _K(
            "partition.assignment.strategy",
            Type.LIST,
            [_RANGE, _COOPERATIVE_STICKY],
            _non_empty_list,
            "Assignors in order of preference: Kafka's class names or the protocol names "
            "range, roundrobin, sticky, cooperative-sticky.",
        ),
        _K(
            "client.rack",
            Type.STRING,
            "",
            None,
            "Rack of this consumer, for fetching from the closest replica (KIP-392).",
        ),
        _K(
            "exclude.internal.topics",
            Type.BOOLEAN,
            True,
            None,
            "Leave internal topics (such as __consumer_offsets) out of pattern subscriptions.",
        ),
        _K(
            "allow.auto.create.topics",
            Type.BOOLEAN,
            True,
            None,
            "Let metadata requests for a subscribed topic create it on brokers that allow it.",
        ),
        _K(
            "key.deserializer",
            Type.CLASS,
            None,
            _deserializer_validator,
            "Turns key bytes into a value: a callable, 'module:function', Kafka's "
            "String/ByteArray deserializer name, or None (bytes as received).",
        ),
        _K(
            "value.deserializer",
            Type.CLASS,
            None,
            _deserializer_validator,
            "Turns value bytes into a value; same forms as key.deserializer.",
        ),
        _K(
            "brook.fetch.sessions.enable",
            Type.BOOLEAN,
            True,
            None,
            "KIP-227: keep an incremental fetch session per broker; false = sessionless full "
            "fetches (as librdkafka does).",
        ),
        _K(
            "brook.leader.discovery.enable",
            Type.BOOLEAN,
            True,
            None,
            "KIP-951: apply the new leader that Fetch errors carry; false = wait for a metadata "
            "refresh.",
        ),
    ],
)


# ---------------------------------------------------------------------------------------------
# Admin
# ---------------------------------------------------------------------------------------------

ADMIN_CONFIG = ConfigDef(
    "admin",
    [
        *[_with_default(k, 300000) if k is CONNECTIONS_MAX_IDLE_MS else k for k in _COMMON],
        DEFAULT_API_TIMEOUT_MS,
    ],
)


# ---------------------------------------------------------------------------------------------
# Parsing with cross-key rules
# ---------------------------------------------------------------------------------------------


def _parse(table: ConfigDef, props: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(props, Mapping):
        raise ConfigError(
            f"{table.component} configuration must be a dict of Kafka property names, "
            f"got {type(props).__name__}"
        )
    config = table.parse(props)
    values = dict(config)
    for name in props:
        key = table.key(name)
        if values[name] is None and key.default is not None and key.default is not NO_DEFAULT:
            raise ConfigError(
                f"Invalid value None for configuration {name}: expected a value of type "
                f"{key.type.value}"
            )
    return values


def _finish(table: ConfigDef, values: dict[str, Any], props: Mapping[str, Any]) -> Config:
    return Config(table, values, frozenset(props))


def parse_producer_config(props: Mapping[str, Any]) -> Config:
    """Parse producer properties and apply Java's rules for idempotence and timeouts."""
    values = _parse(PRODUCER_CONFIG, props)
    acks = acks_value(values["acks"])
    values["acks"] = "all" if acks == -1 else str(acks)
    acks_all = acks == -1
    if "enable.idempotence" in props and values["enable.idempotence"]:
        if not acks_all:
            raise ConfigError(
                "Must set acks to all in order to use the idempotent producer "
                f"(enable.idempotence=true, acks={values['acks']})"
            )
        if values["retries"] == 0:
            raise ConfigError("Must set retries to non-zero when using the idempotent producer")
        if values["max.in.flight.requests.per.connection"] > 5:
            raise ConfigError(
                "Must set max.in.flight.requests.per.connection to at most 5 to use the "
                "idempotent producer"
            )
    elif "enable.idempotence" not in props and (
        not acks_all
        or values["retries"] == 0
        or values["max.in.flight.requests.per.connection"] > 5
    ):
        values["enable.idempotence"] = False
    if values["transactional.id"] is not None and not values["enable.idempotence"]:
        # Java's rule: a transaction's batches are idempotent ones.
        raise ConfigError("Cannot set a transactional.id without also enabling idempotence.")
    floor = values["linger.ms"] + values["request.timeout.ms"]
    if values["delivery.timeout.ms"] < floor:
        if "delivery.timeout.ms" in props:
            raise ConfigError(
                f"Invalid value {values['delivery.timeout.ms']} for configuration "
                f"delivery.timeout.ms: must be >= linger.ms + request.timeout.ms ({floor})"
            )
        values["delivery.timeout.ms"] = floor
    return _finish(PRODUCER_CONFIG, values, props)


def parse_consumer_config(props: Mapping[str, Any]) -> Config:
    """Parse consumer properties; enum values are lower-cased as Kafka compares them."""
    values = _parse(CONSUMER_CONFIG, props)
    for name in ("auto.offset.reset", "isolation.level", "group.protocol"):
        values[name] = str(values[name]).lower()
    if values["group.instance.id"] is not None and values["group.id"] is None:
        raise ConfigError("group.instance.id requires group.id")
    if (
        values["group.id"] is None
        and values["enable.auto.commit"]
        and "enable.auto.commit" in props
    ):
        # Java's rule: an explicit true without a group is an error; the default (true) is
        # simply unused, since only a group coordinator commits.
        raise ConfigError(
            "enable.auto.commit cannot be set to true when default group id (null) is used"
        )
    return _finish(CONSUMER_CONFIG, values, props)


def parse_admin_config(props: Mapping[str, Any]) -> Config:
    """Parse admin client properties."""
    return _finish(ADMIN_CONFIG, _parse(ADMIN_CONFIG, props), props)
