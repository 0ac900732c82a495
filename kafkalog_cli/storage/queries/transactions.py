"""Open (possibly hanging) and aborted transactions of a partition, from its files alone.

How the broker knows the same things (ProducerStateManager, UnifiedLog, KIP-664):

1. Producer state is seeded from the newest `.snapshot` at or below the first segment's base
   offset (a transaction begun before the log start is only known there, through
   `currentTxnFirstOffset`), then every batch from the first segment on is applied
   (`ProducerState.append`, the same code `index-rebuild` uses for `.txnindex`).
2. A transactional data batch of a producer with no open transaction opens one at its base
   offset; a COMMIT/ABORT control batch of that producer closes it. An ABORT gives an aborted
   transaction `(first offset, marker offset, last stable offset)` exactly as the broker
   writes it to `.txnindex`.
3. The last stable offset is the first offset of the earliest open transaction, or the log
   end offset when none is open (bounded by the high watermark if the log dir has a
   replication-offset-checkpoint).
4. `.txnindex` entries are read too and merged with the markers by (producer, marker
   offset), so each aborted transaction says where it was seen; a snapshot written at the
   log end is compared with the computed open transactions.
5. A marker whose data the cleaner removed completes no transaction (as in the broker's
   producer state), but the cleaner keeps its entry for one more round with the original
   first offset and LSO: an entry the marker admits (producers.AbortMarker.admits) is
   reported as the broker has it, so the list equals the broker's `.txnindex` after cleaning.

Hanging means what `kafka-transactions.sh find-hanging` means: open, and no batch of the
producer for longer than the maximum transaction timeout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalog_cli.codec.control import ABORT, COMMIT, parse_control
from kafkalog_cli.codec.snapshot import ProducerEntry, decode_snapshot
from kafkalog_cli.errors import CorruptDataError, KafkalogError
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.files import read_small
from kafkalog_cli.storage.disk.logdir import PartitionDir
from kafkalog_cli.storage.disk.segment import DamageSink
from kafkalog_cli.storage.queries.producers import AbortMarker, ProducerState

DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000  # kafka-transactions.sh find-hanging


@dataclass
class OpenTxn:
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int  # last offset of the producer's latest batch seen
    first_timestamp: int  # -1: unknown (begun before the scanned log, seen in a snapshot)
    last_timestamp: int
    batches: int = 0
    from_snapshot: bool = False

    def idle_ms(self, now_ms: int) -> int | None:
        return None if self.last_timestamp < 0 else now_ms - self.last_timestamp

    def age_ms(self, now_ms: int) -> int | None:
        ts = self.first_timestamp if self.first_timestamp >= 0 else self.last_timestamp
        return None if ts < 0 else now_ms - ts


@dataclass
class AbortedTxn:
    producer_id: int
    producer_epoch: int | None  # None when known only from .txnindex
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int
    timestamp: int | None = None
    sources: list[str] = field(default_factory=list)  # "marker", "txnindex"


@dataclass
class PartitionTxns:
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    last_stable_offset: int
    open: list[OpenTxn]
    aborted: list[AbortedTxn]
    committed: int
    snapshot_offset: int | None  # the snapshot that seeded the state
    notes: list[str]


def _snapshot(part: PartitionDir, offset: int) -> list[ProducerEntry]:
    path = part.path / naming.segment_file_name(offset, naming.SNAPSHOT)
    return decode_snapshot(read_small(path))


def _high_watermark(part: PartitionDir, notes: list[str]) -> int | None:
    if part.log_dir is None:
        return None
    try:
        hw = part.log_dir.checkpoint(naming.REPLICATION)
    except CorruptDataError as e:
        notes.append(f"high watermark unknown: {e}")
        return None
    return None if hw is None else hw.get(part.key)


def partition_transactions(part: PartitionDir,
                           on_damage: DamageSink | None = None) -> PartitionTxns:
    notes: list[str] = []
    segs = [s for s in part.segments if s.has_log]
    first_base = segs[0].base_offset if segs else 0
    seed_offset = max((o for o in part.snapshots if o <= first_base), default=None)
    state = ProducerState()
    details: dict[int, OpenTxn] = {}
    if seed_offset is not None:
        try:
            entries = _snapshot(part, seed_offset)
        except (CorruptDataError, OSError) as e:
            notes.append(f"snapshot {seed_offset} unreadable ({e}); state from the log only")
            seed_offset = None
        else:
            state = ProducerState.from_snapshot(entries)
            for pe in entries:
                if pe.current_txn_first_offset >= 0:
                    details[pe.producer_id] = OpenTxn(
                        pe.producer_id, pe.epoch, pe.current_txn_first_offset, pe.last_offset,
                        -1, pe.timestamp, from_snapshot=True)
    if seed_offset is None and first_base > 0:
        notes.append(f"the log starts at offset {first_base} and no producer snapshot covers "
                     "it: transactions begun earlier are not known")

    aborted: dict[tuple[int, int], AbortedTxn] = {}
    committed = 0
    log_end = first_base
    for seg in segs:
        log_end = max(log_end, seg.base_offset)
        markers: dict[tuple[int, int], tuple[AbortMarker, int, int]] = {}  # + epoch, time
        for pos, b in seg.batches(on_damage=on_damage):
            log_end = max(log_end, b.last_offset + 1)
            pid = b.producer_id
            if b.magic < 2 or pid < 0:
                continue
            marker = None
            if b.is_control:
                try:
                    rec = next(b.records(), None)
                    marker = parse_control(rec.key, rec.value) if rec else None
                except CorruptDataError as e:
                    notes.append(f"{seg.log_path.name}: control batch at offset "
                                 f"{b.base_offset} does not decode: {e.reason}")
                    continue
            try:
                abort = state.append_batch(b)
            except CorruptDataError as e:
                notes.append(f"{e.located(str(seg.log_path), pos)} (batch at offset "
                             f"{b.base_offset})")
                continue
            except KafkalogError as e:
                notes.append(f"batch at offset {b.base_offset}: {e}")
                continue
            if marker is not None and marker.type in (ABORT, COMMIT):
                details.pop(pid, None)
                if marker.type == COMMIT:
                    committed += 1
                if abort is not None:
                    markers[(pid, abort.offset)] = (abort, b.producer_epoch, b.max_timestamp)
                if abort is not None and abort.entry is not None:
                    entry = abort.entry
                    aborted[(pid, entry.last_offset)] = AbortedTxn(
                        pid, b.producer_epoch, entry.first_offset, entry.last_offset,
                        entry.last_stable_offset, b.max_timestamp, ["marker"])
            elif b.is_transactional and not b.is_control:
                t = details.get(pid)
                if t is None:
                    t = details[pid] = OpenTxn(pid, b.producer_epoch, b.base_offset,
                                               b.last_offset, b.max_timestamp, b.max_timestamp)
                t.producer_epoch = b.producer_epoch
                t.last_offset = b.last_offset
                t.last_timestamp = max(t.last_timestamp, b.max_timestamp)
                t.batches += 1
        txi = None
        try:
            txi = seg.txn_index()
        except OSError as e:
            notes.append(f"{seg.path(naming.TXNINDEX).name}: unreadable: {e.strerror}")
        for ent in txi.entries if txi else []:
            key = (ent.producer_id, ent.last_offset)
            a = aborted.get(key)
            seen = markers.get(key)
            if seen is not None and seen[0].admits(ent):  # as the broker has it (item 5)
                if a is None:
                    a = aborted[key] = AbortedTxn(ent.producer_id, seen[1], ent.first_offset,
                                                  ent.last_offset, ent.last_stable_offset,
                                                  seen[2], ["marker"])
                a.first_offset, a.last_stable_offset = ent.first_offset, ent.last_stable_offset
                if "txnindex" not in a.sources:  # a crafted index repeats one entry
                    a.sources.append("txnindex")
            elif a is None:
                aborted[key] = AbortedTxn(
                    ent.producer_id, None, ent.first_offset, ent.last_offset,
                    ent.last_stable_offset, sources=["txnindex"])
                notes.append(f"{seg.path(naming.TXNINDEX).name}: entry for producer "
                             f"{ent.producer_id} at {ent.last_offset} matches no ABORT marker "
                             "with data of it in the log")
            elif "txnindex" not in a.sources:  # a crafted index repeats an entry: note it once
                a.sources.append("txnindex")
                notes.append(f"{seg.path(naming.TXNINDEX).name}: entry for producer "
                             f"{ent.producer_id} at {ent.last_offset} says first offset "
                             f"{ent.first_offset} / LSO {ent.last_stable_offset}, the log "
                             f"{a.first_offset} / {a.last_stable_offset}")

    open_txns = sorted(details.values(), key=lambda t: t.first_offset)
    if set(details) != set(state.ongoing):  # both views are built from the same batches
        notes.append("producer state and transaction tracking disagree: "
                     f"{sorted(state.ongoing)} vs {sorted(details)}")
    hw = _high_watermark(part, notes)
    lso = min((t.first_offset for t in open_txns), default=log_end)
    if hw is not None:
        lso = min(lso, hw)
    if log_end in part.snapshots and log_end != seed_offset:
        _compare_end_snapshot(part, log_end, open_txns, notes)
    return PartitionTxns(part.topic, part.partition, first_base, log_end, hw, lso, open_txns,
                         sorted(aborted.values(), key=lambda a: a.last_offset), committed,
                         seed_offset, notes)


def _compare_end_snapshot(part: PartitionDir, offset: int, open_txns: list[OpenTxn],
                          notes: list[str]) -> None:
    try:
        entries = _snapshot(part, offset)
    except (CorruptDataError, OSError) as e:
        notes.append(f"snapshot {offset} unreadable: {e}")
        return
    theirs = {e.producer_id: e.current_txn_first_offset for e in entries
              if e.current_txn_first_offset >= 0}
    ours = {t.producer_id: t.first_offset for t in open_txns}
    if theirs != ours:
        notes.append(f"snapshot {offset} lists open transactions {theirs}, the log {ours}")
