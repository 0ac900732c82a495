"""kafkalog: inspect, verify and repair Apache Kafka log directories offline."""

__version__ = "0.1.0"
