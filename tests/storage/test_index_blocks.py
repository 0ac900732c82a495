"""Indexes read a block at a time: the real entries end at the first zero relative offset
after slot 0, wherever it falls against the blocks, and random access, iteration and lookups
agree with a plain list of the entries."""

import struct

import pytest

from kafkalog_cli.storage.disk.index import BLOCK_ENTRIES, OffsetIndex, TimeIndex

BASE = 1000


def _offset_file(path, n, tail):
    """Slot 0 at relative offset 0, then n - 1 increasing entries, then `tail` zero slots."""
    path.write_bytes(b"".join(struct.pack(">ii", 3 * i, 100 * i) for i in range(n))
                     + bytes(8 * tail))
    return [(BASE + 3 * i, 100 * i) for i in range(n)]


@pytest.mark.parametrize("n", [1, 2, BLOCK_ENTRIES - 1, BLOCK_ENTRIES, BLOCK_ENTRIES + 1,
                               2 * BLOCK_ENTRIES + 7])
@pytest.mark.parametrize("tail", [0, 1, BLOCK_ENTRIES])
def test_offset_index_entries_end_at_the_zero_tail(tmp_path, n, tail):
    want = _offset_file(tmp_path / "x.index", n, tail)
    idx = OffsetIndex.read(tmp_path / "x.index", BASE)
    assert (idx.used, idx.slot_count, idx.untrimmed) == (n, n + tail, tail > 0)
    e = idx.entries
    assert len(e) == n and list(e) == want
    assert [e[i] for i in (0, n - 1, -1)] == [want[0], want[-1], want[-1]]
    with pytest.raises(IndexError):
        e[n]
    start = max(0, n - BLOCK_ENTRIES // 2)
    assert list(e.iter_from(start)) == want[start:]
    for off in (BASE - 1, BASE, BASE + 1, want[-1][0], want[-1][0] + 5, want[n // 2][0] + 2):
        expect = max((x for x in want if x[0] <= off), default=(BASE, 0))
        assert idx.lookup(off) == expect
    assert idx.sanity_errors() == []


def test_time_index_entries_end_at_the_zero_tail(tmp_path):
    n = BLOCK_ENTRIES + 3
    p = tmp_path / "x.timeindex"
    p.write_bytes(b"".join(struct.pack(">qi", 5000 + i, i + 1) for i in range(n)) + bytes(12 * 9))
    idx = TimeIndex.read(p, BASE)
    assert (idx.used, idx.slot_count) == (n, n + 9)
    assert idx.last_entry() == (5000 + n - 1, BASE + n)
    assert idx.lookup(5000 + BLOCK_ENTRIES) == (5000 + BLOCK_ENTRIES, BASE + BLOCK_ENTRIES + 1)
    assert idx.lookup(4999) == (-1, BASE)
    # Kafka's sanity check sees the zero tail's last slot, as before
    assert idx.sanity_errors() == ["last timestamp 0 is below the first 5000"]


def test_a_zero_relative_offset_in_a_later_block_ends_the_entries(tmp_path):
    p = tmp_path / "x.index"
    rows = [(i, i) for i in range(3 * BLOCK_ENTRIES)]
    rows[2 * BLOCK_ENTRIES + 5] = (0, 77)  # a zero relative offset, not a zero slot
    p.write_bytes(b"".join(struct.pack(">ii", *r) for r in rows))
    assert OffsetIndex.read(p, 0).used == 2 * BLOCK_ENTRIES + 5


def _open_fds():
    import os
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("n", [BLOCK_ENTRIES, BLOCK_ENTRIES + 1])
def test_a_one_block_index_holds_no_descriptor_and_a_removed_file_stays_readable(tmp_path, n):
    """One block (most indexes) is read whole at once and its file closed; a bigger one is
    read a block at a time through a descriptor held with it. Either way the entries stay
    readable after the file is removed (the check reads them after a recover may have)."""
    p = tmp_path / "x.index"
    want = _offset_file(p, n, 0)
    before = _open_fds()
    idx = OffsetIndex.read(p, BASE)
    assert _open_fds() - before == (0 if n <= BLOCK_ENTRIES else 1)
    p.unlink()
    assert list(idx.entries) == want
