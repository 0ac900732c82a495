"""Storage layer: files and directories of a Kafka log dir. No printing."""
