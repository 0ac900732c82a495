"""Aborted transactions in a cleaned log: what `.txnindex` holds after the broker's cleaner
(CleanedTransactionMetadata) and recovery (ProducerAppendInfo.appendEndTxnMarker) run, and
what `txn`, `index-rebuild` and `recover` make of it.

The partition written here, producer 5 (transactional), one segment:
  0-1   data, ABORT at 2                 untouched: entry (0, 2, LSO 3)
  3-5   data removed by the cleaner, ABORT at 6: the round that removed the data kept the
        marker and the original entry (3, 6, LSO 7)
  7-8   data removed, ABORT at 9: a later round dropped the entry; the marker waits for its
        delete horizon
  10-11 data removed, 12-13 the producer's last batch kept empty (RETAIN_EMPTY), ABORT at
        14: the cleaner's entry keeps the original first offset (10, 14, LSO 15)
"""

from __future__ import annotations

import json

import pytest

from kafkalog_cli.codec import index_entry as ie
from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.codec.control import encode_end_txn
from kafkalog_cli.storage.disk.logdir import scan_partition
from kafkalog_cli.storage.maintenance.rebuild import rebuild_segment
from kafkalog_cli.storage.maintenance.reindex import reindex_partition
from kafkalog_cli.storage.queries.transactions import partition_transactions
from tests.cli.run import run

PID = 5
TS = 1_700_000_000_000
UNTOUCHED = ie.AbortedTxn(0, PID, 0, 2, 3)
CLEANED = ie.AbortedTxn(0, PID, 3, 6, 7)  # data gone, entry kept one round
EMPTIED = ie.AbortedTxn(0, PID, 10, 14, 15)  # last batch kept empty, original first offset
RECOVERED_EMPTIED = ie.AbortedTxn(0, PID, 12, 14, 15)  # what LogSegment.recover computes


def _data(first: int, last: int) -> bytes:
    return encode_batch([(o, TS + o, b"k%d" % o, b"v", []) for o in range(first, last + 1)],
                        producer_id=PID, producer_epoch=0, base_sequence=first,
                        transactional=True)


def _abort(offset: int) -> bytes:
    key, value = encode_end_txn(False, 3)
    return encode_batch([(offset, TS + offset, key, value, [])], producer_id=PID,
                        producer_epoch=0, transactional=True, control=True)


def _log() -> bytes:
    empty = encode_batch([], base_offset=12, last_offset_delta=1, producer_id=PID,
                         producer_epoch=0, base_sequence=12, transactional=True,
                         max_timestamp=TS + 13)
    return _data(0, 1) + _abort(2) + _abort(6) + _abort(9) + empty + _abort(14)


@pytest.fixture
def cleaned(tmp_path):
    """(partition dir, the `.txnindex` bytes the broker's cleaner leaves)."""
    pdir = tmp_path / "logs" / "t-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(_log())
    txnindex = ie.encode_txn_entries([UNTOUCHED, CLEANED, EMPTIED])
    (pdir / "00000000000000000000.txnindex").write_bytes(txnindex)
    return pdir, txnindex


def _txn_entries(data: bytes) -> list:
    """A .txnindex's entries (whole 34-byte ones)."""
    n = len(data) // ie.TXN_ENTRY.size
    return [ie.AbortedTxn(*e) for e in ie.TXN_ENTRY.iter_unpack(data[:n * ie.TXN_ENTRY.size])]


def test_a_marker_whose_data_is_gone_completes_no_transaction(cleaned):
    """Kafka's recovery: entries only where data of the transaction is left."""
    pdir, _ = cleaned
    seg = scan_partition(pdir).segments[0]
    assert rebuild_segment(seg).txn_entries == [UNTOUCHED, RECOVERED_EMPTIED]


def test_rebuild_keeps_the_entries_the_cleaner_kept(cleaned):
    pdir, txnindex = cleaned
    seg = scan_partition(pdir).segments[0]
    r = rebuild_segment(seg, txn_on_disk=_txn_entries(txnindex))
    assert r.txn_entries == [UNTOUCHED, CLEANED, EMPTIED]
    changes = reindex_partition(scan_partition(pdir))
    assert not [c for c in changes if c.kind == "txnindex" and c.changed]
    assert (pdir / "00000000000000000000.txnindex").read_bytes() == txnindex


@pytest.mark.parametrize(("bad", "why"), [
    (ie.AbortedTxn(0, PID, 2, 6, 7), "covers the ABORT marker at 2 of the transaction before"),
    (ie.AbortedTxn(0, PID, 3, 6, 10), "LSO above the replay's"),
    (ie.AbortedTxn(0, PID, 13, 14, 15), "misses the empty batch at 12"),
    (ie.AbortedTxn(0, PID + 1, 3, 6, 7), "another producer's"),
])
def test_rebuild_replaces_an_entry_the_log_does_not_admit(cleaned, bad, why):
    pdir, _ = cleaned
    others = [e for e in (UNTOUCHED, CLEANED, EMPTIED) if e.last_offset != bad.last_offset]
    on_disk = sorted([*others, bad], key=lambda e: e.last_offset)
    (pdir / "00000000000000000000.txnindex").write_bytes(ie.encode_txn_entries(on_disk))
    reindex_partition(scan_partition(pdir))
    got = _txn_entries((pdir / "00000000000000000000.txnindex").read_bytes())
    replay = {6: None, 14: RECOVERED_EMPTIED}[bad.last_offset]
    want = sorted([*others, *([replay] if replay else [])], key=lambda e: e.last_offset)
    assert got == want, why


def test_txn_reports_what_the_broker_indexes_after_cleaning(cleaned):
    pdir, _ = cleaned
    t = partition_transactions(scan_partition(pdir))
    assert t.notes == []
    assert [(a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
            for a in t.aborted] == [e[1:] for e in (UNTOUCHED, CLEANED, EMPTIED)]
    assert all(a.sources == ["marker", "txnindex"] for a in t.aborted)
    assert t.open == [] and t.last_stable_offset == t.log_end_offset == 15


def test_txn_without_the_index_reports_what_recovery_would_write(cleaned):
    pdir, _ = cleaned
    (pdir / "00000000000000000000.txnindex").unlink()
    res = run("txn", str(pdir), "--format", "json", "--all")
    assert res.code == 0, res.err
    rows = json.loads(res.text)
    assert [(a["firstOffset"], a["lastOffset"]) for a in rows[0]["aborted"]] == [(0, 2), (12, 14)]
    assert rows[0]["notes"] == []


def test_txn_notes_an_entry_no_marker_admits(cleaned):
    pdir, _ = cleaned
    bogus = ie.AbortedTxn(0, PID, 3, 7, 8)  # offset 7: no marker there
    (pdir / "00000000000000000000.txnindex").write_bytes(
        ie.encode_txn_entries([UNTOUCHED, CLEANED, bogus, EMPTIED]))
    t = partition_transactions(scan_partition(pdir))
    assert len(t.notes) == 1 and "at 7 matches no ABORT marker" in t.notes[0]
    assert [a.sources for a in t.aborted if a.last_offset == 7] == [["txnindex"]]
