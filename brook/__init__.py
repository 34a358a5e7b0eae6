"""Brook: a Kafka-compatible event-streaming platform in Python."""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # The client classes load on first use, so importing brook (the broker, the tools) does
    # not pull in the client.
    if name in _CLIENT:
        from brook import client

        return getattr(client, name)
    raise AttributeError(f"module 'brook' has no attribute {name!r}")


_CLIENT = frozenset(
    {"Admin", "AsyncAdmin", "AsyncConsumer", "AsyncProducer", "Consumer", "Producer"}
)
