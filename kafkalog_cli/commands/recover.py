"""`kafkalog recover` (lands with issue #4)."""

from kafkalog_cli.commands._pending import pending

command = pending("recover", 4, "Do offline what a broker does after an unclean shutdown.")
