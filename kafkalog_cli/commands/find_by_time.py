"""`kafkalog find-by-time`: ListOffsets semantics, offline."""

from __future__ import annotations

from typing import Any

import click

from kafkalog_cli.commands import options
from kafkalog_cli.output.console import human_time
from kafkalog_cli.output.render import make_renderer
from kafkalog_cli.storage.formats import open_targets
from kafkalog_cli.storage.queries.timelookup import Found

SPECIAL = ("earliest", "latest", "max-timestamp")


def _text(row: dict[str, Any]) -> str:
    ts = row["timestamp"]
    found = "no record" if row["offset"] is None else f"offset {row['offset']}"
    if ts is not None:
        found += f" timestamp {ts} ({human_time(ts)})"
    if row["leaderEpoch"] is not None:
        found += f" leaderEpoch {row['leaderEpoch']}"
    target = row["targetTimestamp"]
    query = row["query"] if target is None else f"{target} ({human_time(target)})"
    return f"{row['topic']}-{row['partition']} {query}: {found}"


def result_row(topic: str, partition: int, query: str, target: int | None,
               found: Found) -> dict[str, Any]:
    """What was asked, then what ListOffsets answers: offset, timestamp, leaderEpoch."""
    return {"topic": topic, "partition": partition, "query": query,
            "targetTimestamp": target, "offset": found.offset, "timestamp": found.timestamp,
            "leaderEpoch": found.leader_epoch}


@click.command("find-by-time", epilog="Exit codes: 0 done (an offset of null means no record "
               "matches), 4 a batch the search reads does not decode (its file and byte on "
               "stderr), 8 operational error, 16 usage error.")
@options.paths_argument
@click.option("--timestamp", "-t", "when", type=options.Time(specials=SPECIAL), required=True,
              metavar="T",
              help="Epoch ms, ISO-8601 with a zone, or earliest / latest / max-timestamp.")
@click.option("--topic", "topics", multiple=True, type=options.TopicName(),
              help="Only these topics (repeatable).")
@options.format_option(default="auto")
def command(paths: tuple[str, ...], when: int | str, topics: tuple[str, ...], fmt: str) -> int:
    """Find the earliest offset whose timestamp is at or after T, as a broker answers
    ListOffsets (time index, then offset index, then a scan of the batches).

    One row per partition of a partition dir, topic or whole log dir: the query
    (`query`, and `targetTimestamp` for a time), then ListOffsets's answer: the `offset`, the
    found record's `timestamp` (none for earliest and latest) and its `leaderEpoch`.

    \b
    Examples:
      kafkalog find-by-time /var/lib/kafka/orders-0 --timestamp 2024-05-01T12:00:00Z
      kafkalog find-by-time /var/lib/kafka --timestamp 1714564800000 --format json
      kafkalog find-by-time /var/lib/kafka --topic orders -t 2024-05-01T00:00:00+02:00
      kafkalog find-by-time orders-0 -t latest
    """
    target_ts = when if isinstance(when, int) else None
    out = make_renderer(fmt, _text)
    for t in open_targets(paths):
        for part in t.format.partitions(t):
            if topics and part.topic not in topics:
                continue
            found = t.format.list_offsets(part, when)
            out.row(result_row(part.topic, part.partition,
                               "timestamp" if target_ts is not None else str(when), target_ts,
                               found))
    out.close()
    return 0
