"""The compiled clean-segment fast path (kafkalog_cli/_speedups/fastscan.pyx) against the pure
pass of `check_log_file`, which is the specification, shallow and deep (records too).

Contract: `scan_clean` answers None ("not sure") or a clean result; a clean result means the
pure pass reports no finding at all for the file and produces exactly the same summary values
and Stats increments. Whenever the pure pass reports anything, the fast path must say None.
Every comparison below runs both modes; a file whose pure deep pass is clean and that the
shallow fast path takes must take the deep fast path too (it is verify's default).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kafkalog_cli.storage.checks import check
from kafkalog_cli.storage.checks.check import CheckOptions, Stats, check_log_file, check_partition
from kafkalog_cli.storage.checks.findings import Findings
from kafkalog_cli.storage.disk.index import OffsetIndex, TimeIndex
from kafkalog_cli.storage.disk.logdir import open_target
from kafkalog_cli.storage.drills.generate import GenSpec, generate
from tests.conftest import CORPUS, FIXTURE, compiled

fs = compiled("fastscan")
needs_ext = pytest.mark.skipif(fs is None, reason="compiled fastscan not built "
                               "(test_extension_is_built reports it)")
SHALLOW = CheckOptions(shallow=True)
DEEP = CheckOptions(shallow=False)
TIERS = ["package"] + (["avx512"] if fs is not None and fs.avx512_available() else []) + (
    ["sse42"] if fs is not None and fs.sse42_available() else [])
# KAFKALOG_FUZZ_EXAMPLES=5000 for a longer, randomised hunt
_FUZZ = int(os.environ.get("KAFKALOG_FUZZ_EXAMPLES", "0"))
MUTATE = settings(max_examples=_FUZZ or 250, deadline=None, derandomize=not _FUZZ,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def test_extension_is_built():
    if os.environ.get("KAFKALOG_NO_EXT"):
        pytest.skip("KAFKALOG_NO_EXT is set: the extension is deliberately not built")
    assert fs is not None, ("kafkalog_cli._speedups.fastscan does not import: the Cython build "
                            "failed or was skipped (pip install -e . shows the warning)")
    if os.environ.get("KAFKALOG_PURE") != "1":
        assert check._fastscan is fs, "check.py does not use the fast path"


# -- helpers --------------------------------------------------------------------------------

@contextlib.contextmanager
def _pure_only():
    saved = check._fastscan
    check._fastscan = None
    try:
        yield
    finally:
        check._fastscan = saved


@contextlib.contextmanager
def _tier(name: str):
    fs._set_crc_tier(name)
    try:
        yield
    finally:
        fs._set_crc_tier("auto")


def _read_index(cls, path: Path, base: int):
    try:
        return cls.read(path, base) if path.exists() else None
    except OSError:
        return None


def _compare_mode(log: Path, base: int, prev: int | None, oi: OffsetIndex | None,
                  ti: TimeIndex | None, deep: bool, **kw) -> tuple[object, Findings]:
    f, stats = Findings(), Stats()
    with _pure_only():
        s = check_log_file(log, base, f, DEEP if deep else SHALLOW, stats, prev, oi, ti)
    r = fs.scan_clean(log, base, prev, oi.entries if oi else None, ti.entries if ti else None,
                      deep=deep, **kw)
    if f.items:
        assert r is None, (f"fast path ({'deep' if deep else 'shallow'}) says clean, pure "
                           f"reports {[x.code for x in f.items]}")
    if r is not None:
        assert r == (s.first_offset, s.last_offset, s.max_timestamp, s.valid_end, s.epochs,
                     stats.batches, stats.bytes, stats.records)
        assert s.magics == ({2} if stats.batches else set()) and not s.damaged
    return r, f


def compare(log: Path, base: int, prev: int | None = None, oi: OffsetIndex | None = None,
            ti: TimeIndex | None = None, **kw) -> tuple[object, Findings]:
    """Run both paths on one file, shallow and deep, and check the contract; returns the
    shallow (fast result, findings)."""
    r, f = _compare_mode(log, base, prev, oi, ti, False, **kw)
    rd, fd = _compare_mode(log, base, prev, oi, ti, True, **kw)
    if r is not None and not fd.items:
        assert rd is not None, "a file clean when deep must take the deep fast path"
        assert rd[:7] == r[:7]
    return r, f


def _check_partition_both(part) -> tuple[list, Stats]:
    """check_partition with and without the fast path, shallow and deep: identical findings,
    stats, LEO (returns the deep ones)."""
    for opts in (SHALLOW, DEEP):
        out = []
        for pure in (True, False):
            f, stats = Findings(), Stats()
            with _pure_only() if pure else contextlib.nullcontext():
                leo = check_partition(part, f, opts, stats)
            out.append((leo, f.items, vars(stats)))
        assert out[0] == out[1]
    return out[1][1], out[1][2]


def _segments(root: Path):
    """(log path, base, offset index, time index) of every segment and KRaft snapshot."""
    for part in open_target(root).partitions():
        for seg in part.segments:
            yield (seg.log_path, seg.base_offset,
                   _read_index(OffsetIndex, seg.path(".index"), seg.base_offset),
                   _read_index(TimeIndex, seg.path(".timeindex"), seg.base_offset))
        for fn in part.kraft_snapshots:
            if not fn.temp:
                yield part.path / fn.name, 0, None, None


def _roots() -> list[Path]:
    roots = [FIXTURE]
    if CORPUS.is_dir():
        roots += sorted(p for p in CORPUS.iterdir() if p.is_dir())
    return roots


# -- equality on real and generated data ----------------------------------------------------

@needs_ext
@pytest.mark.parametrize("root", _roots(), ids=lambda p: p.name)
def test_fixtures_and_corpus_agree(root):
    fast_batches = 0
    for log, base, oi, ti in _segments(root):
        for prev in (None, base - 1, base):
            r, _ = compare(log, base, prev, oi, ti)
            compare(log, base, prev, None, None, chunk=4096, threads=True)
            fast_batches += r[5] if r else 0
    for part in open_target(root).partitions():
        _check_partition_both(part)
    if root.name == "kafka-0.9-legacy":  # magic 0/1 data is always left to the pure path
        assert fast_batches == 0
    else:
        assert fast_batches > 0


def _gen(tmp: Path, **spec) -> Path:
    d = tmp / "ld"
    shutil.rmtree(d, ignore_errors=True)
    generate(d, GenSpec(**spec))
    return d


GEN_CASES = [
    dict(records=3000, batch_records=7, segment_bytes=32 * 1024, index_interval_bytes=0),
    dict(records=3000, batch_records=20, segment_bytes=64 * 1024, index_interval_bytes=1),
    dict(records=3000, batch_records=20, segment_bytes=48 * 1024, index_interval_bytes=4096,
         codecs=["gzip", "lz4", "zstd", "snappy", "none"]),
    dict(records=2000, batch_records=50, value_bytes=400, segment_bytes=256 * 1024,
         index_interval_bytes=30000, transactions=True, idempotent=True),
    dict(records=1500, batch_records=100, value_bytes=300, segment_bytes=1 << 20,
         index_interval_bytes=10_000_000, jitter_ms=50, log_append_time=True),
    dict(records=500, batch_records=5, segment_bytes=20_000, leader_epoch=3, keys=0),
    dict(records=0),
]


@needs_ext
@pytest.mark.parametrize("case", range(len(GEN_CASES)))
def test_generated_segments_agree(tmp_path, case):
    d = _gen(tmp_path, **GEN_CASES[case])
    n = 0
    for log, base, oi, ti in _segments(d):
        for chunk, threads in ((4 << 20, True), (4096, True), (4096, False), (5003, True)):
            for tier in TIERS:
                with _tier(tier):
                    r, f = compare(log, base, base - 1 if base else None, oi, ti,
                                   chunk=chunk, threads=threads)
                assert not f.items
                assert r is not None, "a clean generated segment must take the fast path"
                n += 1
    assert n
    for part in open_target(d).partitions():
        findings, _ = _check_partition_both(part)
        assert not [x for x in findings if x.code.startswith(("LOG_", "INDEX", "TIMEINDEX"))]


@needs_ext
def test_generated_by_the_cli_agree(tmp_path):
    d = tmp_path / "cli"
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "generate", str(d), "--records",
                        "2000", "--segment-bytes", "30000", "--codec", "lz4", "--codec", "none",
                        "--transactions"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for log, base, oi, ti in _segments(d):
        r, f = compare(log, base, None, oi, ti, chunk=4096)
        assert r is not None and not f.items


@needs_ext
def test_legacy_magic_is_left_to_the_pure_path(tmp_path):
    d = _gen(tmp_path, magic=1, records=200)
    for log, base, oi, ti in _segments(d):
        r, f = compare(log, base, None, oi, ti)
        assert r is None and not f.items


@needs_ext
def test_large_batches_straddle_many_chunks(tmp_path):
    d = _gen(tmp_path, records=400, batch_records=200, value_bytes=900, keys=0,
             segment_bytes=8 << 20)
    for log, base, oi, ti in _segments(d):
        assert os.path.getsize(log) > 300_000
        for tier in TIERS:
            with _tier(tier):
                for threads in (True, False):
                    r, _ = compare(log, base, None, oi, ti, chunk=4096, threads=threads)
                    assert r is not None


@needs_ext
def test_concurrent_calls_agree(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    d = _gen(tmp_path, records=4000, batch_records=10, segment_bytes=64 * 1024,
             index_interval_bytes=1)
    segs = list(_segments(d))
    jobs = [(log, base, oi.entries if oi else None, ti.entries if ti else None, chunk)
            for log, base, oi, ti in segs for chunk in (4096, 9000, 1 << 20)] * 4
    want = [fs.scan_clean(log, base, None, o, t, chunk=c) for log, base, o, t, c in jobs]
    assert all(w is not None for w in want)
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda j: fs.scan_clean(j[0], j[1], None, j[2], j[3], chunk=j[4]),
                          jobs))
    assert got == want


@needs_ext
def test_unreadable_and_odd_inputs_are_unsure(tmp_path):
    assert fs.scan_clean(tmp_path / "missing.log", 0) is None
    assert fs.scan_clean(tmp_path, 0) is None  # a directory: read fails
    empty = tmp_path / "00000000000000000000.log"
    empty.write_bytes(b"")
    assert fs.scan_clean(empty, 0) == (None, None, -1, 0, [], 0, 0, 0)
    assert fs.scan_clean(empty, 0, None, [], []) == (None, None, -1, 0, [], 0, 0, 0)
    assert fs.scan_clean(empty, 0, deep=True) == (None, None, -1, 0, [], 0, 0, 0)
    assert fs.scan_clean(empty, 0, deep=True, max_decompressed=2**80) is None
    assert fs.scan_clean(empty, 0, None, [(0, 0)], None) is None  # INDEX_PAST_LOG_END
    assert fs.scan_clean(empty, 0, None, None, [(5, 0)]) is None  # TIMEINDEX_OFFSET_NOT_FOUND
    assert fs.scan_clean(empty, 2**80) is None
    assert fs.scan_clean(empty, 0, 2**80) is None
    assert fs.scan_clean(empty, 0, None, [(2**70, 0)]) is None
    assert fs.scan_clean(empty, 0, None, "not a list") is None


def test_crc_tiers_match_the_package():
    if fs is None:
        pytest.skip("extension not built")
    rng = random.Random(5)
    for tier in TIERS:
        with _tier(tier):
            for n in [*range(0, 300), 511, 512, 513, 1023, 4096, 16411, 100_003]:
                data = rng.randbytes(n)
                for value in (0, 1, 0xFFFFFFFF, rng.getrandbits(32)):
                    assert fs._crc32c(data, value) == crc32c(data, value), (tier, n, value)


# -- mutations ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory) -> Path:
    """One partition of several ~24 KiB segments with dense indexes (every batch indexed)."""
    d = tmp_path_factory.mktemp("seed")
    generate(d / "ld", GenSpec(records=1200, batch_records=6, value_bytes=60,
                               segment_bytes=24 * 1024, index_interval_bytes=0,
                               codecs=["none", "lz4"], leader_epoch=2))
    part = open_target(d / "ld").partitions()[0]
    assert len(part.segments) >= 3
    return part.path


def _batch_starts(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos + 12 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0]
        if size < 14:
            break
        out.append(pos)
        pos += 12 + size
    return out


def _recrc(buf: bytearray, pos: int) -> None:
    size = struct.unpack_from(">i", buf, pos + 8)[0]
    end = min(len(buf), pos + 12 + size)
    if end - pos >= 21:
        struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21:end])))


HOSTILE_SIZES = [-(2**31), -1, 0, 13, 14, 48, 49, 50, 2**31 - 1, 2**28 + 1, 300_000]
# (offset within the header, struct format): fields a mutation may rewrite
FIELDS = [(0, ">q"), (8, ">i"), (12, ">i"), (16, ">b"), (23, ">i"), (27, ">q"), (35, ">q")]
VALUES = st.one_of(st.integers(-3, 3), st.sampled_from([-(2**31), 2**31 - 1, 2**32, 2**62,
                                                         -(2**63), 2**63 - 1]),
                   st.integers(-(2**63), 2**63 - 1))

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 7)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=80)),
    st.tuples(st.just("size"), st.integers(0, 500), st.sampled_from(HOSTILE_SIZES)),
    st.tuples(st.just("field"), st.integers(0, 500), st.sampled_from(FIELDS), VALUES,
              st.booleans()),
    st.tuples(st.just("index"), st.sampled_from([".index", ".timeindex"]), st.integers(0, 10**5),
              st.integers(0, 255)),
    st.tuples(st.just("index-drop"), st.sampled_from([".index", ".timeindex"]),
              st.integers(0, 10**5)),
    st.tuples(st.just("zero-tail"), st.integers(1, 200)),
    # changes that keep every CRC valid: records bytes (shallow never reads them), the leader
    # epoch (not covered), or a covered header field followed by a recomputed CRC
    st.tuples(st.just("payload"), st.integers(0, 500), st.integers(0, 10**5), st.integers(0, 7)),
    st.tuples(st.just("field"), st.integers(0, 500), st.just((12, ">i")), st.integers(-2, 9),
              st.just(False)),
    st.tuples(st.just("field"), st.integers(0, 500), st.sampled_from([(35, ">q"), (23, ">i")]),
              st.integers(-2, 1_700_000_100_000), st.just(True)),
    # CRC-valid changes the deep pass alone sees: the record count, the base timestamp, the
    # attributes (codec, timestamp type, control)
    st.tuples(st.just("field"), st.integers(0, 500),
              st.sampled_from([(57, ">i"), (27, ">q"), (21, ">h")]),
              st.one_of(st.integers(-2, 300), st.sampled_from([2**31 - 1, 2**63 - 1, 0x20, 0x28,
                                                                0x24, 0x07, 0x03])),
              st.just(True)),
)


def _apply(d: Path, base: int, muts) -> None:
    log = d / f"{base:020d}.log"
    buf = bytearray(log.read_bytes())
    for m in muts:
        kind = m[0]
        if kind == "flip" and buf:
            i = m[1] % len(buf)
            buf[i] ^= 1 << m[2]
        elif kind == "truncate":
            del buf[m[1] % (len(buf) + 1):]
        elif kind == "insert":
            i = m[1] % (len(buf) + 1)
            buf[i:i] = m[2]
        elif kind in ("size", "field"):
            starts = _batch_starts(bytes(buf))
            if not starts:
                continue
            pos = starts[m[1] % len(starts)]
            if kind == "size":
                struct.pack_into(">i", buf, pos + 8, m[2])
            else:
                (off, fmt), value, recrc = m[2], m[3], m[4]
                bits = struct.calcsize(fmt) * 8
                value = (value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
                if pos + off + bits // 8 <= len(buf):
                    struct.pack_into(fmt, buf, pos + off, value)
                    if recrc:
                        _recrc(buf, pos)
        elif kind in ("index", "index-drop"):
            p = d / f"{base:020d}{m[1]}"
            data = bytearray(p.read_bytes()) if p.exists() else b""
            if not data:
                continue
            i = m[2] % len(data)
            if kind == "index":
                data[i] = m[3]
            else:
                width = 8 if m[1] == ".index" else 12
                i -= i % width
                del data[i:i + width]
            p.write_bytes(bytes(data))
        elif kind == "zero-tail":
            buf += bytes(m[1])
        elif kind == "payload":
            starts = _batch_starts(bytes(buf))
            if starts:
                pos = starts[m[1] % len(starts)]
                size = struct.unpack_from(">i", buf, pos + 8)[0]
                if 12 + size > 61 and pos + 12 + size <= len(buf):
                    buf[pos + 61 + m[2] % (12 + size - 61)] ^= 1 << m[3]
                    _recrc(buf, pos)
    log.write_bytes(bytes(buf))


@needs_ext
@MUTATE
@given(muts=st.lists(mutation, min_size=1, max_size=2),
       chunk=st.sampled_from([4096, 4099, 6000, 1 << 20]), threads=st.booleans(),
       tier=st.sampled_from(TIERS), prev=st.sampled_from([None, -1, 0, 1]))
def test_mutated_segments_never_disagree(seed_dir, tmp_path_factory, muts, chunk, threads,
                                         tier, prev):
    work = tmp_path_factory.getbasetemp() / f"mut-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(seed_dir, work)
    base = sorted(int(p.name.split(".")[0]) for p in work.glob("*.log"))[1]  # not 0
    _apply(work, base, muts)
    oi = _read_index(OffsetIndex, work / f"{base:020d}.index", base)
    ti = _read_index(TimeIndex, work / f"{base:020d}.timeindex", base)
    with _tier(tier):
        r, f = compare(work / f"{base:020d}.log", base, None if prev is None else base + prev,
                       oi, ti, chunk=chunk, threads=threads)
    event("fast: clean" if r is not None else
          "fast: unsure, pure reports" if f.items else "fast: unsure, pure clean")
    part = open_target(work).partition
    if part is not None:
        _check_partition_both(part)


@needs_ext
def test_unmutated_seed_is_clean(seed_dir):
    for log, base, oi, ti in _segments(seed_dir):
        r, f = compare(log, base, None, oi, ti, chunk=4096)
        assert r is not None and not f.items


# -- signals --------------------------------------------------------------------------------

class _Tick(Exception):
    pass


def _restamped(batch: bytes, copies: int) -> bytes:
    """`copies` copies of one v2 batch with increasing base offsets (not covered by the CRC)."""
    span = struct.unpack_from(">i", batch, 23)[0] + 1
    return b"".join(struct.pack(">q", i * span) + batch[8:] for i in range(copies))


@needs_ext
@pytest.mark.skipif(not hasattr(signal, "setitimer") or not os.path.isdir("/proc/self/fd"),
                    reason="needs setitimer and /proc")
def test_a_signal_handler_exception_propagates(tmp_path):
    src = next(log for log, base, _, _ in _segments(FIXTURE / "demo-0") if base == 0)
    data = src.read_bytes()
    batch = data[:_batch_starts(data)[1]]
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(_restamped(batch, 8000))
    assert fs.scan_clean(log, 0, chunk=4096) is not None
    fds = len(os.listdir("/proc/self/fd"))
    inside = False

    def handler(signum, frame):
        if inside:
            raise _Tick

    old = signal.signal(signal.SIGALRM, handler)
    raised = 0
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
        for n in range(400):
            try:
                inside = True
                fs.scan_clean(log, 0, chunk=4096, threads=bool(n % 2))
                inside = False
            except _Tick:
                inside = False
                raised += 1
                if raised >= 6:
                    break
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert raised
    assert len(os.listdir("/proc/self/fd")) == fds  # no descriptor left open
    assert fs.scan_clean(log, 0, chunk=4096) is not None


# -- hypothesis-made records (deep) ---------------------------------------------------------

_record = st.tuples(
    st.integers(-3, 40),  # offset step from the previous record: <= 0 is an order fault
    st.integers(-(2**40), 2**40),  # timestamp
    st.one_of(st.none(), st.binary(max_size=12)),
    st.one_of(st.none(), st.binary(max_size=40),
              st.sampled_from([b"\x00\x00\x00\x00\x00\x00", b"\x00\x00\x00\x01\x00\x00"])),
    st.lists(st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=6))),
             max_size=2),
)
_batch = st.fixed_dictionaries({
    "records": st.lists(_record, max_size=6),
    "codec": st.sampled_from([0, 0, 1, 2, 3, 4]),
    "control": st.booleans(),
    "log_append": st.booleans(),
    "base_shift": st.integers(-2, 2),  # base offset vs the first record's: range faults
    "lod_shift": st.integers(-1, 1),  # last offset delta vs the last record's
})


def _segment(batches) -> bytes:
    from kafkalog_cli.codec.batch_v2 import encode_batch

    out, next_off = [], 0
    for b in batches:
        recs, off = [], next_off
        for step, ts, key, value, headers in b["records"]:
            off += step if recs else 0
            recs.append((max(off, 0), ts, key, value, headers))
        if not recs:
            continue
        last = max(r[0] for r in recs)
        base = max(0, recs[0][0] + b["base_shift"])
        out.append(encode_batch(
            recs, base_offset=base, codec=b["codec"], control=b["control"],
            timestamp_type=1 if b["log_append"] else 0,
            log_append_time=1_700_000_000_000 if b["log_append"] else None,
            last_offset_delta=max(0, last - base + b["lod_shift"])))
        next_off = max(last, base + max(0, last - base + b["lod_shift"])) + 1
    return b"".join(out)


@needs_ext
@settings(MUTATE, max_examples=_FUZZ or 150)
@given(batches=st.lists(_batch, min_size=1, max_size=4), chunk=st.sampled_from([4096, 1 << 20]))
def test_hypothesis_records_agree(tmp_path_factory, batches, chunk):
    log = tmp_path_factory.getbasetemp() / f"hyp-{os.getpid()}" / f"{0:020d}.log"
    log.parent.mkdir(exist_ok=True)
    log.write_bytes(_segment(batches))
    rd, fd = _compare_mode(log, 0, None, None, None, True, chunk=chunk)
    event("deep fast: clean" if rd is not None else
          "deep fast: unsure, pure reports" if fd.items else "deep fast: unsure, pure clean")
    if rd is None and not fd.items:
        # the fast path may only decline what the pure pass reports (or legacy data)
        raise AssertionError("a clean segment was declined by the deep fast path")
