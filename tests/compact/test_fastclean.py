"""The compiled cleaner (kafkalog_cli/_speedups/fastclean.pyx) against the pure one, which is
the specification: the same offset map byte for byte, the same batches out of the record
filter, the same compacted log dirs (every file) from the CLI, and the same errors.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.codec import compression as codecs
from kafkalog_cli.codec.batch_v2 import RecordBatch, encode_batch
from kafkalog_cli.storage.maintenance import compaction, offset_map
from kafkalog_cli.storage.maintenance.compaction import CleanerConfig, _filter_batch
from kafkalog_cli.storage.maintenance.offset_map import ENTRY, FullError, OffsetMapPure

try:
    import kafkalog_cli._speedups.fastclean as fc
except ImportError:  # not built: test_extension_is_built says so
    fc = None

needs_ext = pytest.mark.skipif(fc is None, reason="fastclean is not built")
NOW = 1_700_001_000_000
DAY = 86_400_000


def test_extension_is_built():
    if os.environ.get("KAFKALOG_NO_EXT"):
        pytest.skip("KAFKALOG_NO_EXT is set: built without the extension on purpose")
    assert fc is not None, "kafkalog_cli._speedups.fastclean does not import: build it"
    if os.environ.get("KAFKALOG_PURE") != "1":
        assert offset_map.FAST is fc and offset_map.OffsetMap is fc.OffsetMap


def test_pure_path_forced_by_environment():
    code = ("from kafkalog_cli.storage.maintenance import offset_map as m\n"
            "assert m.FAST is None and m.OffsetMap is m.OffsetMapPure\n")
    subprocess.run([sys.executable, "-c", code], env=dict(os.environ, KAFKALOG_PURE="1"),
                   check=True, timeout=60)


# -- MD5 and the table --------------------------------------------------------------------

@needs_ext
@given(st.binary(max_size=300))
def test_md5_is_md5(key):
    assert fc.md5(key) == hashlib.md5(key).digest()


keysets = st.lists(st.one_of(st.binary(max_size=3), st.binary(min_size=50, max_size=70),
                             st.binary(max_size=130)), max_size=200)


@needs_ext
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(keysets, st.integers(2, 60), st.sampled_from([0.5, 0.9, 1.0]))
def test_put_and_get_fill_the_same_table(keys, slots, load):
    """Tiny tables: long probe chains, past the 13th probe (linear), and the map filling."""
    if slots * load <= 1:
        return
    pure, comp = OffsetMapPure(slots * ENTRY, load), fc.OffsetMap(slots * ENTRY, load)
    assert (comp.slots, comp.max_entries) == (pure.slots, pure.max_entries)
    for i, k in enumerate(keys):
        outcome = []
        for m in (pure, comp):
            try:
                m.put(k, i)
                outcome.append(None)
            except FullError:
                outcome.append("full")
        assert outcome[0] == outcome[1]
        assert comp.table() == pure.table()
        assert (comp.size, comp.latest_offset) == (pure.size, pure.latest_offset)
    for k in [*keys, b"absent", b"", b"x" * 100]:
        assert comp.get(k) == pure.get(k)


def _batch(recs, **kw) -> RecordBatch:
    return RecordBatch(encode_batch(recs, **kw))


records = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=2), st.binary(min_size=54, max_size=60),
                        st.binary(max_size=80)),
              st.one_of(st.none(), st.binary(max_size=20)),
              st.lists(st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=4))),
                       max_size=2),
              st.integers(-5, 5)),
    min_size=1, max_size=60)


def _encode(recs, base: int, gaps: bool, **kw) -> RecordBatch:
    out, off = [], base
    for k, v, h, t in recs:
        out.append((off, 1_000 + t * 7, k, v, h))
        off += 2 if gaps else 1
    return _batch(out, **kw)


@needs_ext
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records, min_size=1, max_size=6), st.integers(3, 200), st.integers(0, 30),
       st.booleans())
def test_map_section_fills_the_map_the_pure_loop_fills(batches, slots, start, gaps):
    """build_offset_map's record loop, pure, against map_section: same table, same point
    where the map is full, same latest offset; the slot notes point at the keys' slots."""
    pure, comp = OffsetMapPure(slots * ENTRY, 0.75), fc.OffsetMap(slots * ENTRY, 0.75)
    base = 0
    for recs in batches:
        b = _encode(recs, base, gaps)
        base = b.next_offset
        full_pure = False
        for r in b.records():
            if r.key is not None and r.offset >= start:
                try:
                    pure.put(r.key, r.offset)
                except FullError:
                    full_pure = True
                    break
        data, lat = b.records_section()
        memo = bytearray(4 * b.count)
        st_ = fc.map_section(comp, data, b.count, b.base_offset, b.base_timestamp, lat is None,
                             start, memo)
        assert st_ == (fc.FULL if full_pure else fc.MAPPED)
        assert comp.table() == pure.table()
        assert (comp.size, comp.latest_offset) == (pure.size, pure.latest_offset)
        table = comp.table()
        for i, r in enumerate(b.records()):
            slot = int.from_bytes(memo[4 * i:4 * i + 4], sys.byteorder)
            if slot != fc.NO_SLOT:
                assert table[slot * ENTRY:slot * ENTRY + 16] == hashlib.md5(r.key).digest()
        if full_pure:
            break


