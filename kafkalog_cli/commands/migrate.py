"""`kafkalog migrate`: a Kafka 0.7 partition (or log dir) as a current log dir, plus the
byte-offset -> new-offset mapping that translates consumers' saved 0.7 offsets."""

from __future__ import annotations

import contextlib
import csv
import io
import shutil
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import click

from kafkalog_cli.codec.compression import BY_NAME, NAMES
from kafkalog_cli.commands import options
from kafkalog_cli.errors import KafkalogError, LogDirIOError, UsageError
from kafkalog_cli.output.console import note
from kafkalog_cli.output.render import make_renderer
from kafkalog_cli.storage.disk import naming, safety
from kafkalog_cli.storage.disk.checkpoints import update_offsets
from kafkalog_cli.storage.disk.files import atomic_write, fsync_dir, read_regular
from kafkalog_cli.storage.disk.logdir import require_exists
from kafkalog_cli.storage.drills.faults import crash_point
from kafkalog_cli.storage.formats import NO_TIMESTAMP, MigrateOptions, open_target
from kafkalog_cli.storage.maintenance.log_config import LogConfig

MAPPING_COLUMNS = ["topic", "partition", "byteOffset", "newOffset"]


def _timestamp(value: int | str) -> tuple[int, bool]:
    """--timestamp (epoch ms, or none / mtime) as (timestamp, take each file's mtime)."""
    if isinstance(value, int):
        return value, False
    return NO_TIMESTAMP, value == "mtime"


STAGING = ".kafkalog-migrating"


def _staging(out: Path) -> Path:
    """Where the log dir is built, on OUT's file system: inside OUT when it exists (it may be
    a mount point), else next to it, so that finishing is renames only."""
    return out / STAGING if out.is_dir() else out.parent / f".{out.name}{STAGING}"


MOVING = ".moving"  # in the staging folder: the names being moved out of it into OUT


def _finish(stage: Path, out: Path) -> None:
    """Staging next to OUT becomes OUT in one rename. Inside OUT (a mount point) its entries
    move one by one, listed first in MOVING, so that a run after a crash can move back
    what went (_undo_finish) rather than meet a half-filled OUT."""
    if stage.parent == out:
        names = sorted(c.name for c in stage.iterdir())
        atomic_write(stage / MOVING, "\n".join(names).encode(), root=stage)
        for name in names:
            safety.rename(stage / name, out / name, out)
            crash_point("migrate.finish.moved")
        fsync_dir(out)
        safety.unlink(stage / MOVING, stage)
        stage.rmdir()
        fsync_dir(out)
    else:
        safety.rename(stage, out, out.parent)
    fsync_dir(out.parent)


def _undo_finish(stage: Path, out: Path) -> None:
    """Move back into the staging folder what an interrupted _finish moved into OUT."""
    try:
        names = read_regular(stage / MOVING).decode().split("\n")
    except FileNotFoundError:
        return
    for name in names:
        if name and (out / name).exists() and not (stage / name).exists():
            safety.rename(out / name, stage / name, out)
    fsync_dir(out)


@click.command("migrate", epilog="Exit codes: 0 migrated, 4 the 0.7 data is damaged or mixed "
               "(nothing is written; run `kafkalog recover` first), 8 operational error "
               "(e.g. OUT's staging folder is a symlink, or OUT a symlink to nothing: refused "
               "before anything is written), 16 usage error.")
@click.argument("source", type=options.LocalPath(path_type=Path))
@click.argument("out", type=options.LocalPath(file_okay=False, path_type=Path))
@click.option("--start-offset", type=options.Int64(min=0), default=0, show_default=True,
              help="Offset of the first migrated message.")
@click.option("--topic", type=options.TopicName(),
              help="Topic name in OUT (default: the 0.7 one; SOURCE must hold one topic).")
@click.option("--codec", type=click.Choice(["keep", *NAMES]), default="keep", show_default=True,
              help="keep: plain entries stay uncompressed, each compressed wrapper becomes one "
                   "batch with its codec.")
