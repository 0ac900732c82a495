"""`kafkalog append`: add records to a partition as a broker would store them."""

from __future__ import annotations

import base64
import binascii
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

import click
import orjson

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.codec.control import encode_end_txn
from kafkalog_cli.codec.message_v01 import encode_message_set
from kafkalog_cli.commands import options
from kafkalog_cli.errors import LogDirIOError, UsageError
from kafkalog_cli.output.console import note
from kafkalog_cli.storage import naming
from kafkalog_cli.storage.checkpoints import (
    read_offsets,
    restore_clean_shutdown,
    suspend_clean_shutdown,
    update_offsets,
)
from kafkalog_cli.storage.lock import LogDirLock
from kafkalog_cli.storage.writer import LogConfig, PartitionWriter

# ts, key, value, headers
Rec = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def _decode(value: Any, payload: str, where: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{where}: expected a string or null, found {type(value).__name__}")
    if payload == "base64":
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise UsageError(f"{where}: not valid base64") from None
    return value.encode("utf-8")


def read_records(f: IO[bytes], name: str, fmt: str, payload: str, separator: str | None,
                 now_ms: int) -> Iterator[Rec]:
    for n, line in enumerate(f, start=1):
        where = f"{name}:{n}"
        line = line.rstrip(b"\r\n")
        if fmt == "lines":
            text = line.decode("utf-8", "surrogateescape")
            if separator is not None and separator in text:
                k, v = text.split(separator, 1)
                yield now_ms, _decode(k, payload, where), _decode(v, payload, where), []
            else:
                yield now_ms, None, _decode(text, payload, where), []
            continue
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise UsageError(f"{where}: not valid JSON ({e})") from None
        if not isinstance(obj, dict):
            raise UsageError(f"{where}: expected a JSON object")
        ts = obj.get("timestamp", now_ms)
        if not isinstance(ts, int) or ts < -1:
            raise UsageError(f"{where}: timestamp must be epoch milliseconds")
        headers = []
        for h in obj.get("headers") or []:
            if not isinstance(h, dict) or not isinstance(h.get("key"), str):
                raise UsageError(f"{where}: headers must be [{{\"key\": str, \"value\": …}}]")
            headers.append((h["key"], _decode(h.get("value"), payload, where)))
        yield (ts, _decode(obj.get("key"), payload, where),
               _decode(obj.get("value"), payload, where), headers)


def _batches(recs: Iterator[Rec], max_records: int, max_bytes: int) -> Iterator[list[Rec]]:
    batch: list[Rec] = []
    size = 0
    for r in recs:
        rsize = 20 + len(r[1] or b"") + len(r[2] or b"") + sum(len(k) + len(v or b"")
                                                              for k, v in r[3])
        if batch and (len(batch) >= max_records or size + rsize > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(r)
        size += rsize
    if batch:
        yield batch


@click.command("append", epilog="Exit codes: 0 appended, 8 operational error (e.g. the log dir "
               "lock is held: stop the broker), 16 usage error (bad input: nothing is written).")
@click.argument("logdir", type=click.Path(file_okay=False, path_type=Path),
                shell_complete=options.complete_log_dir)
@click.option("--topic", required=True, shell_complete=options.complete_topic)
@click.option("--partition", type=click.IntRange(0), required=True,
              shell_complete=options.complete_partition)
@click.option("--input", "input_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Read records from this file (default: standard input).")
@click.option("--input-format", type=click.Choice(["jsonl", "lines"]), default="jsonl",
              show_default=True)
@click.option("--payload", type=click.Choice(["utf8", "base64"]), default="utf8",
              show_default=True,
              help="How keys, values and header values are written in the input.")
@click.option("--separator", help="With --input-format lines: split key and value at this string.")
@click.option("--codec", type=click.Choice(compression.NAMES), default="none", show_default=True)
@click.option("--level", type=int, help="Compression level.")
@click.option("--batch-records", type=click.IntRange(1), default=500, show_default=True)
@click.option("--batch-bytes", type=click.IntRange(1), default=16384, show_default=True,
              help="Close a batch before its records exceed this many bytes (producer batch.size).")
@click.option("--timestamp-type", type=click.Choice(["create", "log-append"]), default="create",
              show_default=True)
@click.option("--now", "now_ms", type=int, help="Clock in epoch ms (LogAppendTime, default "
              "record timestamps, segment.ms); default: the system clock.")
@click.option("--producer-id", type=click.IntRange(0), help="Idempotent/transactional producer id.")
@click.option("--producer-epoch", type=click.IntRange(0, 32767), default=0, show_default=True)
@click.option("--base-sequence", type=click.IntRange(0), default=0, show_default=True)
@click.option("--transactional", is_flag=True,
              help="Write transactional batches (needs --producer-id).")
@click.option("--end-txn", type=click.Choice(["commit", "abort"]),
              help="Close the transaction with a COMMIT or ABORT marker.")
@click.option("--coordinator-epoch", type=int, default=0, show_default=True)
@click.option("--leader-epoch", type=int, default=0, show_default=True,
              help="partitionLeaderEpoch of the batches (-1: unknown).")
@click.option("--magic", type=click.IntRange(0, 2), default=2, show_default=True,
              help="0 or 1 writes legacy message sets (fixtures for old formats).")
@click.option("--segment-bytes", type=click.IntRange(14), default=LogConfig.segment_bytes,
              show_default=True)
@click.option("--segment-ms", type=click.IntRange(1), default=LogConfig.segment_ms,
              show_default=True)
@click.option("--index-interval-bytes", type=click.IntRange(0),
              default=LogConfig.index_interval_bytes, show_default=True)
@click.option("--segment-index-bytes", type=click.IntRange(4),
              default=LogConfig.segment_index_bytes, show_default=True)
@click.option("--fsync", is_flag=True, help="fsync data, indexes and directories as it goes.")
@click.option("--clean-shutdown", is_flag=True, help="Also write .kafka_cleanshutdown.")
def command(logdir: Path, topic: str, partition: int, input_path: Path | None,
            input_format: str, payload: str, separator: str | None, codec: str,
            level: int | None, batch_records: int, batch_bytes: int, timestamp_type: str,
            now_ms: int | None, producer_id: int | None, producer_epoch: int,
            base_sequence: int, transactional: bool, end_txn: str | None,
            coordinator_epoch: int, leader_epoch: int, magic: int, segment_bytes: int,
            segment_ms: int, index_interval_bytes: int, segment_index_bytes: int, fsync: bool,
            clean_shutdown: bool) -> int:
    """Append records to partition T-P of LOGDIR, rolling segments and writing indexes,
    producer snapshots and checkpoints exactly as a broker does; the partition is left as a
    cleanly shut-down broker leaves it. Input is checked in full before anything is written.

    \b
    Examples:
      echo '{"key": "k1", "value": "hello"}' | kafkalog append /tmp/ld --topic t --partition 0
      kafkalog append /tmp/ld --topic t --partition 0 --input recs.jsonl --codec zstd
      seq 1000 | kafkalog append /tmp/ld --topic t --partition 0 --input-format lines
      kafkalog append /tmp/ld --topic t --partition 0 --input tx.jsonl \\
          --producer-id 7 --transactional --end-txn abort
    """
    if (transactional or end_txn) and producer_id is None:
        raise UsageError("--transactional and --end-txn need --producer-id")
    if magic < 2 and (transactional or end_txn or producer_id is not None or codec == "zstd"):
        raise UsageError("magic 0/1 has no producer fields, transactions or zstd")
    if ".." in topic or "/" in topic or not topic:
        raise UsageError(f"invalid topic name {topic!r}")
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
        # pass 1: validate everything, so bad input writes nothing
        count = sum(1 for _ in read_records(src, name, input_format, payload, separator, clock))
        src.seek(0)
        logdir.mkdir(parents=True, exist_ok=True)
        stack.enter_context(LogDirLock(logdir))
        w = PartitionWriter(logdir / naming.partition_dir_name(topic, partition), topic,
                            partition, cfg, now_ms=now_ms)
        w.check()
        starts = read_offsets(logdir / naming.LOG_START)
        for ckpt in (naming.RECOVERY_POINT, naming.REPLICATION):
            read_offsets(logdir / ckpt)  # one that does not parse refuses before any write
        marker = suspend_clean_shutdown(logdir, fsync=fsync)  # back once all is consistent
        w.open()
        end_before = w.next_offset
        seq = base_sequence
        recs = read_records(src, name, input_format, payload, separator, clock)
        for batch in _batches(recs, batch_records, batch_bytes):
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
            seq += len(batch)
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