@needs_ext
def test_a_section_that_does_not_decode_changes_nothing():
    b = _batch([(0, 1, b"a", b"1", []), (1, 1, b"b", b"2", [])])
    data, _ = b.records_section()
    broken = data[:-1]
    m = fc.OffsetMap(100 * ENTRY)
    assert fc.map_section(m, broken, 2, 0, 1, True, 0) == fc.NOT_SURE
    assert m.size == 0 and m.table() == bytes(100 * ENTRY)
    assert fc.filter_section(m, broken, 2, 0, 1, None, False, None, 5) is None
    # offsets that do not increase: decodable, but not the fast path's to judge
    twice = bytes(data[:len(data) // 2]) * 2
    assert fc.map_section(m, twice, 2, 0, 1, True, 0) == fc.NOT_SURE


# -- the record filter ----------------------------------------------------------------------

CODECS = [codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]


def _both(b, discard, m, now, cfg, active, unclean, keep_tomb, memo):
    saved = offset_map.FAST
    try:
        offset_map.FAST = None
        pure = _filter_batch(b, discard, m, now, cfg, active, unclean, keep_tomb)
        offset_map.FAST = fc
        comp = _filter_batch(b, discard, m, now, cfg, active, unclean, keep_tomb, memo)
    finally:
        offset_map.FAST = saved
    return pure, comp


@needs_ext
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(records, st.lists(st.binary(max_size=2), max_size=40), st.sampled_from(CODECS),
       st.sampled_from([0, 1]), st.one_of(st.none(), st.integers(0, 3000)),
       st.integers(0, 3000), st.booleans(), st.booleans(), st.booleans(), st.integers(0, 80))
def test_filter_keeps_and_encodes_what_the_pure_filter_does(
        recs, later, codec, ts_type, horizon, now, txn, retain, use_memo, latest_cut):
    """One v2 data batch through _filter_batch, pure and compiled: the same bytes (records
    kept, their re-encoding, timestamps, horizon, header, CRC, compression) or the same
    nothing. The map holds the batch's keys and some later writes of a few of them."""
    b = _encode(recs, 100, False, codec=codec, timestamp_type=ts_type,
                log_append_time=5_000 if ts_type else None, delete_horizon_ms=horizon,
                producer_id=9 if txn else -1, producer_epoch=1 if txn else -1,
                base_sequence=0 if txn else -1, transactional=txn)
    m = fc.OffsetMap(400 * ENTRY)
    data, lat = b.records_section()
    memo = bytearray(4 * b.count)
    assert fc.map_section(m, data, b.count, b.base_offset, b.base_timestamp, lat is None, 0,
                          memo) == fc.MAPPED
    for i, k in enumerate(later):  # later records of some keys: those here must go
        m.put(k, b.next_offset + i)
    # a map that ends inside the batch (a full round): records past it stay unjudged
    m.latest_offset = min(m.latest_offset, b.base_offset + latest_cut)
    active = {9: (b.last_offset, 1)} if retain else {}
    cfg = CleanerConfig(delete_retention_ms=DAY)
    pure, comp = _both(b, False, m, now, cfg, active, 10**9, True, memo if use_memo else None)
    assert comp == pure


@needs_ext
def test_a_batch_the_map_leaves_whole_is_copied_and_a_new_tombstone_gets_its_horizon():
    b = _batch([(0, 10, b"a", b"1", []), (1, 12, b"b", None, [("h", b"x")])])
    m = fc.OffsetMap(100 * ENTRY)
    m.put(b"a", 0)
    m.put(b"b", 1)
    cfg = CleanerConfig(delete_retention_ms=DAY)
    pure, comp = _both(b, False, m, NOW, cfg, {}, 10**9, True, None)
    assert comp == pure
    out = RecordBatch(comp[0])
    assert out.delete_horizon_ms == NOW + DAY and [r.value for r in out.records()] == [b"1", None]
    # with the horizon set and not passed, the batch is copied as it is
    again = RecordBatch(comp[0])
    pure, comp = _both(again, False, m, NOW, cfg, {}, 10**9, True, None)
    assert comp == pure and comp[0] == bytes(again.data)
    # past it, the tombstone goes
    pure, comp = _both(again, False, m, NOW + DAY, cfg, {}, 10**9, True, None)
    assert comp == pure and [r.key for r in RecordBatch(comp[0]).records()] == [b"a"]


# -- whole log dirs, both ways ----------------------------------------------------------------

def _run(args, pure: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if pure:
        env["KAFKALOG_PURE"] = "1"
    else:
        env.pop("KAFKALOG_PURE", None)
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *map(str, args)], env=env,
                          capture_output=True, timeout=300)


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _compact_both(tmp: Path, src: Path, args: list[str]) -> dict[str, bytes]:
    outs = []
    for pure in (True, False):
        d = tmp / ("pure" if pure else "compiled")
        shutil.copytree(src, d)
        p = _run(["compact", d / "demo-0", "--force", "--now", NOW, "--no-quarantine",
                  "--format", "json", *args], pure)
        outs.append((p.returncode, p.stdout.replace(bytes(d), b"D"),
                     p.stderr.replace(bytes(d), b"D"), _files(d)))
    assert outs[0][0] == 0, outs[0][2]
    assert outs[1] == outs[0]
    return outs[0][3]


@needs_ext
@pytest.mark.parametrize("seed", range(6))
def test_compact_writes_the_same_files_compiled_or_pure(tmp_path, seed):
    rng = random.Random(seed)
    src = tmp_path / "src"
    gen = ["generate", src, "--records", rng.randrange(400, 1500),
           "--keys", rng.choice([3, 40, 300]), "--tombstones", rng.choice([0.0, 0.2]),
           "--segment-bytes", rng.choice([3000, 8000]), "--batch-records",
           rng.choice([1, 9, 40]), "--seed", seed, "--value-bytes", rng.choice([0, 30])]
    for c in (*("none", "gzip", "snappy", "lz4", "zstd")[seed % 5:], "none"):
        gen += ["--codec", c]
    if seed % 2:
        gen.append("--transactions")
    if seed % 3 == 0:
        gen += ["--jitter-ms", "500"]
    assert _run(gen, True).returncode == 0
    args = ["--dedupe-buffer-size", str(24 * 25)] if seed % 3 == 1 else []  # many rounds
    files = _compact_both(tmp_path, src, args)
    assert files != _files(src)


@needs_ext
def test_tombstones_through_two_rounds_and_the_horizon_compiled_or_pure(tmp_path):
    """The first round sets horizons, a round past them removes tombstones: both ways."""
    src = tmp_path / "src"
    assert _run(["generate", src, "--records", "900", "--keys", "30", "--tombstones", "0.4",
                 "--segment-bytes", "3000", "--seed", "11", "--codec", "none", "--codec",
                 "lz4"], True).returncode == 0
    outs = []
    for pure in (True, False):
        d = tmp_path / ("pure" if pure else "compiled")
        shutil.copytree(src, d)
        for now in (NOW, NOW + DAY):
            p = _run(["compact", d / "demo-0", "--force", "--now", now, "--no-quarantine"], pure)
            assert p.returncode == 0, p.stderr
        outs.append(_files(d))
    assert outs[0] == outs[1]


@needs_ext
def test_a_corrupt_records_section_fails_the_same_way_compiled_or_pure(tmp_path):
    """A batch whose records do not decode (CRC made right): the compiled path is not sure,
    the pure loop raises its error; message, exit code and files as the pure path's."""
    src = tmp_path / "src"
    assert _run(["generate", src, "--records", "300", "--keys", "20", "--segment-bytes",
                 "8000", "--seed", "4"], True).returncode == 0
    log = sorted((src / "demo-0").glob("*.log"))[0]  # not the active segment
    data = bytearray(log.read_bytes())
    first = RecordBatch(bytes(data))
    second_at = first.size
    b = RecordBatch(bytes(data[second_at:]))
    # a record length past the section's end, in the second batch's first record
    data[second_at + 61] = 0x7E
    from kafkalog_cli.codec.checksum import crc32c
    crc = crc32c(bytes(data[second_at + 21:second_at + b.size]))
    data[second_at + 17:second_at + 21] = crc.to_bytes(4, "big")
    log.write_bytes(bytes(data))
    outs = []
    for pure in (True, False):
        d = tmp_path / ("pure" if pure else "compiled")
        shutil.copytree(src, d)
        p = _run(["compact", d / "demo-0", "--force", "--now", NOW, "--no-quarantine"], pure)
        outs.append((p.returncode, p.stderr.replace(bytes(d), b"D"), _files(d)))
    assert outs[0][0] != 0 and b"D" in outs[0][1], outs[0][1]
    assert outs[1] == outs[0]


@needs_ext
def test_past_the_memo_budget_the_rewrite_hashes_again_and_writes_the_same(tmp_path, monkeypatch):
    """The slot notes stop at MEMO_BUDGET bytes (memory stays bounded on any partition); the
    batches past it are judged by hashing their keys again, to the same result."""
    from kafkalog_cli.storage.disk.logdir import open_target

    src = tmp_path / "src"
    assert _run(["generate", src, "--records", "2000", "--keys", "300", "--segment-bytes",
                 "8000", "--batch-records", "25", "--seed", "8", "--codec", "none", "--codec",
                 "zstd"], True).returncode == 0
    want = tmp_path / "pure"
    shutil.copytree(src, want)
    assert _run(["compact", want / "demo-0", "--force", "--now", NOW, "--no-quarantine"],
                True).returncode == 0
    got = tmp_path / "compiled"
    shutil.copytree(src, got)
    monkeypatch.setattr(compaction, "MEMO_BUDGET", 4 * 25 * 30)  # 30 batches of 80
    monkeypatch.setattr(offset_map, "FAST", fc)
    monkeypatch.setattr(offset_map, "OffsetMap", fc.OffsetMap)
    noted = []
    real = compaction.build_offset_map

    def spy(*a, **kw):
        res = real(*a, **kw)
        noted.append(sum(map(len, a[5].values())))
        return res
    monkeypatch.setattr(compaction, "build_offset_map", spy)
    part = open_target(got / "demo-0").partition
    state, aborted, _log_end, _counts = compaction.replay(part)
    cfg = CleanerConfig()
    rng = compaction.cleanable_range(part, None, part.segments[0].base_offset, None, state, NOW,
                                     cfg)
    compaction.clean_round(part, rng, cfg, NOW, state, aborted, None, fsync=False)
    assert noted == [4 * 25 * 30]
    logs = {k: v for k, v in _files(want).items() if k.endswith((".log", ".index", ".timeindex"))}
    assert {k: v for k, v in _files(got).items() if k in logs} == logs


@needs_ext
def test_keyless_records_and_a_full_map_compiled_or_pure(tmp_path):
    """Keyless records among keyed ones, a map that fills every few keys: both ways alike."""
    src = tmp_path / "src"
    for n in range(6):
        lines = "".join(json.dumps({"key": None if (i + n) % 5 == 0 else f"k{(i * 7 + n) % 13}",
                                    "value": None if i % 11 == 3 else "v" * (i % 30)}) + "\n"
                        for i in range(40))
        p = subprocess.run(
            [sys.executable, "-m", "kafkalog_cli", "append", str(src), "--create", "--topic",
             "demo", "--partition", "0", "--segment-bytes", "1200", "--batch-records", str(n + 1),
             "--codec", ("none", "lz4", "zstd")[n % 3], "--now", str(NOW)],
            input=lines.encode(), capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr
    for args in ([], ["--dedupe-buffer-size", str(24 * 6)]):
        shutil.rmtree(tmp_path / "pure", ignore_errors=True)
        shutil.rmtree(tmp_path / "compiled", ignore_errors=True)
        files = _compact_both(tmp_path, src, args)
        assert files != _files(src)
