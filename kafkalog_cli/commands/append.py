"""`kafkalog append`: add records to a partition as a broker would store them."""

from __future__ import annotations

import itertools
import os
import shutil
import stat
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.batch_v2 import encode_batch, increment_sequence
from kafkalog_cli.codec.control import encode_end_txn
from kafkalog_cli.codec.message_v01 import encode_message_set
from kafkalog_cli.commands import options
from kafkalog_cli.commands.append_input import batches, read_records
from kafkalog_cli.errors import LogDirIOError, UsageError
from kafkalog_cli.output.console import note
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.checkpoints import (
    read_offsets,
    restore_clean_shutdown,
    suspend_clean_shutdown,
    update_offsets,
)
from kafkalog_cli.storage.disk.lock import LogDirLock
from kafkalog_cli.storage.disk.safety import refuse_links
from kafkalog_cli.storage.maintenance.log_config import LogConfig
from kafkalog_cli.storage.maintenance.writer import PartitionWriter


@click.command("append", epilog="Exit codes: 0 appended, 8 operational error (e.g. the log dir "
               "lock is held: stop the broker), 16 usage error (bad input: nothing is written)."
               + options.NO_LINKS)
@click.argument("logdir", type=options.LocalPath(file_okay=False, path_type=Path),
                shell_complete=options.complete_log_dir)
@click.option("--topic", type=options.TopicName(), required=True,
              shell_complete=options.complete_topic)
@click.option("--partition", type=options.Int32(min=0), required=True,
              shell_complete=options.complete_partition)
@click.option("--input", "input_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Read records from this file (default: standard input).")
@click.option("--input-format", type=click.Choice(["jsonl", "lines"]), default="jsonl",
              show_default=True)
@click.option("--payload", type=click.Choice(["utf8", "base64"]), default="utf8",
              show_default=True,
              help="How keys, values and header values are written in the input.")
@click.option("--separator", type=options.Bytes(),
              help="With --input-format lines: split key and value at these bytes (the "
                   "argument's own, UTF-8 or not).")
@click.option("--codec", type=click.Choice(compression.NAMES), default="none", show_default=True)
@click.option("--level", type=options.Int32(), help=options.LEVEL_HELP)
@click.option("--batch-records", type=options.Int32(min=1), default=500, show_default=True)
@click.option("--batch-bytes", type=options.Int32(min=1), default=16384, show_default=True,
              help="Close a batch before its records exceed this many bytes (producer batch.size).")
@click.option("--timestamp-type", type=click.Choice(["create", "log-append"]), default="create",
              show_default=True)
@click.option("--now", "now_ms", type=options.Time(),
              help="The clock (LogAppendTime, default record timestamps, segment.ms), epoch "
                   "ms or ISO-8601; default: the system clock.")
@click.option("--producer-id", type=options.Int64(min=0),
              help="Idempotent/transactional producer id.")
@click.option("--producer-epoch", type=options.Int16(min=0), default=0, show_default=True)
@click.option("--base-sequence", type=options.Int32(min=0), default=0, show_default=True,
              help="Sequence of the first record; later batches follow on, wrapping past "
                   "INT32 max to 0 as producers do.")
@click.option("--transactional", is_flag=True,
              help="Write transactional batches (needs --producer-id).")
@click.option("--end-txn", type=click.Choice(["commit", "abort"]),
              help="Close the transaction with a COMMIT or ABORT marker.")
@click.option("--coordinator-epoch", type=options.Int32(min=0), default=0, show_default=True)
@click.option("--leader-epoch", type=options.Int32(min=-1), default=0, show_default=True,
              help="partitionLeaderEpoch of the batches (-1: unknown).")
@click.option("--magic", type=options.Int8(min=0, max=2), default=2, show_default=True,
              help="0 or 1 writes legacy message sets (fixtures for old formats).")
@click.option("--segment-bytes", type=options.CONFIGS["segment.bytes"],
              default=LogConfig.segment_bytes, show_default=True)
@click.option("--segment-ms", type=options.CONFIGS["segment.ms"], default=LogConfig.segment_ms,
              show_default=True)
