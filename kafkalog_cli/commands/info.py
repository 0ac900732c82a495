"""`kafkalog info`: topics, partitions, offsets, checkpoints, sizes, time ranges, state."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kafkalog_cli.commands import chunked, options
from kafkalog_cli.output.console import human_time
from kafkalog_cli.output.plain import plain_table
from kafkalog_cli.output.render import exploding, make_renderer, write_document
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.formats import open_targets

Row = dict[str, Any]
BOOTSTRAP_SNAPSHOT = naming.kraft_snapshot_name(0, 0)
# csv and tables: a row per log dir (or partition dir, or segment file named), then one per
# partition
FLATTEN = exploding({"partitions": "partition"}, carry=())
# the table's columns: (header, the field that tells a row has it, its cell); a format shows
# those its rows carry (0.7 has no checkpoints or timestamps, but counts entries)
_COLUMNS: list[tuple[str, str, Callable[[Row], str]]] = [
    ("partition", "topic", lambda x: _name(x)),
    ("format", "format", lambda x: x["format"]),
    ("segs", "segments", lambda x: str(x["segments"])),
    ("start", "logStartOffset", lambda x: _num(x["logStartOffset"])),
    ("end", "logEndOffset", lambda x: _num(x["logEndOffset"])),
    ("recovery", "recoveryPoint", lambda x: _num(x["recoveryPoint"])),
    ("hw", "highWatermark", lambda x: _num(x["highWatermark"])),
    ("bytes", "bytes", lambda x: str(x["bytes"])),
    ("entries", "entries", lambda x: str(x["entries"])),
    ("first ts", "firstTimestamp", lambda x: human_time(x["firstTimestamp"])),
    ("max ts", "maxTimestamp", lambda x: human_time(x["maxTimestamp"])),
    ("codecs", "codecs", lambda x: ",".join(x["codecs"]) or "-"),
    ("state", "damaged", lambda x: ",".join(
        s for s in ("damaged", "mixed") if x[s]) or "-"),
    ("leftovers", "leftovers", lambda x: ",".join(x["leftovers"]) or "-"),
]
_BYTE_OFFSET_FIELDS = {"format", "entries", "damaged"}  # what 0.7's rows carry instead
# info reads clean segments' headers in one compiled pass (~0.2 s a GiB): below this much
# data in all, -j's workers take longer to start (~0.1 s) than they save (2 000 partitions of
# 10 KB: 0.61 s with two workers, 0.55 s with none)
PARALLEL_BYTES = 256 << 20


def _text(entry: Row) -> str:
    head = entry["path"]
    if "format" in entry:
        head += f"  format: Kafka {entry['format']} (offsets are byte offsets)"
    if "cleanShutdown" in entry:
        head += f"  clean shutdown: {'yes' if entry['cleanShutdown'] else 'no'}"
    if "lock" in entry:
        head += f"  lock: {entry['lock']}"
    parts = entry["partitions"]
    columns = [c for c in _COLUMNS if c[1] in (parts[0] if parts else _empty(entry))]
    lines = [head, plain_table([[cell(x) for _h, _f, cell in columns] for x in parts],
                               [h for h, _f, _c in columns])]
    for x in parts:
        if x.get("kraftSnapshots"):
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
    if entry.get("mixedDirs"):
        lines.append("0.8+ partition dirs here too (mixed): " + ", ".join(entry["mixedDirs"]))
    return "\n".join(lines) + "\n"


def _empty(entry: Row) -> set[str]:
    """The fields of an entry without partitions: its format's columns still head it."""
    fields = {f for _h, f, _c in _COLUMNS}
    if "format" in entry:
        return fields - {"recoveryPoint", "highWatermark", "firstTimestamp", "maxTimestamp",
                         "leftovers"}
    return fields - _BYTE_OFFSET_FIELDS


def _name(x: Row) -> str:
    """A partition's name; a dir the broker renamed (-stray, -delete, -future) by its own."""
    return Path(x["path"]).name if x.get("state") else f"{x['topic']}-{x['partition']}"


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
    mapper = chunked.mapper(jobs, min_bytes=PARALLEL_BYTES)
    entries = [e for t in open_targets(paths) for e in t.format.info(t, mapper)]
    if fmt == "json":
        write_document(entries)
        return 0
    out = make_renderer(fmt, _text, flatten=FLATTEN)
    for entry in entries:
        out.row(entry)
    out.close()
    return 0
