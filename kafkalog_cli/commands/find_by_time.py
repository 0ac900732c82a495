"""`kafkalog find-by-time`: ListOffsets semantics, offline."""

from __future__ import annotations

from typing import Any

import click

from kafkalog_cli.commands import options, v07
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.output.console import human_time
from kafkalog_cli.output.render import make_renderer
from kafkalog_cli.storage import naming
from kafkalog_cli.storage.logdir import open_target
from kafkalog_cli.storage.timelookup import (
    Found,
    log_end_offset,
    max_timestamp_offset,
    offset_for_time,
)

SPECIAL = ("earliest", "latest", "max-timestamp")


def _text(row: dict[str, Any]) -> str:
    off = "-" if row["offset"] is None else row["offset"]
    ts = row["timestamp"]
    when = f" ({human_time(ts)})" if isinstance(ts, int) and ts >= 0 else ""
    return f"{row['topic']}-{row['partition']} {ts}{when} {off}"


@click.command("find-by-time", epilog="Exit codes: 0 done (an offset of null means no record "
               "matches), 4 a batch the search reads does not decode (its file and byte on "
               "stderr), 8 operational error, 16 usage error.")
@options.paths_argument
@click.option("--timestamp", "-t", "when", required=True, metavar="T",
              help="Epoch ms, ISO-8601 with a zone, or earliest / latest / max-timestamp.")
@click.option("--topic", "topics", multiple=True, help="Only these topics (repeatable).")
@options.format_option(default="auto")
def command(paths: tuple[str, ...], when: str, topics: tuple[str, ...], fmt: str) -> int:
    """Find the earliest offset whose timestamp is at or after T, as a broker answers
    ListOffsets (time index, then offset index, then a scan of the batches).

    One row per partition of a partition dir, topic or whole log dir.

    \b
    Examples:
      kafkalog find-by-time /var/lib/kafka/orders-0 --timestamp 2024-05-01T12:00:00Z
      kafkalog find-by-time /var/lib/kafka --timestamp 1714564800000 --format json
      kafkalog find-by-time /var/lib/kafka --topic orders -t 2024-05-01T00:00:00+02:00
      kafkalog find-by-time orders-0 -t latest
    """
    if (t07 := v07.targets(paths)) is not None:  # Kafka 0.7: no timestamps to search
        return v07.find_by_time(t07, when, fmt)
    target_ts: int | None = None
    if when not in SPECIAL:
        try:
            target_ts = options.parse_time(when)
        except click.BadParameter as e:
            raise click.BadParameter(e.message, param_hint="--timestamp") from None
    out = make_renderer(fmt, _text)
    for p in paths:
        for part in open_target(p).partitions():
            if topics and part.topic not in topics:
                continue
            log_start = None
            if part.log_dir is not None:
                try:
                    cp = part.log_dir.checkpoint(naming.LOG_START) or {}
                    log_start = cp.get(part.key)
                except (KafkalogError, OSError):  # unreadable: "first segment", as Kafka does
                    log_start = None
            if when == "earliest":
                first = part.segments[0].base_offset if part.segments else 0
                found = Found(max(first, log_start or 0), None)
            elif when == "latest":
                found = Found(log_end_offset(part), None)
            elif when == "max-timestamp":
                found = max_timestamp_offset(part)
            else:
                assert target_ts is not None
                found = offset_for_time(part, target_ts, log_start)
            out.row({"topic": part.topic, "partition": part.partition,
                     "timestamp": found.timestamp if target_ts is None else target_ts,
                     "offset": found.offset})
    out.close()
    return 0