@click.option("--batch-records", type=options.Int32(min=1), default=500, show_default=True,
              help="Most plain 0.7 messages grouped into one v2 batch.")
@click.option("--timestamp", "timestamp", type=options.Time(specials=("none", "mtime")),
              default="none", show_default=True,
              metavar="none|mtime|T", help="Record timestamps: none (-1; 0.7 had none, so "
              "retention falls back to file times), mtime (each 0.7 segment file's), or epoch "
              "ms / ISO-8601.")
@click.option("--segment-bytes", type=options.CONFIGS["segment.bytes"],
              default=LogConfig.segment_bytes, show_default=True)
@click.option("--index-interval-bytes", type=options.CONFIGS["index.interval.bytes"],
              default=LogConfig.index_interval_bytes, show_default=True)
@click.option("--mapping", "mapping_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the offset mapping to this file instead of standard output.")
@options.format_option(default="csv")
@click.option("--fsync", is_flag=True, help="fsync data, indexes and directories.")
@options.max_decompressed_option
def command(source: Path, out: Path, start_offset: int, topic: str | None, codec: str,
            batch_records: int, timestamp: int | str, segment_bytes: int,
            index_interval_bytes: int, mapping_path: Path | None, fsync: bool,
            max_decompressed_bytes: int, fmt: str = "csv") -> int:
    """Write the Kafka 0.7 partitions of SOURCE (a partition dir or a log dir) as a current
    log dir OUT (new or empty): v2 batches, indexes, snapshots and checkpoints, offsets
    renumbered densely from --start-offset. Prints the offset mapping (CSV by default,
    `topic,partition,byteOffset,newOffset`): every 0.7 entry start, then the 0.7 log end,
    with the new offset a consumer resumes at; translate saved 0.7 offsets with it. SOURCE
    is only read.

    \b
    Examples:
      kafkalog migrate /old/kafka-logs/orders-0 /new/logs > orders-0.offsets.csv
      kafkalog migrate /old/kafka-logs /new/logs --codec zstd --mapping offsets.csv
    """
    require_exists(source)
    t = open_target(source)
    parts = t.format.migration_source(t)  # refuses what this format cannot be migrated from
    topics = {p.topic for p in parts}
    if topic is not None and len(topics) > 1:
        raise UsageError(f"--topic renames one topic; {source} holds {len(topics)}")
    for name in sorted(topics) if topic is None else []:  # --topic was checked as given
        why = naming.topic_name_error(name)
        if why is not None:
            raise UsageError(f"{why} (current Kafka); choose a topic name with --topic")
    _check_apart(source, out, mapping_path)
    if mapping_path is not None:
        _check_mapping_path(mapping_path, out)
    if out.is_symlink() and not out.exists():
        raise safety.UnsafePath(f"{out}: is a symlink to nothing; kafkalog creates nothing "
                                "through a link (give the directory itself)")
    stage = _staging(out)
    safety.refuse_link(stage)  # a staging folder elsewhere would be filled and emptied into OUT
    if stage.parent == out and stage.is_dir():
        _undo_finish(stage, out)  # the staging folder is removed below, with the rest
    if out.exists() and (not out.is_dir() or any(c.name != STAGING for c in out.iterdir())):
        raise UsageError(f"{out} exists and is not an empty directory")
    ts, from_mtime = _timestamp(timestamp)
    opts = MigrateOptions(start_offset=start_offset,
                          codec=None if codec == "keep" else BY_NAME[codec],
                          batch_records=batch_records, timestamp=ts,
                          timestamp_from_mtime=from_mtime,
                          config=LogConfig(segment_bytes=segment_bytes,
                                           index_interval_bytes=index_interval_bytes,
                                           fsync=fsync),
                          max_decompressed=max_decompressed_bytes)
    with ExitStack() as stack:
        spool = stack.enter_context(tempfile.TemporaryFile("w+", newline=""))
        rows = csv.writer(spool)
        if stage.exists():
            note(f"removing {stage}, left by an interrupted migrate")
            shutil.rmtree(stage)
        try:
            stage.mkdir(parents=True)
            leos: dict[tuple[str, int], int | None] = {}
            for part in parts:
                name = topic or part.topic

                def emit(byte_offset: int, new_offset: int, name: str = name,
                         p: int = part.partition) -> None:
                    rows.writerow((name, p, byte_offset, new_offset))

                dest = stage / naming.partition_dir_name(name, part.partition)
                res = part.migrate(dest, opts, emit, topic=name)
                leos[(name, part.partition)] = res.log_end_offset
                note(f"{part.path} -> {name}-{part.partition}: {res.messages} messages from "
                     f"{res.entries} entries; 0.7 log end {res.source_end} -> log end offset "
                     f"{res.log_end_offset}")
            update_offsets(stage / naming.RECOVERY_POINT, leos, fsync=fsync)
            update_offsets(stage / naming.REPLICATION, leos, fsync=fsync)
            update_offsets(stage / naming.LOG_START, {k: None for k in leos}, fsync=fsync)
            # the mapping first: once OUT is there, so is the only record of the byte
            # offsets 0.7 consumers saved; a run that dies before OUT is done is run again
            spool.seek(0)
            _write_mapping(spool, mapping_path, fmt)
            crash_point("migrate.mapping.written")
            _finish(stage, out)
        except (KafkalogError, OSError):
            if stage.parent == out:
                with contextlib.suppress(OSError, KafkalogError):
                    _undo_finish(stage, out)
            shutil.rmtree(stage, ignore_errors=True)
            raise
    note(f"wrote {out}")
    return 0


