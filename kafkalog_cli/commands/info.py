"""`kafkalog info`: topics, partitions, offsets, checkpoints, sizes, time ranges, state."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import click

from kafkalog_cli.commands import options, parallel, v07
from kafkalog_cli.commands.common import partitions_of
from kafkalog_cli.output.console import human_time
from kafkalog_cli.output.render import exploding, make_renderer, write_document
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.queries.overview import lock_state, partition_info

Row = dict[str, Any]
BOOTSTRAP_SNAPSHOT = naming.kraft_snapshot_name(0, 0)
# csv and tables: a row per log dir (or partition dir, or segment file named), then one per
# partition
FLATTEN = exploding({"partitions": "partition"}, carry=())
ENTRY_KINDS = {"logdir": "logDir", "archive": "logDir", "partition": "partitionDir",
               "file": "segmentFile"}


def report(paths: tuple[str, ...], jobs: int = 1) -> list[Row]:
    out: list[Row] = []
    for t, parts, bases in partitions_of(paths):
        if t.log_dirs:
            for ld in t.log_dirs:
                cache = ld.remote_index_cache
                out.append({"kind": "logDir", "path": str(ld.path),
                            "cleanShutdown": naming.CLEAN_SHUTDOWN in ld.root_files,
                            "lock": lock_state(ld),
                            "unknownFiles": ld.unknown + [d + "/" for d in ld.bad_dirs],
                            "remoteIndexCache": None if cache is None else {
                                "files": len(cache.files), "bytes": cache.bytes},
                            "partitions": list(parallel.ordered(ld.partitions, _info, jobs))})
        else:
            out.append({"kind": ENTRY_KINDS[t.kind], "path": str(t.path),
                        "partitions": list(parallel.ordered(
                            parts, functools.partial(_info, bases=bases), jobs))})
    return out


def _info(part: PartitionDir, bases: set[int] | None = None) -> Row:
    return partition_info(part, bases).as_dict()


def _text(entry: Row) -> str:
    from tabulate import tabulate

    head = entry["path"]
    if "lock" in entry:
        head += (f"  clean shutdown: {'yes' if entry['cleanShutdown'] else 'no'}"
                 f"  lock: {entry['lock']}")
    rows = [[_name(x), x["segments"], _num(x["logStartOffset"]),
             _num(x["logEndOffset"]), _num(x["recoveryPoint"]), _num(x["highWatermark"]),
             x["bytes"], human_time(x["firstTimestamp"]), human_time(x["maxTimestamp"]),
             ",".join(x["codecs"]) or "-", ",".join(x["leftovers"]) or "-"]
            for x in entry["partitions"]]
    lines = [head, tabulate(rows, headers=["partition", "segs", "start", "end", "recovery",
                                           "hw", "bytes", "first ts", "max ts", "codecs",
                                           "leftovers"],
                            tablefmt="plain")]
    for x in entry["partitions"]:
        if x["kraftSnapshots"]:
            last, n = x["lastKraftSnapshot"], x["kraftSnapshots"]
            boot = " (the bootstrap snapshot)" if last == BOOTSTRAP_SNAPSHOT else ""
            lines.append(f"{_name(x)}: {n} KRaft snapshot{'s' if n > 1 else ''}, the last "
                         f"{last}{boot}")
    cache = entry.get("remoteIndexCache")
    if cache:
        lines.append(f"{naming.REMOTE_INDEX_CACHE}/: {cache['files']} cached index files of "
                     f"remote segments, {cache['bytes']} bytes (tiered storage)")
    if entry.get("unknownFiles"):
        lines.append("unknown: " + ", ".join(entry["unknownFiles"]))
    return "\n".join(lines) + "\n"


def _name(x: Row) -> str:
    """A partition's name; a dir the broker renamed (-stray, -delete, -future) by its own."""
    return Path(x["path"]).name if x["state"] else f"{x['topic']}-{x['partition']}"


def _num(v: int | None) -> str:
    return "-" if v is None else str(v)


@click.command("info", epilog="Exit codes: 0 done, 8 operational error (a PATH that does not "
               "exist or cannot be read), 16 usage error (a PATH that holds no Kafka data).")
@options.paths_argument
@options.format_option(default="auto")
@options.jobs_option
def command(paths: tuple[str, ...], fmt: str, jobs: int = 1) -> int:
    """A one-screen overview of log dirs: partitions, offsets, checkpoints, sizes, time ranges,
    codecs, clean-shutdown and lock state, leftover files.

    PATH is a log dir, a partition dir or a segment file (that segment only). Every
    partition is listed, empty ones too (a -stray, -delete or -future dir by its name);
    start is the log start offset as a broker loads it (the log-start-offset checkpoint, at
    least the first segment's base offset unless a remote-log-index-cache/ shows tiered
    storage). KRaft snapshots and tiered storage's index cache are listed under the table.

    \b
    Examples:
      kafkalog info /var/lib/kafka
      kafkalog info /var/lib/kafka/orders-0 --format json
      kafkalog info /var/lib/kafka --format csv > partitions.csv
    """
    if (t07 := v07.targets(paths)) is not None:  # Kafka 0.7 partitions
        return v07.info(t07, fmt)
    entries = report(paths, jobs)
    if fmt == "json":
        write_document(entries)
        return 0
    out = make_renderer(fmt, _text, flatten=FLATTEN)
    for entry in entries:
        out.row(entry)
    out.close()
    return 0
