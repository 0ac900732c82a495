"""`kafkalog retain` (lands with issue #4)."""

from kafkalog_cli.commands._pending import pending

command = pending("retain", 4, "Apply time/size/log-start retention offline, crash-safe.")
