"""The scanner's buffer goes from one finished scan to the next in the same process (a -j
worker scans a partition as many pieces): never while a view of it is still held, and a file
that ends short of what the scan was told, with a reused buffer, is a torn tail."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

from kafkalog_cli.storage.disk import scan
from kafkalog_cli.storage.disk.scan import CURRENT, EntryScanner
from tests.conftest import CORPUS

# broker-written segments (Kafka 2.x, ZooKeeper mode) of many batches each
FIRST = CORPUS / "iechenyb-zk" / "string-key-0" / "00000000000000000000.log"
SECOND = CORPUS / "william0423-zk-2.4" / "__consumer_offsets-28" / "00000000000000000000.log"


@pytest.fixture(autouse=True)
def no_spare() -> None:
    scan._SPARE.clear()


def _scan(path: Path, end: int | None = None) -> tuple[EntryScanner, list[tuple[int, int]]]:
    """A whole scan of path: the scanner and each entry's (position, size)."""
    with open(path, "rb", buffering=0) as f:
        s = EntryScanner(f, 0, end, framing=CURRENT)
        got = [(pos, b.size) for pos, b in s]
    return s, got


def test_a_finished_scan_hands_its_buffer_to_the_next() -> None:
    with open(FIRST, "rb", buffering=0) as f:
        last = deque(EntryScanner(f, 0, framing=CURRENT), maxlen=1)
    (buf,) = scan._SPARE
    assert len(buf) > SECOND.stat().st_size
    buf[-8:] = b"<spare!>"  # past what reading SECOND writes
    del buf  # a reference, and the last batch's view: it is not reused while they live
    last.clear()
    with open(SECOND, "rb", buffering=0) as f:
        second = EntryScanner(f, 0, framing=CURRENT)
        n = 0
        for _ in second:
            if n == 0:
                assert second._buf is not None and second._buf[-8:] == b"<spare!>"
            n += 1
    assert n > 1000


def test_an_entry_kept_without_detach_keeps_its_bytes() -> None:
    data = FIRST.read_bytes()
    with open(FIRST, "rb", buffering=0) as f:
        it = iter(EntryScanner(f, 0, framing=CURRENT))
        pos, kept = next(it)
        it.close()  # a scan stopped early: its first batch is a view of the scan's buffer
    expect = data[pos:pos + kept.size]
    assert bytes(kept.data) == expect
    _, second = _scan(SECOND)
    assert len(second) > 1000
    assert bytes(kept.data) == expect  # the second scan read into a buffer of its own


def test_a_file_shorter_than_its_end_is_a_torn_tail(tmp_path: Path) -> None:
    """Cut within a batch's size field while the scan is told the old length: the whole
    batches before the cut, then one torn tail where the cut batch starts (its header is
    refilled from the file, which ends: the bytes after it in the buffer are not read as
    the header's)."""
    data = FIRST.read_bytes()
    _, whole = _scan(FIRST)  # leaves its buffer, FIRST's bytes in it, for the next scan
    assert scan._SPARE
    cut = whole[len(whole) // 2][0] + 5  # within a batch's size field
    short = tmp_path / "00000000000000000000.log"
    short.write_bytes(data[:cut])
    s, got = _scan(short, end=len(data))  # told the file is as long as it was
    assert got == [e for e in whole if e[0] + e[1] <= cut]
    assert [(d.position, d.code, d.reason) for d in s.damages] == [
        (whole[len(whole) // 2][0], "torn-tail", "file shrank while reading")]
