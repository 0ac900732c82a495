"""`kafkalog txn`: open (hanging) and aborted transactions, on log dirs written by `append`."""

import json
import shutil

import pytest

from kafkalog_cli.storage.disk.logdir import open_target
from kafkalog_cli.storage.queries.transactions import partition_transactions
from tests.cli.run import run

T0 = 1_700_000_000_000
HOUR = 3_600_000


def append(ld, *extra, n=2, now=T0, topic="t", partition=0, tmp=None):
    src = (tmp or ld.parent) / "recs.jsonl"
    src.write_text("".join(json.dumps({"key": f"k{i}", "value": f"v{i}"}) + "\n"
                           for i in range(n)))
    r = run("append", ld, "--create", "--topic", topic, "--partition", partition, "--input", src,
            "--now", now, *extra)
    assert r.code == 0, r.err


@pytest.fixture
def ld(tmp_path):
    """offsets 0-1 aborted (marker 2) by producer 7; 3-4 open by producer 8; 5-6 committed
    (marker 7) by producer 9; 8-9 plain records."""
    d = tmp_path / "ld"
    append(d, "--producer-id", "7", "--transactional", "--end-txn", "abort", now=T0)
    append(d, "--producer-id", "8", "--producer-epoch", "3", "--transactional", now=T0 + 1000)
    append(d, "--producer-id", "9", "--transactional", "--end-txn", "commit", now=T0 + 2000)
    append(d, now=T0 + 3000)
    return d


def report(*args):
    r = run("txn", *args, "--format", "json")
    return r, json.loads(r.out)


def test_hanging_transaction_with_its_abort_command(ld):
    r, rows = report(ld, "--now", T0 + HOUR, "--bootstrap-server", "b1:9092")
    assert r.code == 4  # a hanging transaction is a problem left
    [row] = rows
    assert (row["topic"], row["partition"], row["logEndOffset"]) == ("t", 0, 10)
    assert row["lastStableOffset"] == 3 and row["highWatermark"] == 10
    assert row["committed"] == 1
    [t] = row["open"]
    assert (t["producerId"], t["producerEpoch"], t["firstOffset"], t["lastOffset"]) == (8, 3, 3, 4)
    assert t["ageMs"] == HOUR - 1000 and t["idleMs"] == HOUR - 1000 and t["hanging"]
    assert t["abortCommand"] == ("kafka-transactions.sh --bootstrap-server b1:9092 abort "
                                 "--topic t --partition 0 --start-offset 3")
    [a] = row["aborted"]
    assert (a["producerId"], a["producerEpoch"], a["firstOffset"], a["lastOffset"],
            a["lastStableOffset"]) == (7, 0, 0, 2, 3)
    assert a["sources"] == ["marker", "txnindex"]
    assert row["notes"] == []


def test_open_but_recent_is_not_hanging(ld):
    r, rows = report(ld, "--now", T0 + 120_000)  # idle 119 s, under the default 15 min
    assert r.code == 0
    assert rows[0]["open"][0]["hanging"] is False
    r, rows = report(ld, "--now", T0 + 120_000, "--max-transaction-timeout", "1")
    assert r.code == 4 and rows[0]["open"][0]["hanging"] is True


def test_text_report(ld):
    r = run("txn", ld, "--now", "2023-11-14T23:13:20Z")  # T0 + 1 h
    assert r.code == 4
    lines = r.text.splitlines()
    assert lines[0] == ("t-0: log end offset 10, last stable offset 3, high watermark 10; "
                        "1 open, 1 aborted, 1 committed")
    assert lines[1] == ("  open: producerId 8 epoch 3 first offset 3 last offset 4 age 59m 59s "
                        "idle 59m 59s HANGING")
    assert lines[2] == ("    to abort: kafka-transactions.sh --bootstrap-server <host:port> "
                        "abort --topic t --partition 0 --start-offset 3")
    assert lines[3] == ("  aborted: producerId 7 epoch 0 offsets 0..2 (marker at 2, last "
                        "stable offset 3) from marker+txnindex")


