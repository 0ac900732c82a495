"""`kafkalog txn`: open (hanging) and aborted transactions per partition, and the LSO."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from typing import Any

import click

from kafkalog_cli.codec.layout import INT32_MAX
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.commands import options, parallel
from kafkalog_cli.errors import EXIT_UNFIXED
from kafkalog_cli.output.console import warn
from kafkalog_cli.output.render import exploding, make_renderer
from kafkalog_cli.storage.disk.logdir import PartitionDir, open_target
from kafkalog_cli.storage.queries.transactions import (
    DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    PartitionTxns,
    partition_transactions,
)

Row = dict[str, Any]
MINUTE_MS = 60_000
# csv and tables: a row per partition, then one per open and per aborted transaction
FLATTEN = exploding({"open": "open", "aborted": "aborted"})


def abort_command(bootstrap: str, topic: str, partition: int, start_offset: int) -> str:
    """KIP-664 (Kafka 3.0+ brokers): the admin client finds the producer at --start-offset."""
    return (f"kafka-transactions.sh --bootstrap-server {bootstrap} abort --topic "
            f"{shlex.quote(topic)} --partition {partition} --start-offset {start_offset}")


def _row(p: PartitionTxns, now_ms: int, timeout_ms: int, bootstrap: str) -> Row:
    open_rows = []
    for t in p.open:
        idle = t.idle_ms(now_ms)
        hanging = idle is None or idle > timeout_ms
        open_rows.append({
            "producerId": t.producer_id, "producerEpoch": t.producer_epoch,
            "firstOffset": t.first_offset, "lastOffset": t.last_offset,
            "firstTimestamp": t.first_timestamp, "lastTimestamp": t.last_timestamp,
            "ageMs": t.age_ms(now_ms), "idleMs": idle, "batches": t.batches,
            "fromSnapshot": t.from_snapshot, "hanging": hanging,
            "abortCommand": abort_command(bootstrap, p.topic, p.partition, t.first_offset)})
    return {
        "kind": "partition", "topic": p.topic, "partition": p.partition,
        "logStartOffset": p.log_start_offset, "logEndOffset": p.log_end_offset,
        "highWatermark": p.high_watermark, "lastStableOffset": p.last_stable_offset,
        "snapshotOffset": p.snapshot_offset, "committed": p.committed,
        "open": open_rows,
        "aborted": [{"producerId": a.producer_id, "producerEpoch": a.producer_epoch,
                     "firstOffset": a.first_offset, "lastOffset": a.last_offset,
                     "lastStableOffset": a.last_stable_offset, "timestamp": a.timestamp,
                     "sources": a.sources} for a in p.aborted],
        "notes": p.notes,
    }


def _duration(ms: int | None) -> str:
    if ms is None:
        return "unknown"
    s = max(ms, 0) // 1000
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    parts = [f"{d}d"] * bool(d) + [f"{h}h"] * bool(h) + [f"{m}m"] * bool(m)
    return " ".join([*parts, f"{s}s"] if not parts or s else parts)


def text_line(row: Row) -> str:
    hw = "" if row["highWatermark"] is None else f", high watermark {row['highWatermark']}"
    lines = [f"{row['topic']}-{row['partition']}: log end offset {row['logEndOffset']}, "
             f"last stable offset {row['lastStableOffset']}{hw}; {len(row['open'])} open, "
             f"{len(row['aborted'])} aborted, {row['committed']} committed"]
    for t in row["open"]:
        flag = " HANGING" if t["hanging"] else ""
        lines.append(f"  open: producerId {t['producerId']} epoch {t['producerEpoch']} first "
                     f"offset {t['firstOffset']} last offset {t['lastOffset']} age "
                     f"{_duration(t['ageMs'])} idle {_duration(t['idleMs'])}{flag}")
        if t["hanging"]:
            lines.append(f"    to abort: {t['abortCommand']}")
    for a in row["aborted"]:
        epoch = "" if a["producerEpoch"] is None else f" epoch {a['producerEpoch']}"
        lines.append(f"  aborted: producerId {a['producerId']}{epoch} offsets "
                     f"{a['firstOffset']}..{a['lastOffset']} (marker at {a['lastOffset']}, "
                     f"last stable offset {a['lastStableOffset']}) from "
                     f"{'+'.join(a['sources'])}")
    lines += [f"  note: {n}" for n in row["notes"]]
    return "\n".join(lines)


@click.command("txn", epilog="Exit codes: 0 no hanging transaction, 4 hanging transactions "
               "found (or damage while reading), 8 operational error, 16 usage error.")
@options.paths_argument
@options.format_option()
@click.option("--now", "now", type=options.Time(),
              help="The time ages are measured at (epoch ms or ISO-8601; default: the clock).")
@click.option("--max-transaction-timeout",
              type=options.Int32(min=1, max=INT32_MAX // MINUTE_MS,
                                 unit="minutes; transaction.max.timeout.ms is an INT32 of ms"),
              default=DEFAULT_MAX_TRANSACTION_TIMEOUT_MS // MINUTE_MS,
              show_default=True, metavar="MINUTES",
              help="An open transaction idle longer than this is hanging (as "
                   "kafka-transactions.sh find-hanging).")
@click.option("--bootstrap-server", type=options.Text(), default="<host:port>", show_default=True,
              help="Put into the suggested kafka-transactions.sh abort commands.")
@click.option("--all", "show_all", is_flag=True,
              help="Also list partitions with no open or aborted transaction.")
@options.jobs_option
def command(paths: tuple[str, ...], fmt: str, now: int | None, max_transaction_timeout: int,
            bootstrap_server: str, show_all: bool, jobs: int = 1) -> int:
    """Report open (possibly hanging) and aborted transactions of each partition, computed
    offline from the segments, `.txnindex` files and `.snapshot` producer state: producer id
    and epoch, first and last offset, age, the last stable offset, and for each hanging
    transaction the `kafka-transactions.sh ... abort` command (KIP-664) that ends it.

    \b
    Examples:
      kafkalog txn /var/lib/kafka
      kafkalog txn /var/lib/kafka/orders-0 --format json
      kafkalog txn /var/lib/kafka --now 2024-05-01T12:00:00Z --bootstrap-server broker1:9092
    """
    now_ms = now if now is not None else int(time.time() * 1000)
    timeout_ms = max_transaction_timeout * MINUTE_MS
    damaged = 0

    def reporter(where: str) -> Callable[[Damage], None]:
        def on_damage(d: Damage) -> None:
            nonlocal damaged
            damaged += 1
            warn(f"{where}: byte {d.position}: {d.reason} [{d.code}]")
        return on_damage

    def one(part: PartitionDir) -> tuple[Row, int]:
        """A partition's row and the damage read (perhaps in a worker: commands/parallel.py)."""
        nonlocal damaged
        before = damaged
        row = _row(partition_transactions(part, reporter(str(part.path))), now_ms,
                   timeout_ms, bootstrap_server)
        found, damaged = damaged - before, before
        return row, found

    # every PATH opened before a row is written: a bad one is an error with no output, not a
    # json document cut off after the rows of the paths before it
    targets = [open_target(p) for p in paths]
    out = make_renderer(fmt, text_line, flatten=FLATTEN)
    hanging = 0
    for target in targets:
        for row, found in parallel.ordered(target.partitions(), one, jobs):
            damaged += found
            hanging += sum(1 for t in row["open"] if t["hanging"])
            if show_all or row["open"] or row["aborted"] or row["notes"]:
                out.row(row)
    out.close()
    return EXIT_UNFIXED if hanging or damaged else 0
