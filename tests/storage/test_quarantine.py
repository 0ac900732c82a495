"""The quarantine on its own: unique names, moves to another file system."""

import errno
import os

import pytest

from kafkalog_cli.errors import LogDirIOError
from kafkalog_cli.storage.maintenance import quarantine as qmod
from kafkalog_cli.storage.maintenance.quarantine import Quarantine


def _logdir(tmp_path):
    ld = tmp_path / "ld"
    (ld / "t-0").mkdir(parents=True)
    return ld


def test_the_same_name_twice_keeps_both(tmp_path):
    ld = _logdir(tmp_path)
    q = Quarantine(ld, tmp_path / "q")
    seg = ld / "t-0" / "00000000000000000000.log"
    for data in (b"first", b"second", b"third"):
        seg.write_bytes(data)
        q.remove(seg, "replaced")
    got = sorted(p.name for p in (q.dir / "t-0").iterdir())
    assert got == ["00000000000000000000.log", "00000000000000000000.log.2",
                   "00000000000000000000.log.3"]
    assert [(q.dir / "t-0" / n).read_bytes() for n in got] == [b"first", b"second", b"third"]
    assert [e["to"] for e in q.entries] == [str(q.dir / "t-0" / n) for n in got]


def _exdev_once(monkeypatch):
    real = os.rename
    calls = []

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 1:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real(src, dst)

    monkeypatch.setattr(qmod.os, "rename", rename)
    return calls


def test_a_move_to_another_file_system_copies_whole_then_removes(tmp_path, monkeypatch):
    ld = _logdir(tmp_path)
    q = Quarantine(ld, tmp_path / "q")
    seg = ld / "t-0" / "00000000000000000000.log"
    seg.write_bytes(b"x" * 100_000)
    calls = _exdev_once(monkeypatch)
    q.remove(seg, "retention")
    dest = q.dir / "t-0" / "00000000000000000000.log"
    assert not seg.exists() and dest.read_bytes() == b"x" * 100_000
    # the copy was made under a temporary name and renamed into place once whole
    assert calls[1] == (dest.with_name(dest.name + ".partial"), dest)
    assert not list(q.dir.rglob("*.partial"))


def test_a_failed_copy_keeps_the_original_and_leaves_no_partial(tmp_path, monkeypatch):
    ld = _logdir(tmp_path)
    q = Quarantine(ld, tmp_path / "q")
    seg = ld / "t-0" / "00000000000000000000.log"
    seg.write_bytes(b"keep me")
    _exdev_once(monkeypatch)

    def full(src, dst, **kw):
        with open(dst, "wb") as f:
            f.write(b"ke")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(qmod.shutil, "copy2", full)
    with pytest.raises(LogDirIOError, match="No space left"):
        q.remove(seg, "retention")
    assert seg.read_bytes() == b"keep me"
    assert not list(q.dir.rglob("*.partial")) and not (q.dir / "t-0" / seg.name).exists()
