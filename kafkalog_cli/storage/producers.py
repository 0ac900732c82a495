"""Producer state as the broker tracks it (ProducerStateManager), reduced to what the files need:
the last batch per producer (for `.snapshot`) and open transactions (for `.txnindex` and the LSO).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.codec.control import ABORT, COMMIT, parse_control
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.snapshot import ProducerEntry


@dataclass
class ProducerState:
    entries: dict[int, ProducerEntry] = field(default_factory=dict)
    ongoing: dict[int, int] = field(default_factory=dict)  # producer id -> txn first offset

    @classmethod
    def from_snapshot(cls, entries: list[ProducerEntry]) -> ProducerState:
        st = cls({e.producer_id: e for e in entries})
        st.ongoing = {e.producer_id: e.current_txn_first_offset for e in entries
                      if e.current_txn_first_offset >= 0}
        return st

    def append(self, b: Batch) -> ie.AbortedTxn | None:
        """Apply one v2 batch; returns the index entry if it completes an aborted txn."""
        pid = b.producer_id
        if b.magic < 2 or pid < 0:
            return None
        prev = self.entries.get(pid)
        coord = prev.coordinator_epoch if prev else -1
        if b.is_control:
            rec = next(b.records(), None)  # a marker batch holds one record
            if rec is None:
                return None
            info = parse_control(rec.key, rec.value)
            if info.type not in (ABORT, COMMIT):
                return None
            marker = b.base_offset
            first = self.ongoing.pop(pid, marker)
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
            return ie.AbortedTxn(0, pid, first, marker, lso)
        if b.is_transactional and pid not in self.ongoing:
            self.ongoing[pid] = b.base_offset
        self.entries[pid] = ProducerEntry(pid, b.producer_epoch, b.last_sequence, b.last_offset,
                                          b.last_offset - b.base_offset, b.max_timestamp, coord,
                                          self.ongoing.get(pid, -1))
        return None

    def snapshot_entries(self) -> list[ProducerEntry]:
        return [e._replace(current_txn_first_offset=self.ongoing.get(pid, -1))
                for pid, e in sorted(self.entries.items())]
