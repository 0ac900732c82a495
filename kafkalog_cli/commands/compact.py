"""`kafkalog compact` (lands with issue #5)."""

from kafkalog_cli.commands._pending import pending

command = pending("compact", 5, "Run Kafka's log cleaner offline, in bounded memory.")