def test_closing_the_transaction_clears_it_and_moves_the_lso(ld, tmp_path):
    append(ld, "--producer-id", "8", "--producer-epoch", "3", "--transactional",
           "--end-txn", "abort", "--base-sequence", "2", n=1, now=T0 + 5000)
    r, rows = report(ld, "--now", T0 + HOUR)
    assert r.code == 0
    [row] = rows
    assert row["open"] == [] and row["lastStableOffset"] == row["logEndOffset"] == 12
    assert [(a["producerId"], a["firstOffset"], a["lastOffset"], a["lastStableOffset"])
            for a in row["aborted"]] == [(7, 0, 2, 3), (8, 3, 11, 12)]


def test_partitions_without_transactions_only_with_all(tmp_path):
    d = tmp_path / "plain"
    append(d)
    r, rows = report(d)
    assert r.code == 0 and rows == []
    r, rows = report(d, "--all")
    assert [(x["topic"], x["open"], x["aborted"], x["lastStableOffset"]) for x in rows] == [
        ("t", [], [], 2)]


def test_transaction_begun_before_the_log_start_comes_from_the_snapshot(tmp_path):
    """Producer 5 opens a transaction; many small segments roll; the first segment is deleted
    (as retention would). Only the producer snapshot at the new log start still knows where
    the transaction began."""
    d = tmp_path / "ld"
    append(d, "--producer-id", "5", "--transactional", "--batch-records", "1",
           "--segment-bytes", "200", n=6)
    part_dir = d / "t-0"
    logs = sorted(part_dir.glob("*.log"))
    assert len(logs) > 2
    first, second = logs[0], logs[1]
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        first.with_suffix(suffix).unlink(missing_ok=True)
    second_base = int(second.name[:20])
    assert (part_dir / f"{second_base:020d}.snapshot").exists()
    p = partition_transactions(open_target(part_dir).partition)
    [t] = p.open
    assert t.producer_id == 5 and t.first_offset == 0 and t.last_offset == 5
    assert p.snapshot_offset == second_base and p.last_stable_offset == 0
    # without the snapshot the start is unknown, and the report says so
    for s in part_dir.glob("*.snapshot"):
        s.unlink()
    p = partition_transactions(open_target(part_dir).partition)
    assert p.open[0].first_offset == second_base
    assert any("no producer snapshot covers" in n for n in p.notes)


def test_txnindex_entry_without_its_marker_and_a_disagreeing_one(ld, tmp_path):
    from kafkalog_cli.codec.index_entry import TXN_ENTRY
    idx = ld / "t-0" / "00000000000000000000.txnindex"
    data = bytearray(idx.read_bytes())
    # the broker's entry for producer 7 says first offset 0; make it 1, and add one for a
    # producer whose marker is not in the log
    TXN_ENTRY.pack_into(data, 0, 0, 7, 1, 2, 3)
    data += TXN_ENTRY.pack(0, 99, 4, 9, 10)
    idx.write_bytes(bytes(data))
    _r, rows = report(ld, "--now", T0)
    row = rows[0]
    assert [(a["producerId"], a["sources"]) for a in row["aborted"]] == [
        (7, ["marker", "txnindex"]), (99, ["txnindex"])]
    assert any("says first offset 1" in n for n in row["notes"])


def test_damaged_log_reports_and_exits_4(ld):
    log = ld / "t-0" / "00000000000000000000.log"
    with open(log, "ab") as f:
        f.write(b"\x00" * 5 + b"\x07")  # a torn tail
    r = run("txn", ld, "--now", T0)
    assert r.code == 4 and "kafkalog: warning:" in r.err


def test_snapshot_at_the_log_end_disagreeing_is_noted(ld):
    shutil.copy(ld / "t-0" / "00000000000000000003.snapshot",
                ld / "t-0" / "00000000000000000010.snapshot")  # no open txn in it
    _r, rows = report(ld, "--now", T0)
    assert any("snapshot 10 lists open transactions {}" in n for n in rows[0]["notes"])


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "table"])
def test_a_bad_path_after_good_ones_writes_no_rows(tmp_path, fmt):
    """Every PATH is opened before a row is written: a missing one is exit 8 with empty
    stdout in every format, not a json array cut off after the rows of the paths before."""
    good = tmp_path / "ld"
    assert run("generate", str(good), "--transactions").code == 0
    assert run("txn", str(good), "--all", "--format", fmt).out  # rows there alone
    r = run("txn", str(good), str(tmp_path / "missing"), "--all", "--format", fmt)
    assert r.code == 8 and r.out == b"" and "missing" in r.err
