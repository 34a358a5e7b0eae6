"""Brook: a Kafka-compatible event-streaming platform in Python."""

__version__ = "0.1.0"

from brook.client import Admin, AsyncAdmin, AsyncProducer, Producer

__all__ = ["Admin", "AsyncAdmin", "AsyncProducer", "Producer", "__version__"]