@click.option("--index-interval-bytes", type=options.CONFIGS["index.interval.bytes"],
              default=LogConfig.index_interval_bytes, show_default=True)
@click.option("--segment-index-bytes", type=options.CONFIGS["segment.index.bytes"],
              default=LogConfig.segment_index_bytes, show_default=True)
@click.option("--create", is_flag=True,
              help="Create LOGDIR if it does not exist (without it a mistyped LOGDIR is an "
                   "error, not a new log dir).")
@click.option("--fsync", is_flag=True, help="fsync data, indexes and directories as it goes.")
@click.option("--clean-shutdown", is_flag=True, help="Also write .kafka_cleanshutdown.")
def command(logdir: Path, topic: str, partition: int, input_path: Path | None,
            input_format: str, payload: str, separator: bytes | None, codec: str,
            level: int | None, batch_records: int, batch_bytes: int, timestamp_type: str,
            now_ms: int | None, producer_id: int | None, producer_epoch: int,
            base_sequence: int, transactional: bool, end_txn: str | None,
            coordinator_epoch: int, leader_epoch: int, magic: int, segment_bytes: int,
            segment_ms: int, index_interval_bytes: int, segment_index_bytes: int, create: bool,
            fsync: bool, clean_shutdown: bool) -> int:
    """Append records to partition T-P of LOGDIR, rolling segments and writing indexes,
    producer snapshots and checkpoints exactly as a broker does; the partition is left as a
    cleanly shut-down broker leaves it. Input is checked in full before anything is written.

    \b
    Examples:
      echo '{"value": "hello"}' | kafkalog append /tmp/ld --create --topic t --partition 0
      kafkalog append /tmp/ld --topic t --partition 0 --input recs.jsonl --codec zstd
      seq 1000 | kafkalog append /tmp/ld --topic t --partition 0 --input-format lines
      kafkalog append /tmp/ld --topic t --partition 0 --input tx.jsonl \\
          --producer-id 7 --transactional --end-txn abort
    """
    if (transactional or end_txn) and producer_id is None:
        raise UsageError("--transactional and --end-txn need --producer-id")
    if magic < 2 and (transactional or end_txn or producer_id is not None or codec == "zstd"):
        raise UsageError("magic 0/1 has no producer fields, transactions or zstd")
    options.check_level(codec, level)
    if separator == b"":
        raise UsageError("--separator: the empty string splits nothing")
    if not create and not logdir.is_dir():  # a mistyped LOGDIR must not become a log dir
        raise LogDirIOError(f"{logdir}: no such log dir (pass --create to make a new one)")
    if logdir.is_dir() and any(naming.parse_file_name(p.name).kind is naming.FileKind.SEGMENT
                               for p in logdir.iterdir()):
        raise UsageError(f"{logdir}: is a partition dir (it holds segment files); give the log "
                         "dir that holds it")
    clock = now_ms if now_ms is not None else int(time.time() * 1000)
    codec_id = compression.BY_NAME[codec]
    ts_type = 1 if timestamp_type == "log-append" else 0
    cfg = LogConfig(segment_bytes=segment_bytes, segment_ms=segment_ms,
                    index_interval_bytes=index_interval_bytes,
                    segment_index_bytes=segment_index_bytes, fsync=fsync)
    with ExitStack() as stack:
        if input_path is None:
            spool = stack.enter_context(tempfile.TemporaryFile())
            shutil.copyfileobj(sys.stdin.buffer, spool)
            spool.seek(0)
            src, name = spool, "<stdin>"
        else:
            try:
                src = stack.enter_context(open(input_path, "rb"))
            except OSError as e:  # what cannot be opened is operational, as for a PATH
                raise LogDirIOError(f"{input_path}: cannot read: {e.strerror}") from None
            name = str(input_path)
            if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):  # a pipe: read once, as stdin
                spool = stack.enter_context(tempfile.TemporaryFile())
                shutil.copyfileobj(src, spool)
                spool.seek(0)
                src = spool
        # pass 1: validate everything, so bad input writes nothing
        before = _identity(src)
        count = sum(1 for _ in read_records(src, name, input_format, payload, separator, clock,
                                            headers=magic == 2))
        if _identity(src) != before:  # pass 2 must write what pass 1 checked
            raise LogDirIOError(f"{name}: changed while it was being read; nothing was "
                                "appended (give a file that no one writes meanwhile)")
        src.seek(0)
        w = PartitionWriter(logdir / naming.partition_dir_name(topic, partition), topic,
                            partition, cfg, now_ms=now_ms)
        _refuse_links(w)  # before the lock file, the first change, is made
        logdir.mkdir(parents=True, exist_ok=True)
        stack.enter_context(LogDirLock(logdir))
        _refuse_links(w)
        w.check(records=count + bool(end_txn))
        starts = read_offsets(logdir / naming.LOG_START)
        for ckpt in (naming.RECOVERY_POINT, naming.REPLICATION):
            read_offsets(logdir / ckpt)  # one that does not parse refuses before any write
        marker = suspend_clean_shutdown(logdir, fsync=fsync)  # back once all is consistent
        w.open()
        end_before = w.next_offset
        seq = base_sequence
        # no more than pass 1 checked, should the file grow after all
        recs = itertools.islice(read_records(src, name, input_format, payload, separator,
                                             clock), count)
        for batch in batches(recs, batch_records, batch_bytes):
            first = w.next_offset
            tuples = [(first + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(batch)]
            if magic < 2:
                data = encode_message_set([(o, t if magic else -1, k, v)
                                           for o, t, k, v, _ in tuples],
                                          magic=magic, codec=codec_id, timestamp_type=ts_type,
                                          log_append_time=clock, level=level)
                if codec_id == compression.NONE:
                    w.append_many(data)
                else:
                    w.append(data)
                continue
            w.append(encode_batch(tuples, codec=codec_id, level=level, timestamp_type=ts_type,
                                  log_append_time=clock, producer_id=-1 if producer_id is None
                                  else producer_id,
                                  producer_epoch=-1 if producer_id is None else producer_epoch,
                                  base_sequence=-1 if producer_id is None else seq,
                                  partition_leader_epoch=leader_epoch,
                                  transactional=transactional))
            seq = increment_sequence(seq, len(batch))
        if end_txn:
            k, v = encode_end_txn(end_txn == "commit", coordinator_epoch)
            w.append(encode_batch([(w.next_offset, clock, k, v, [])], producer_id=producer_id or 0,
                                  producer_epoch=producer_epoch, timestamp_type=ts_type,
                                  log_append_time=clock, partition_leader_epoch=leader_epoch,
                                  transactional=True, control=True))
        w.close()
        leo = w.next_offset
        key = (topic, partition)
        update_offsets(logdir / naming.RECOVERY_POINT, {key: leo}, fsync=fsync)
        update_offsets(logdir / naming.REPLICATION, {key: leo}, fsync=fsync)
        # a log start that DeleteRecords or retention moved into the old log stays; any other
        # entry goes (past the old end, a broker's loader would delete the whole log)
        start = starts.get(key)
        keep = start is not None and w.log_start_offset < start <= end_before
        update_offsets(logdir / naming.LOG_START, {} if keep else {key: None}, fsync=fsync)
        if marker is not None or clean_shutdown:
            restore_clean_shutdown(logdir, b'{"version":0,"brokerEpoch":0}' if marker is None
                                   else marker, fsync=fsync)
    note(f"appended {count} records to {topic}-{partition}; log end offset {leo}"
         + (f" ({w.rolls} segment rolls)" if w.rolls else ""))
    return 0


_WRITES = (naming.LOCK, naming.CLEAN_SHUTDOWN, naming.RECOVERY_POINT, naming.REPLICATION,
           naming.LOG_START)


def _refuse_links(w: PartitionWriter) -> None:
    """A partition dir that is a symlink or holds one, or a root file append writes (or its
    .tmp) that is one: refused, nothing is written through a link."""
    refuse_links(w.root, (*_WRITES, *(n + ".tmp" for n in _WRITES[1:])))
    refuse_links(w.directory)


def _identity(f: Any) -> tuple[int, int, int, int]:
    """What changes when a file is written: its inode, size and change times."""
    st = os.fstat(f.fileno())
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns
