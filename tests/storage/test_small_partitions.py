"""What makes many small partitions fast keeps the answers the same: shared listings, cached
paths and names, small files read without a buffered file object."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalog_cli.storage.disk import fs, logdir, naming
from kafkalog_cli.storage.disk.files import read_small
from kafkalog_cli.storage.disk.segment import Segment
from tests.conftest import CORPUS


def _error(fn, path: Path) -> tuple[type, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(OSError) as e:
        fn(path)
    return type(e.value), str(e.value)


def test_read_small_is_read_bytes(tmp_path: Path) -> None:
    p = tmp_path / "leader-epoch-checkpoint"
    p.write_bytes(b"0\n1\n0 0\n" * 20000)  # more than one read
    assert read_small(p) == p.read_bytes()
    for missing in (tmp_path / "absent", tmp_path):  # not there; a directory
        assert _error(read_small, missing) == _error(Path.read_bytes, missing)


def test_a_listing_is_shared_only_within_listings_shared(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"")
    with logdir.listings_shared():
        first = logdir.listdir(tmp_path)
        (tmp_path / "b").write_bytes(b"")
        assert logdir.listdir(tmp_path) is first  # one look at the path: one listing
        with logdir.listings_shared():  # nested: still the same look
            assert logdir.listdir(tmp_path) is first
    assert [e.name for e in first] == ["a"]
    assert [e.name for e in logdir.listdir(tmp_path)] == ["a", "b"]  # afterwards, read again


def test_segment_paths_follow_temp(tmp_path: Path) -> None:
    seg = Segment(tmp_path, 42, has_log=True)
    assert seg.log_path == tmp_path / "00000000000000000042.log"
    assert seg.log_path is seg.log_path  # made once
    seg.temp = naming.SWAP
    assert seg.log_path == tmp_path / "00000000000000000042.log.swap"
    assert seg.path(naming.INDEX) == tmp_path / "00000000000000000042.index.swap"
    assert seg == Segment(tmp_path, 42, has_log=True, temp=naming.SWAP)  # paths not compared


@pytest.mark.parametrize("directory", [".", "/", "//", "rel/dir", "/abs/dir", "a/./b"])
def test_a_readers_file_is_the_paths_own_text(directory: str) -> None:
    """The check opens local files by their text (fs.child): it is what the Path would
    print, so the findings name the same files."""
    d = Path(directory)
    assert fs.child(d, "leader-epoch-checkpoint") == str(d / "leader-epoch-checkpoint")
    seg = Segment(d, 7, has_log=True)
    for suffix in (naming.LOG, naming.INDEX, naming.TIMEINDEX, naming.TXNINDEX):
        assert seg.file(suffix) == str(seg.path(suffix))
    seg.temp = naming.CLEANED
    assert seg.file(naming.LOG) == str(seg.path(naming.LOG))
    assert seg.file(naming.LOG) is seg.file(naming.LOG)  # made once


def test_an_objects_file_stays_a_path() -> None:
    d = type("Store", (fs.ObjectPath,), {})("/bucket/logs/orders-0")  # as as_path makes one
    assert fs.is_remote(fs.child(d, "00000000000000000000.log"))
    assert fs.is_remote(Segment(d, 0).file(naming.INDEX))


def test_file_names_parse_the_same_when_cached() -> None:
    for name in ("00000000000000000000.log", "00000000000000000100.snapshot",
                 "00000000000000000007.index.swap", "leader-epoch-checkpoint", "x.tmp", "junk"):
        naming.parse_file_name.cache_clear()
        fresh = naming.parse_file_name(name)
        assert naming.parse_file_name(name) == fresh
        assert naming.parse_file_name.__wrapped__(name) == fresh


def test_scan_takes_the_parsed_partition_name(tmp_path: Path) -> None:
    d = tmp_path / "orders-3"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"")
    name = naming.parse_partition_dir("orders-3")
    assert logdir.scan_partition(d, None, name).key == logdir.scan_partition(d).key == \
        ("orders", 3)



def test_log_bytes_come_from_the_listing_and_equal_the_files(tmp_path: Path) -> None:
    """The scan keeps each `.log`'s size from its dir listing (-j's planning and the
    progress bar read it: no Path and no stat per segment later); the sum is the files'."""
    parts = [p for d in sorted(CORPUS.iterdir()) if d.is_dir()
             for p in logdir.scan_log_dir(d).partitions]
    assert len(parts) > 10
    for part in parts:
        assert all(s.listed_bytes >= 0 for s in part.segments if s.has_log)
        assert part.log_bytes == sum(s.log_path.stat().st_size for s in part.segments)
    assert sum(p.log_bytes for p in parts) > 0
    # a segment listed otherwise (recovery's own scan, a .cleaned file) is read when asked
    (tmp_path / "00000000000000000000.log").write_bytes(b"x" * 7)
    seg = Segment(tmp_path, 0, has_log=True)
    assert seg.listed_bytes == -1
    pd = logdir.PartitionDir(tmp_path, None)
    pd.segments = [seg]
    assert pd.log_bytes == 7


@pytest.mark.parametrize("relative", [True, False])
def test_each_partition_dir_is_listed_once_by_the_probes_and_the_scan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool) -> None:
    """The 0.7 probe lists every subdir and the current scan reads the same listings; under
    `.` too, where an entry's own path (`./orders-0`) is not the Path's (`orders-0`)."""
    from kafkalog_cli.storage import formats

    for n in range(3):
        d = tmp_path / f"orders-{n}"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(b"")
    (tmp_path / naming.RECOVERY_POINT).write_bytes(b"0\n0\n")
    listed: list[str] = []
    real = fs.listdir
    monkeypatch.setattr(fs, "listdir", lambda p: listed.append(str(p)) or real(p))
    monkeypatch.chdir(tmp_path)
    t = formats.open_target("." if relative else str(tmp_path))
    assert sorted(p.key for p in t.partitions()) == [("orders", n) for n in range(3)]
    assert sorted(listed) == sorted(set(listed))  # none twice
    assert len(listed) == 4
