"""`kafkalog dump`: batches, records, indexes, snapshots and checkpoints, as text or data."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from kafkalog_cli import _speedups
from kafkalog_cli.codec.batch_v2 import EAGER_RECORDS, decrement_sequence
from kafkalog_cli.codec.checkpoint import parse_leader_epochs, parse_offsets
from kafkalog_cli.codec.control import parse_control
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.layout import TIMESTAMP_TYPES
from kafkalog_cli.codec.model import Damage, Record
from kafkalog_cli.codec.snapshot import decode_snapshot
from kafkalog_cli.commands import chunked, decoding, options, parallel
from kafkalog_cli.commands.common import runs
from kafkalog_cli.commands.dump_rows import batch_row, csv_columns
from kafkalog_cli.errors import EXIT_UNFIXED, CorruptDataError, KafkalogError, UsageError
from kafkalog_cli.output.console import note, warn
from kafkalog_cli.output.render import Renderer, json_bytes, make_renderer, payload_encoder
from kafkalog_cli.storage.disk import naming, pieces
from kafkalog_cli.storage.disk.files import read_small
from kafkalog_cli.storage.disk.index import OffsetIndex, TimeIndex, TxnIndex
from kafkalog_cli.storage.disk.logdir import PartitionDir, Target
from kafkalog_cli.storage.disk.reader import segments_in_range
from kafkalog_cli.storage.disk.segment import Segment, iter_batches
from kafkalog_cli.storage.formats import open_target
from kafkalog_cli.storage.formats.current import FORMAT as CURRENT
from kafkalog_cli.storage.formats.current import file_kind

Row = dict[str, Any]
# the compiled writer of v2 data records' rows: (topic, partition, timestamp type, records)
RecordWriter = Callable[[str, int, str, Iterable[Record]], bytes]
# the compiled writer of a v2 data batch's text straight from its records section: the
# batch, the section and its LogAppendTime (records_section); None: take the object path
SectionWriter = Callable[[Batch, bytes, "int | None"], "bytes | None"]
FAST_CHUNK = 4096  # records the compiled writer turns into one write
# batch headers a -j run may read to cut big partitions (pieces.py): HOPS, and one for each
# HOP_BYTES of `.log` data. A fixed budget ran out on 2.2 GB of 7 KB batches (326 k): the
# rest went whole, a 128 MiB partition's gigabytes of text held ahead of its turn, spilled
# to a file (7 % of the CPU of dump -j 2). Per byte, the walk stays a small share of the
# dump whatever the dir's size; a file of batches under HOP_BYTES is still cut less.
HOPS = 1 << 18
HOP_BYTES = 4096


class Filters:
    def __init__(self, from_offset: int | None, to_offset: int | None, from_time: int | None,
                 to_time: int | None, key: bytes | None, producer_id: int | None,
                 only: str) -> None:
        self.from_offset, self.to_offset = from_offset, to_offset
        self.from_time, self.to_time = from_time, to_time
        self.key, self.producer_id, self.only = key, producer_id, only

    def batch_ok(self, b: Batch) -> bool:
        if (self.only == "data" and b.is_control) or \
                (self.only == "control" and not b.is_control):
            return False
        if self.producer_id is not None and b.producer_id != self.producer_id:
            return False
        if self.from_offset is not None and b.last_offset < self.from_offset:
            return False
        if self.to_offset is not None and b.magic == 2 and b.base_offset > self.to_offset:
            return False
        # every record's timestamp is <= the batch max (LogAppendTime: equal to it)
        return not (self.from_time is not None and 0 <= b.max_timestamp < self.from_time)

    @property
    def on_records(self) -> bool:
        return any(v is not None for v in (self.from_offset, self.to_offset, self.from_time,
                                           self.to_time, self.key))

    def record_ok(self, offset: int, timestamp: int, key: bytes | None) -> bool:
        if self.from_offset is not None and offset < self.from_offset:
            return False
        if self.to_offset is not None and offset > self.to_offset:
            return False
        if self.from_time is not None and timestamp < self.from_time:
            return False
        if self.to_time is not None and timestamp > self.to_time:
            return False
        return self.key is None or key == self.key


@dataclass
class Piece:
    """What one -j item of a big partition dumps: its segment's batches from `start` to
    `end` (None: the file's end), headed as a segment if `heading`, after the partition's
    bootstrap snapshot if `snapshots` (its first piece)."""

    part: PartitionDir
    seg: Segment
    start: int
    end: int | None
    heading: bool = True
    snapshots: bool = False
    log_bytes: int = 0  # what -j's planning weighs it by


class Dumper:
    def __init__(self, out: Renderer, records: bool, batches: bool,
                 enc: Callable[[bytes | None], str | None], filters: Filters,
                 max_decompressed: int) -> None:
        self.out = out
        self.records = records
        self.batches = batches
        self.enc = enc
        self.f = filters
        self.max_decompressed = max_decompressed
        self.problems = 0
        self.sizes = False  # text output shows raw key/value sizes
        self.fast_records: RecordWriter | None = None  # record_writer's, for jsonl and text
        self.fast_section: SectionWriter | None = None  # section_writer's, for text
        self.decoding = decoding.Decoding("none")
        self.jobs = 1  # -j: partitions dumped in worker processes

    def undecodable(self, file: str, pos: int, e: CorruptDataError, what: str) -> None:
        """A batch whose records (or, for a legacy wrapper, base offset) do not decode: one
        warning at its file and byte, and the dump goes on."""
        self.problems += 1
        e.located(file, pos)
        warn(f"{e.path}:{e.pos}: {what} do not decode: {e.reason}")

    def problem(self, message: str) -> None:
        """Damage a format's reader found: one warning, and the exit code says it."""
        self.problems += 1
        warn(message)

    def damage(self, path: Path) -> Callable[[Damage], None]:
        def report(d: Damage) -> None:
            self.problems += 1
            warn(f"{path}:{d.position}: {d.reason} [{d.code}]")
            if d.code in ("torn-tail", "zero-tail"):
                self.out.text(f"Found {d.size} invalid bytes at the end of {path.name}")
        return report

    # -- logs -------------------------------------------------------------------------
    def log_batches(self, path: Path, topic: str, partition: int,
                    batches: Iterator[tuple[int, Batch]], kraft_snapshot: bool = False) -> None:
        out, enc, f = self.out, self.enc, self.f
        decoder = self.decoding.for_topic(topic, kraft_snapshot)
        file = str(path)
        for pos, b in batches:
            if f.to_offset is not None and b.magic == 2 and b.base_offset > f.to_offset:
                break
            if not f.batch_ok(b):
                continue
            if self.batches:
                try:  # a legacy wrapper's base offset and count come from its inner messages
                    if b.magic < 2 and b.compression:
                        b.records(self.max_decompressed)  # kept: decoded once, under the cap
                    row = batch_row(b, pos, file)
                except CorruptDataError as e:
                    self.undecodable(file, pos, e, "inner messages")
                    continue
                out.row(row)
            if not self.records:
                continue
            check = f.on_records
            if self.fast_section is not None and not check and b.magic == 2 \
                    and not b.is_control and decoder is None and 0 < b.count <= EAGER_RECORDS:
                try:
                    data, lat = b.records_section(self.max_decompressed)
                except CorruptDataError as e:
                    self.undecodable(file, pos, e, "records")
                    continue
                text = self.fast_section(b, data, lat)
                if text is not None:
                    out.out.write(text)
                    continue  # else the object path below, which says what is wrong
            try:
                recs = b.records(self.max_decompressed)
            except CorruptDataError as e:
                self.undecodable(file, pos, e, "records")
                continue
            tstype = TIMESTAMP_TYPES[b.timestamp_type]
            control = b.is_control
            if self.fast_records is not None and b.magic == 2 and not control \
                    and decoder is None:
                if check:
                    recs = (r for r in recs if f.record_ok(r.offset, r.timestamp, r.key))
                # a slice at a time: the text of a batch of millions of records is not held
                while chunk := self.fast_records(topic, partition, tstype,
                                                 itertools.islice(recs, FAST_CHUNK)):
                    out.out.write(chunk)
                continue
            for r in recs:
                if check and not f.record_ok(r.offset, r.timestamp, r.key):
                    continue
                row: Row = {"kind": "record", "topic": topic, "partition": partition,
                            "offset": r.offset, "timestamp": r.timestamp,
                            "timestampType": tstype, "key": enc(r.key), "value": enc(r.value),
                            "headers": [{"key": k, "value": enc(v)} for k, v in r.headers]}
                if self.sizes:
                    row["keySize"] = -1 if r.key is None else len(r.key)
                    row["valueSize"] = -1 if r.value is None else len(r.value)
                if b.magic == 2:
                    row["sequence"] = r.sequence
                else:
                    row["crc"] = r.crc
                if control:
                    try:
                        info = parse_control(r.key, r.value)
                        row["control"] = info.as_dict()
                        self.decoding.control(row, info.type, r.value)
                    except CorruptDataError as e:
                        row["control"] = {"error": e.reason}
                elif decoder is not None:
                    self.decoding.record(row, decoder, r.key, r.value)
                out.row(row)

    def log_file(self, path: Path, base: int | None) -> None:
        part = naming.parse_partition_dir(path.parent.name)
        topic, partition = (part.topic, part.partition) if part else (path.parent.name, -1)
        self.out.text(f"Dumping {path}")
        fn = naming.parse_file_name(path.name)
        if fn.kind is naming.FileKind.KRAFT_SNAPSHOT:
            self.out.text(f"Snapshot end offset: {fn.offset}, epoch: {fn.epoch}")
        elif path.name == "bootstrap.checkpoint":
            self.out.text("KRaft bootstrap snapshot")
        elif base is not None:
            self.out.text(f"Log starting offset: {base}")
        self.log_batches(path, topic, partition,
                         iter_batches(path, on_damage=self.damage(path)),
                         kraft_snapshot=path.name.endswith(".checkpoint"))

    def partition(self, part: PartitionDir) -> None:
        self.snapshots(part)
        for seg, start in segments_in_range(part, self.f.from_offset, self.f.to_offset):
            self.segment(Piece(part, seg, start, None))

    def snapshots(self, part: PartitionDir) -> None:
        # the bootstrap snapshot a Kafka 4 format writes for a dynamic quorum: what the
        # metadata log starts from (other KRaft snapshots are dumped when named)
        for fn in part.kraft_snapshots:
            if naming.is_bootstrap_snapshot(fn):
                self.log_file(part.path / fn.name, None)

    def segment(self, pc: Piece) -> None:
        """A segment's batches from `pc.start` to `pc.end`, after its heading if it is the
        segment's first piece."""
        path = pc.seg.log_path
        if pc.heading:
            self.out.text(f"Dumping {path}")
            self.out.text(f"Log starting offset: {pc.seg.base_offset}")
        self.log_batches(path, pc.part.topic, pc.part.partition,
                         iter_batches(path, pc.start, pc.end, on_damage=self.damage(path)))

    def partitions(self, parts: list[PartitionDir]) -> None:
        """Dump partitions in order, over `self.jobs` worker processes; a big partition's
        segments cut into pieces (storage/disk/pieces.py), so that it keeps them all busy."""
        self.jobs = parallel.jobs_for(parts, self.jobs)
        items = self.work_items(parts)
        self.problems += sum(chunked.ordered(items, self.problems_in, self.jobs,
                                             renderer=self.out))

    def work_items(self, parts: list[PartitionDir]) -> list[PartitionDir | Piece]:
        """The -j items `parts` are dumped as: the partitions, or with workers, big ones cut."""
        if self.jobs <= 1 or self.f.from_offset is not None:  # (a start from the index: whole)
            return list(parts)
        budget = pieces.HopBudget(
            HOPS + sum(parallel.item_bytes(p) or 0 for p in parts) // HOP_BYTES)
        return [x for part in parts for x in self.cut(part, budget)]

    def cut(self, part: PartitionDir, budget: pieces.HopBudget) -> list[PartitionDir | Piece]:
        """`part` as -j items: itself, or its segments' pieces in order."""
        if part.log_bytes < 2 * pieces.MIN_PIECE:
            return [part]
        out: list[PartitionDir | Piece] = []
        for seg, start in segments_in_range(part, None, self.f.to_offset):
            bounds = [start, *pieces.cuts(seg.file(naming.LOG), start, budget)]
            for k, a in enumerate(bounds):
                b = bounds[k + 1] if k + 1 < len(bounds) else None
                size = (b if b is not None else max(a, seg.size)) - a
                out.append(Piece(part, seg, a, b, heading=k == 0, log_bytes=size))
        if not out:
            return [part]
        out[0].snapshots = True
        return out

    def problems_in(self, item: PartitionDir | Piece) -> int:
        """Dump a partition or a piece of one; the problems it found (summed by the caller,
        which may run this in a worker process: commands/parallel.py)."""
        before = self.problems
        if isinstance(item, Piece):
            if item.snapshots:
                self.snapshots(item.part)
            self.segment(item)
        else:
            self.partition(item)
        found, self.problems = self.problems - before, before
        return found

    # -- other files ------------------------------------------------------------------
    def other_file(self, path: Path, fn: naming.FileName) -> None:
        out = self.out
        kind = file_kind(path, fn)  # refuses an unknown file before printing anything
        out.text(f"Dumping {path}")
        file = str(path)
        base = fn.offset if fn.offset is not None else 0
        if kind == "index-entry":
            idx = OffsetIndex.read(path, base)
            if not idx.slot_count:
                out.text(f"{path} is empty.")
            for off, pos in idx.entries:
                out.row({"kind": "index-entry", "file": file, "offset": off, "position": pos})
            if idx.untrimmed:
                note(f"{path}: {idx.slot_count - idx.used} zero-filled preallocated slots not "
                     "shown")
        elif kind == "timeindex-entry":
            tidx = TimeIndex.read(path, base)
            for ts, off in tidx.entries:
                out.row({"kind": "timeindex-entry", "file": file, "timestamp": ts,
                         "offset": off})
        elif kind == "aborted-txn":
            for e in TxnIndex.read(path, base).entries:
                out.row({"kind": "aborted-txn", "file": file, "version": e.version,
                         "producerId": e.producer_id, "firstOffset": e.first_offset,
                         "lastOffset": e.last_offset, "lastStableOffset": e.last_stable_offset})
        elif kind == "producer":
            for p in decode_snapshot(read_small(path)):
                out.row({"kind": "producer", "file": file, "producerId": p.producer_id,
                         "producerEpoch": p.epoch, "coordinatorEpoch": p.coordinator_epoch,
                         "currentTxnFirstOffset": p.current_txn_first_offset,
                         "lastTimestamp": p.timestamp, "lastSequence": p.last_sequence,
                         "lastOffset": p.last_offset, "offsetDelta": p.offset_delta})
        elif kind == "leader-epoch":
            for epoch, start in parse_leader_epochs(read_small(path)):
                out.row({"kind": "leader-epoch", "file": file, "epoch": epoch,
                         "startOffset": start})
        elif kind == "checkpoint-entry":
            for (t, p), off in parse_offsets(read_small(path)).items():
                out.row({"kind": "checkpoint-entry", "file": file, "topic": t, "partition": p,
                         "offset": off})
        else:
            out.row({"kind": "file", "file": file,
                     "content": read_small(path).decode("utf-8", "backslashreplace")})


def record_writer(fmt: str, payload: str, print_data: bool) -> RecordWriter | None:
    """The compiled writer of v2 data records' rows, when the extension is built and `fmt`
    has one (jsonl, text): the same bytes the pure path writes for the rows built above,
    orjson's or text_line's (tests/cli/test_dump_fast_writers.py checks)."""
    fc = _speedups.compiled("fastcodec") if fmt in ("jsonl", "text") else None
    if fc is None:
        return None
    try:
        records_jsonl, records_text = fc.records_jsonl, fc.records_text
    except AttributeError:  # built from an older fastcodec.pyx
        return None
    mode = {"utf8": 0, "base64": 1, "hex": 2}[payload]
    types: dict[str, bytes] = {}

    if fmt == "text":
        def text(topic: str, partition: int, tstype: str, recs: Iterable[Record]) -> bytes:
            t = types.get(tstype)
            if t is None:
                t = types[tstype] = tstype.encode()
            return records_text(recs, t, mode, print_data)

        return text

    import orjson

    prefixes: dict[tuple[str, int], bytes] = {}

    def jsonl(topic: str, partition: int, tstype: str, recs: Iterable[Record]) -> bytes:
        prefix = prefixes.get((topic, partition))
        if prefix is None:
            prefix = json_bytes({"kind": "record", "topic": topic, "partition": partition,
                                 "offset": 0})[:-2]  # up to "offset":
            prefixes[(topic, partition)] = prefix
        t = types.get(tstype)
        if t is None:
            t = types[tstype] = orjson.dumps(tstype)
        return records_jsonl(recs, prefix, t, mode)

    return jsonl


def section_writer(fmt: str, payload: str, print_data: bool) -> SectionWriter | None:
    """For text: the compiled writer that turns a batch's records section into its record
    lines with no object per record, the bytes record_writer's text writes for the decoded
    records (tests/codec/test_section_text.py checks); None for other formats or no build."""
    fc = _speedups.compiled("fastcodec") if fmt == "text" else None
    section_text = getattr(fc, "section_text", None)
    if section_text is None:
        return None
    mode = {"utf8": 0, "base64": 1, "hex": 2}[payload]
    types = {k: t.encode() for k, t in TIMESTAMP_TYPES.items()}

    def text(b: Batch, data: bytes, lat: int | None) -> bytes | None:
        return section_text(data, b.count, b.base_offset, b.base_timestamp, b.base_sequence,
                            lat, types[b.timestamp_type], mode, print_data)

    return text


def _jbool(v: bool) -> str:
    return "true" if v else "false"


def text_line(row: Row, print_data: bool = False) -> str | None:
    """Kafka 4.3's kafka-dump-log lines (tests/conformance/test_conformance_dump4.py), so
    existing greps keep working."""
    kind = row["kind"]
    if kind == "batch":
        ts = f"{row['timestampType']}: {row['maxTimestamp']}"
        tail = (f"position: {row['position']} {ts} size: {row['size']} magic: {row['magic']} "
                f"compresscodec: {row['compression']} crc: {row['crc']} "
                f"isvalid: {_jbool(row['isValid'])}")
        if row["magic"] < 2:
            return f"offset: {row['lastOffset']} {tail}"
        dh = row["deleteHorizonMs"]
        horizon = "OptionalLong.empty" if dh is None else f"OptionalLong[{dh}]"
        return (f"baseOffset: {row['baseOffset']} lastOffset: {row['lastOffset']} count: "
                f"{row['count']} baseSequence: {row['baseSequence']} lastSequence: "
                f"{row['lastSequence']} producerId: {row['producerId']} producerEpoch: "
                f"{row['producerEpoch']} partitionLeaderEpoch: {row['partitionLeaderEpoch']} "
                f"isTransactional: {_jbool(row['isTransactional'])} isControl: "
                f"{_jbool(row['isControl'])} deleteHorizonMs: {horizon} {tail}")
    if kind == "record":
        return _record_text(row, print_data)
    if kind == "index-entry":
        return f"offset: {row['offset']} position: {row['position']}"
    if kind == "timeindex-entry":
        return f"timestamp: {row['timestamp']} offset: {row['offset']}"
    if kind == "aborted-txn":
        return (f"version: {row['version']} producerId: {row['producerId']} firstOffset: "
                f"{row['firstOffset']} lastOffset: {row['lastOffset']} lastStableOffset: "
                f"{row['lastStableOffset']}")
    if kind == "producer":
        return _producer_text(row)
    if kind == "leader-epoch":
        return f"epoch: {row['epoch']} startOffset: {row['startOffset']}"
    if kind == "checkpoint-entry":
        return f"{row['topic']} {row['partition']} {row['offset']}"
    if kind == "file":
        return str(row["content"])
    if kind == "entry":  # Kafka 0.7's DumpLogSegments, with position and nextOffset added
        return (f"offset: {row['offset']} position: {row['position']} nextOffset: "
                f"{row['nextOffset']} isvalid: {_jbool(row['isValid'])} payloadsize: "
                f"{row['payloadSize']} magic: {row['magic']} compresscodec: "
                f"{row['compression']} crc: {row['crc']}")
    if kind == "message":
        inner = "" if row["innerIndex"] is None else f" innerIndex: {row['innerIndex']}"
        line = (f"| offset: {row['offset']} nextOffset: {row['nextOffset']}{inner} "
                f"payloadsize: {row['payloadSize']} magic: {row['magic']} compresscodec: "
                f"{row['compression']} crc: {row['crc']} isvalid: {_jbool(row['isValid'])}")
        return line + (f" payload: {row['payload']}" if print_data else "")
    return None


def _optional_long(v: int) -> str:
    """Java's OptionalLong.toString: a negative value is Kafka's "none"."""
    return "OptionalLong.empty" if v < 0 else f"OptionalLong[{v}]"


def _producer_text(row: Row) -> str:
    """A producer snapshot entry as ProducerStateManager.readSnapshot gives it: its last
    batch's metadata only when it has a last offset."""
    line = (f"producerId: {row['producerId']} producerEpoch: {row['producerEpoch']} "
            f"coordinatorEpoch: {row['coordinatorEpoch']} currentTxnFirstOffset: "
            f"{_optional_long(row['currentTxnFirstOffset'])} lastTimestamp: "
            f"{row['lastTimestamp']}")
    if row["lastOffset"] < 0:
        return line
    first = decrement_sequence(row["lastSequence"], row["offsetDelta"])
    return (f"{line} firstSequence: {first} lastSequence: {row['lastSequence']} lastOffset: "
            f"{row['lastOffset']} offsetDelta: {row['offsetDelta']} timestamp: "
            f"{row['lastTimestamp']}")


def _record_text(row: Row, print_data: bool) -> str:
    key, value = row["key"], row["value"]
    parts = [f"| offset: {row['offset']} {row['timestampType']}: {row['timestamp']} "
             f"keySize: {row['keySize']} valueSize: {row['valueSize']}"]
    if "sequence" in row:
        keys = ",".join(h["key"] for h in row["headers"])
        parts.append(f" sequence: {row['sequence']} headerKeys: [{keys}]")
    else:
        parts.append(f" isValid: true crc: {row['crc']}")
    control = row.get("control")
    if control and decoding.control_text(control):
        parts.append(decoding.control_text(control) or "")
    elif control:
        if control.get("type") in ("COMMIT", "ABORT"):
            parts.append(f" endTxnMarker: {control['type']} coordinatorEpoch: "
                         f"{control.get('coordinatorEpoch')}")
        else:
            parts.append(f" controlType: {control.get('type')}({control.get('typeId')})")
    elif print_data and "decoded" in row:
        parts.append(decoding.data_text(row["decoded"], row["offset"]))
    elif print_data:
        if key is not None:
            parts.append(f" key: {key}")
        if value is not None:
            parts.append(f" payload: {value}")
    return "".join(parts)


def _partitions_of_current(t: Target) -> bool:
    return t.format is CURRENT and t.kind != "file"


@click.command("dump", epilog="Exit codes: 0 all read, 4 damage found (reported on stderr, "
                              "with file and byte), 8 operational error (also: stdout closed), "
                              "16 usage error, 141 the reader of stdout went away before the "
                              "end (as with | head; what a shell reports for cat).")
@options.paths_argument
@click.option("--records", "with_records", is_flag=True,
              help="Also decode and print the records of each batch (deep iteration).")
@click.option("--print-data", is_flag=True, help="Print keys and values (implies --records).")
@click.option("--no-batches", is_flag=True, help="With --records, print only records.")
@options.format_option()
@options.payload_option
@click.option("--from-offset", type=options.Int64(min=0),
              help="First offset to show (seeks via the index).")
@click.option("--to-offset", type=options.Int64(min=0), help="Last offset to show (inclusive).")
@click.option("--from-time", type=options.Time(),
              help="Earliest timestamp (epoch ms or ISO-8601).")
@click.option("--to-time", type=options.Time(), help="Latest timestamp (inclusive).")
@click.option("--key", "key_filter", type=options.Bytes(),
              help="Only records with this key: the argument's bytes, UTF-8 or not; implies "
                   "--records.")
@click.option("--producer-id", type=options.Int64(min=-1),
              help="Only batches of this producer id (-1: batches with none).")
@click.option("--only", type=click.Choice(["all", "data", "control"]), default="all",
              show_default=True, help="Only data batches or only control batches.")
@options.max_decompressed_option
@decoding.decode_option
@options.jobs_option
def command(paths: tuple[str, ...], with_records: bool, print_data: bool, no_batches: bool,
            fmt: str, payload: str, from_offset: int | None, to_offset: int | None,
            from_time: int | None, to_time: int | None, key_filter: bytes | None,
            producer_id: int | None, only: str, max_decompressed_bytes: int,
            decode: str = "auto", jobs: int = 1) -> int:
    """Print the contents of log dirs, partition dirs or single files.

    PATH may be a .log (also .log.deleted/.swap/.cleaned), .index, .timeindex, .txnindex,
    .snapshot or .checkpoint file (an index of remote-log-index-cache/ too), a checkpoint
    file, a partition dir or a whole log dir. Text output is Kafka 4.3's kafka-dump-log's,
    line for line; json, jsonl, csv and table carry Kafka's field names (docs/json.md) and
    every field: with --records, batches and records share one csv header, the union of
    their columns (`kind` tells the rows apart); --no-batches prints records only.

    \b
    Examples:
      kafkalog dump /var/lib/kafka/orders-0
      kafkalog dump orders-0/00000000000000000000.log --records --print-data
      kafkalog dump /var/lib/kafka --records --format jsonl --payload base64 | jq .
      kafkalog dump orders-0 --records --from-offset 1000 --to-offset 1010
      kafkalog dump /var/lib/kafka/__consumer_offsets-12 --print-data
    """
    print_data = print_data or decode not in ("auto", "none")  # as kafka-dump-log's decoders
    records = with_records or print_data or key_filter is not None
    batches = not (no_batches and records)
    filters = Filters(from_offset, to_offset, from_time, to_time,
                      key_filter, producer_id, only)
    # every PATH is resolved (and refused) before the first row is printed
    targets = [open_target(p) for p in paths]
    for t in targets:
        if not t.format.has_keys and any(v is not None for v in (from_time, to_time,
                                                                  key_filter, producer_id)):
            raise UsageError(f"{t.path}: Kafka {t.format.name} messages have no timestamps, "
                             "keys or producer ids to filter on; use --from-offset/--to-offset "
                             "(byte offsets)")
    kinds = [t.format.row_kinds(t, records, batches) for t in targets]
    columns = csv_columns(kinds) if fmt == "csv" else None
    out = make_renderer(fmt, functools.partial(text_line, print_data=print_data), columns)
    d = Dumper(out, records, batches, payload_encoder(payload), filters, max_decompressed_bytes)
    d.sizes = fmt == "text"
    d.fast_records = record_writer(fmt, payload, print_data)
    d.fast_section = section_writer(fmt, payload, print_data)
    d.decoding = decoding.Decoding(decode, kafka_text=fmt == "text")
    d.jobs = jobs
    try:
        for run in runs(targets, _partitions_of_current):
            if len(run) > 1:  # partition or log dirs named one by one: one set of -j items
                d.partitions([p for t in run for p in t.partitions()])
            else:
                run[0].format.dump(run[0], d)
    except KafkalogError:
        out.close()
        raise
    out.close()
    return EXIT_UNFIXED if d.problems else 0
