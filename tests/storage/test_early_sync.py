"""files.EarlySync: a big file's fdatasync started while it is written, errors kept for the
writer."""

from __future__ import annotations

import os

import pytest

from kafkalog_cli.storage.disk.files import EarlySync


def test_syncs_once_per_step_and_one_at_a_time(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "fdatasync", lambda fd: calls.append(fd))
    with open(tmp_path / "f", "wb") as f:
        early = EarlySync(f.fileno(), step=100)
        early.wrote(99)  # below the first step: nothing
        early.wait()
        assert calls == []
        early.wrote(1)  # 100 in all
        early.wait()
        assert calls == [f.fileno()]
        early.wrote(50)  # 150: the next step is 100 bytes past the last sync's 100
        early.wait()
        assert calls == [f.fileno()]
        early.wrote(50)  # 200
        early.wait()
        assert calls == [f.fileno()] * 2


def test_the_data_is_on_disk_and_the_file_whole(tmp_path):
    data = os.urandom(1 << 16)
    with open(tmp_path / "f", "wb") as f:
        early = EarlySync(f.fileno(), step=4096)
        for i in range(0, len(data), 1000):
            f.write(data[i:i + 1000])
            f.flush()
            early.wrote(len(data[i:i + 1000]))
        early.wait()
        os.fsync(f.fileno())
    assert (tmp_path / "f").read_bytes() == data


def test_a_failed_sync_is_raised_by_wait():
    r, w = os.pipe()  # a pipe cannot be synced: EINVAL in the helper thread
    try:
        early = EarlySync(w, step=1)
        early.wrote(1)
        with pytest.raises(OSError):
            early.wait()
    finally:
        os.close(r)
        os.close(w)