def _check_apart(source: Path, out: Path, mapping: Path | None) -> None:
    """SOURCE is only read: refuse an OUT or a --mapping file inside it (the mapping would
    replace a 0.7 segment named so, a dir in it breaks the 0.7 layout), or an OUT that it
    lies in."""
    home = source if source.is_dir() else source.parent
    if safety.within(out, home) or safety.within(home, out):
        raise UsageError(f"OUT {out}: overlaps SOURCE ({source}), which is only read; "
                         "write it elsewhere")
    if mapping is not None and safety.within(mapping, home):
        raise UsageError(f"--mapping: {mapping} is inside SOURCE ({source}), which is only "
                         "read; write it elsewhere")


def _check_mapping_path(path: Path, out: Path) -> None:
    """Refuse, before anything is written, a --mapping that cannot be written or that would
    sit inside OUT (which must hold the log dir only, or a rerun would find it not empty)."""
    parent = path.parent.resolve()
    if not parent.is_dir():
        raise UsageError(f"--mapping: {path.parent}: no such directory")
    if parent == out.resolve() or out.resolve() in parent.parents:
        raise UsageError(f"--mapping: {path} is inside OUT; write it elsewhere")


def _mapping_text(row: dict[str, object]) -> str:
    return (f"{row['topic']}-{row['partition']} byte offset {row['byteOffset']} -> offset "
            f"{row['newOffset']}")


def _write_mapping(spool: io.TextIOBase, path: Path | None, fmt: str) -> None:
    """The spooled (topic, partition, byte offset, new offset) rows, in --format, to
    standard output or atomically to `path`."""
    with tempfile.TemporaryFile() as rendered:
        out = make_renderer(fmt, _mapping_text, MAPPING_COLUMNS, out=rendered)
        for topic, partition, byte_offset, new_offset in csv.reader(spool):
            out.row({"topic": topic, "partition": int(partition),
                     "byteOffset": int(byte_offset), "newOffset": int(new_offset)})
        out.close()
        rendered.seek(0)
        if path is not None:
            atomic_write(path, rendered, root=path.parent)  # the operator chose its dir
            return
        try:
            shutil.copyfileobj(rendered, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        except OSError as e:  # a closed pipe too: OUT is not made when the mapping is lost
            raise LogDirIOError(f"standard output: cannot write the mapping: {e.strerror}"
                                ) from None
