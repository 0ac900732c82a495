"""Producer state as the broker tracks it (ProducerStateManager), reduced to what the files need:
the last batch per producer (for `.snapshot`) and open transactions (for `.txnindex` and the LSO).

A COMMIT/ABORT marker completes a transaction only if data of it was seen since the
producer's previous marker (ProducerAppendInfo.appendEndTxnMarker): a marker whose data the
cleaner removed gets no `.txnindex` entry when a segment is recovered. The cleaner itself
keeps the original entry of such a marker for one more round (CleanedTransactionMetadata:
the marker stays while the round saw data of it), so `.txnindex` entries found on disk are
reconciled with the replay by `AbortMarker.admits` / `reconcile_txn_entries`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.codec.control import ABORT, COMMIT, parse_control
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.snapshot import ProducerEntry


@dataclass(frozen=True)
class AbortMarker:
    """An ABORT marker met by the replay, and what a `.txnindex` entry for it may say."""

    producer_id: int
    offset: int
    after: int  # last offset of the producer's batch before the transaction (-1: none seen)
    last_stable_offset: int  # the LSO at the marker, as the replay computes it
    entry: ie.AbortedTxn | None  # what LogSegment.recover writes; None: no data of it left

    def admits(self, e: ie.AbortedTxn) -> bool:
        """Whether an entry on disk is one the broker may have written for this marker: it
        covers every batch of the transaction still in the log and no earlier batch of the
        producer, and its LSO is not above the replay's (a larger one would end a fetch's
        search for aborted transactions too early; the cleaner keeps the original, lower one
        when it removed another producer's aborted data)."""
        upper = self.entry.first_offset if self.entry is not None else self.offset
        return (e.producer_id == self.producer_id and e.last_offset == self.offset
                and self.after < e.first_offset <= upper
                and e.last_stable_offset <= self.last_stable_offset)


def reconcile_txn_entries(markers: list[AbortMarker],
                          on_disk: list[ie.AbortedTxn]) -> list[ie.AbortedTxn]:
    """A segment's `.txnindex` entries: per ABORT marker, the entry on disk if the marker
    admits it (the cleaner's, kept after it removed the data), else the replay's."""
    found = {(e.producer_id, e.last_offset): e for e in on_disk}
    out = []
    for m in markers:
        e = found.get((m.producer_id, m.offset))
        if e is not None and m.admits(e):
            out.append(e)
        elif m.entry is not None:
            out.append(m.entry)
    return out


@dataclass
class ProducerState:
    entries: dict[int, ProducerEntry] = field(default_factory=dict)
    ongoing: dict[int, int] = field(default_factory=dict)  # producer id -> txn first offset
    last_batch: dict[int, int] = field(default_factory=dict)  # pid -> its last batch's offset
    before_txn: dict[int, int] = field(default_factory=dict)  # pid -> last_batch at txn start

    @classmethod
    def from_snapshot(cls, entries: list[ProducerEntry]) -> ProducerState:
        st = cls({e.producer_id: e for e in entries})
        st.ongoing = {e.producer_id: e.current_txn_first_offset for e in entries
                      if e.current_txn_first_offset >= 0}
        st.last_batch = {e.producer_id: e.last_offset for e in entries}
        st.before_txn = dict.fromkeys(st.ongoing, -1)  # begun before the snapshot: unknown
        return st

    def copy(self) -> ProducerState:
        return ProducerState(dict(self.entries), dict(self.ongoing), dict(self.last_batch),
                             dict(self.before_txn))

    def append(self, b: Batch) -> ie.AbortedTxn | None:
        """Apply one v2 batch; returns the index entry if it completes an aborted txn."""
        m = self.append_batch(b)
        return m.entry if m is not None else None

    def append_batch(self, b: Batch) -> AbortMarker | None:
        """Apply one v2 batch; returns what replay knows of it if it is an ABORT marker."""
        pid = b.producer_id
        if b.magic < 2 or pid < 0:
            return None
        prev = self.entries.get(pid)
        coord = prev.coordinator_epoch if prev else -1
        before = self.last_batch.get(pid, -1)
        self.last_batch[pid] = b.last_offset
        if b.is_control:
            rec = next(b.records(), None)  # a marker batch holds one record
            if rec is None:  # emptied by the cleaner: completes nothing
                return None
            info = parse_control(rec.key, rec.value)
            if info.type not in (ABORT, COMMIT):
                return None
            marker = b.base_offset
            first = self.ongoing.pop(pid, None)
            after = self.before_txn.pop(pid, before) if first is not None else before
            coord = info.coordinator_epoch if info.coordinator_epoch is not None else coord
            if prev:
                self.entries[pid] = prev._replace(epoch=b.producer_epoch, coordinator_epoch=coord,
                                                  current_txn_first_offset=-1)
            else:
                self.entries[pid] = ProducerEntry(pid, b.producer_epoch, -1, -1, 0,
                                                  b.max_timestamp, coord, -1)
            if info.type != ABORT:
                return None
            others = [o for p, o in self.ongoing.items() if p != pid]
            lso = min(others) if others else marker + 1
            entry = None if first is None else ie.AbortedTxn(0, pid, first, marker, lso)
            return AbortMarker(pid, marker, after, lso, entry)
        if b.is_transactional and pid not in self.ongoing:
            self.ongoing[pid] = b.base_offset
            self.before_txn[pid] = before
        self.entries[pid] = ProducerEntry(pid, b.producer_epoch, b.last_sequence, b.last_offset,
                                          b.last_offset - b.base_offset, b.max_timestamp, coord,
                                          self.ongoing.get(pid, -1))
        return None

    def snapshot_entries(self) -> list[ProducerEntry]:
        return [e._replace(current_txn_first_offset=self.ongoing.get(pid, -1))
                for pid, e in sorted(self.entries.items())]
