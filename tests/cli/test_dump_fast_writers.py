"""The compiled record writers of `dump` (jsonl: orjson's bytes; text: text_line's
kafka-dump-log lines) give byte for byte what the pure path gives, stderr and exit code
included: on the fixture, every codec, transactions (control batches), null keys and values,
headers, non-UTF-8 payloads, every --payload, the filters, --decode, and the shared corpus.
The Kafka-written corpora of .kafka-ref: tests/conformance/test_conformance_dump_fast.py."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.cli import root
from kafkalog_cli.codec.batch_v2 import encode_batch
from tests.conftest import CORPUS, FIXTURE

TEXT = ["--print-data"]  # text is the default format
JSONL = ["--format", "jsonl"]


def dump(paths, *extra, pure: bool) -> tuple[int, bytes, bytes]:
    """In this process (record_writer reads KAFKALOG_PURE at each dump)."""
    paths = [paths] if isinstance(paths, (str, Path)) else paths
    with pytest.MonkeyPatch.context() as mp:
        if pure:
            mp.setenv("KAFKALOG_PURE", "1")
        else:
            mp.delenv("KAFKALOG_PURE", raising=False)
        r = CliRunner().invoke(root, ["dump", *map(str, paths), "--records", *extra],
                               standalone_mode=False)
    assert r.exception is None, (extra, r.exception, r.stderr)
    assert r.return_value in (0, 4), r.stderr
    return r.return_value, r.stdout_bytes, r.stderr_bytes


def assert_same(paths, *extra) -> bytes:
    fast = dump(paths, *extra, pure=False)
    assert fast == dump(paths, *extra, pure=True), extra
    return fast[1]


def test_a_real_process_takes_the_fast_path_and_matches():
    """The environment switch as a user sets it, on a whole process."""
    outs = []
    for pure in ("0", "1"):
        env = {**os.environ, "KAFKALOG_PURE": pure}
        p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump", str(FIXTURE),
                            "--print-data"], capture_output=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout)
    assert outs[0] == outs[1] and b"payload: " in outs[0]


def test_extension_path_is_taken():
    if os.environ.get("KAFKALOG_NO_EXT"):
        pytest.skip("extension deliberately disabled")
    from kafkalog_cli.commands.dump import record_writer

    for fmt in ("jsonl", "text"):
        assert record_writer(fmt, "utf8", True) is not None
    assert record_writer("csv", "utf8", True) is None  # csv and tables build rows


@pytest.mark.parametrize("fmt", [JSONL, TEXT, []], ids=["jsonl", "text", "text-no-data"])
@pytest.mark.parametrize("payload", ["utf8", "base64", "hex"])
def test_fixture_and_filters(payload, fmt):
    for extra in ([], ["--from-offset", "100", "--to-offset", "400"], ["--key", "key-00007"],
                  ["--no-batches"]):
        assert_same(FIXTURE, *fmt, "--payload", payload, *extra)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[Path]:
    """Every codec with transactions (control batches) and idempotent sequences; null keys
    and many tombstones; magic 1 (the pure path, next to the fast one in one run)."""
    root = tmp_path_factory.mktemp("fastw")
    recipes = {
        "codecs": ["--codec", "none", "--codec", "gzip", "--codec", "snappy", "--codec", "lz4",
                   "--codec", "zstd", "--transactions", "--records", "600", "--partitions",
                   "2"],
        "nulls": ["--keys", "0", "--tombstones", "0.5", "--idempotent", "--codec", "lz4",
                  "--records", "300"],
        "magic1": ["--magic", "1", "--codec", "gzip", "--records", "200"],
    }
    out = []
    for name, args in recipes.items():
        d = root / name
        p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "generate", str(d), "--force",
                            "--topic", name, *args], capture_output=True)
        assert p.returncode == 0, p.stderr
        out.append(d)
    return out


@pytest.mark.parametrize("fmt", [JSONL, TEXT, []], ids=["jsonl", "text", "text-no-data"])
def test_codecs_transactions_nulls(generated, fmt):
    out = assert_same(generated, *fmt)
    if fmt == TEXT:  # the data the writer must get right is there
        for s in (b"endTxnMarker: ABORT", b"compresscodec: zstd", b"keySize: -1",
                  b"valueSize: -1", b"headerKeys: [trace,empty]", b"magic: 1"):
            assert s in out, s


CORPUS_DIRS = sorted(d for d in CORPUS.iterdir() if d.is_dir())


# --decode none: internal topics' records through the writer too (a decoder: the pure path)
@pytest.mark.parametrize("extra", [TEXT, [*TEXT, "--decode", "none", "--payload", "hex"]],
                         ids=["text", "text-decode-none-hex"])
def test_corpus_text(extra):
    assert_same(CORPUS_DIRS, *extra)


@pytest.mark.parametrize("name", ["nomanazeem-kraft", "volodymyrzee-zk", "seanorth-zk-snappy",
                                  "william0423-zk-2.4"])
def test_corpus_jsonl(name):
    assert_same(CORPUS / name, *JSONL)


nasty = st.one_of(st.none(), st.binary(max_size=40),
                  st.text(max_size=20).map(lambda s: s.encode("utf-8", "surrogatepass")),
                  st.sampled_from([b'"\\\n\t\x00\x1f\x7f', b"\xc3\xa9\xff\xe2\x82",
                                   "\u2028\U0001F600".encode(), b"\xed\xa0\x80\xf4\x90\x80\x80",
                                   b"\xe0\x80\xc0\xaf abcdefgh\xf0\x9f\x98"]))
header = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=10)))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(recs=st.lists(st.tuples(nasty, nasty, st.lists(header, max_size=3),
                               st.integers(-(2**40), 2**40)), min_size=1, max_size=8),
       payload=st.sampled_from(["utf8", "base64", "hex"]), topic=st.text(min_size=1, max_size=6),
       fmt=st.sampled_from([JSONL, TEXT]), log_append=st.booleans())
def test_random_batches(tmp_path_factory, recs, payload, topic, fmt, log_append):
    if "-" in topic or "/" in topic or "." in topic or "\x00" in topic or not topic.isprintable():
        topic = "t"
    pdir = tmp_path_factory.mktemp("j") / f"{topic}-3"
    pdir.mkdir()
    lat = {"timestamp_type": 1, "log_append_time": 1_700_000_000_123} if log_append else {}
    data = encode_batch([(10 + i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(recs)],
                        base_sequence=5, producer_id=1, producer_epoch=0, **lat)
    (pdir / "00000000000000000000.log").write_bytes(data)
    assert_same(pdir, *fmt, "--payload", payload)


def test_text_lines_unit():
    """records_text on its own, against text_line on the same rows (no process)."""
    pytest.importorskip("kafkalog_cli._speedups.fastcodec")
    from kafkalog_cli._speedups.fastcodec import records_text

    from kafkalog_cli.codec.model import Record
    from kafkalog_cli.commands.dump import text_line
    from kafkalog_cli.output.render import payload_encoder

    recs = [Record(-(2**63), 2**63 - 1, None, b"v\xff\n", [("h\u00e9", None), ("", b"x")], -1, 0),
            Record(0, -1, b"", None, [], 2**31 - 1, 0),
            Record(12345678901234, 0, b"\xf0\x9f\x98\x80k", b"", [], 7, 0)]
    for mode, payload in enumerate(["utf8", "base64", "hex"]):
        enc = payload_encoder(payload)
        for print_data in (True, False):
            want = b"".join(text_line({
                "kind": "record", "offset": r.offset, "timestamp": r.timestamp,
                "timestampType": "CreateTime", "key": enc(r.key), "value": enc(r.value),
                "headers": [{"key": k, "value": enc(v)} for k, v in r.headers],
                "keySize": -1 if r.key is None else len(r.key),
                "valueSize": -1 if r.value is None else len(r.value),
                "sequence": r.sequence}, print_data).encode() + b"\n" for r in recs)
            assert records_text(recs, b"CreateTime", mode, print_data) == want
    assert records_text([], b"CreateTime", 0, True) == b""


def test_writers_keep_one_buffer_safely():
    """The writers keep their buffer between calls (fastcodec's _take/_give): a call nested
    in another's records iterable, and chunks past the size kept, still give each call its
    own bytes, equal to a plain call's."""
    pytest.importorskip("kafkalog_cli._speedups.fastcodec")
    from kafkalog_cli._speedups.fastcodec import records_jsonl, records_text

    from kafkalog_cli.codec.model import Record

    small = [Record(i, 1000 + i, b"k%d" % i, b"v\xff" * i, [], i, 0) for i in range(50)]
    big = [Record(i, 0, None, bytes(range(256)) * 4096, [], -1, 0) for i in range(20)]  # 20 MiB+
    alone_text = records_text(small, b"CreateTime", 0, True)
    alone_jsonl = records_jsonl(small, b'{"kind":"record","offset":', b"CreateTime", 0)
    nested: list[bytes] = []

    def iterate():
        for r in small:
            nested.append(records_text(small, b"CreateTime", 0, True))
            nested.append(records_jsonl(small, b'{"kind":"record","offset":', b"CreateTime", 0))
            yield r

    assert records_text(iterate(), b"CreateTime", 0, True) == alone_text
    assert set(nested) == {alone_text, alone_jsonl}
    big_text = records_text(big, b"CreateTime", 0, True)
    value = big[0].value.decode("utf-8", "backslashreplace").encode()
    assert big_text == b"".join(
        b"| offset: %d CreateTime: 0 keySize: -1 valueSize: %d sequence: -1 headerKeys: [] "
        b"payload: %s\n" % (r.offset, len(r.value), value) for r in big)
    assert records_text(small, b"CreateTime", 0, True) == alone_text  # after the big one
    assert records_jsonl(small, b'{"kind":"record","offset":', b"CreateTime", 0) == alone_jsonl


# runs of 16 and more plain bytes (the writers copy those 16 at a time) next to each byte that
# ends one: a quote, a backslash, a control character, DEL, bytes of 0x80 and up, valid UTF-8
_ENDS = [b'"', b"\\", b"\x00", b"\x1f", b"\x7f", b"\x80", b"\xff", b"\xc3\xa9", b"\xf0\x9f\x98\x80",
         b"\xe2\x82"]
_runs = st.lists(st.one_of(st.sampled_from(_ENDS),
                           st.integers(0, 40).map(lambda n: bytes(range(0x20, 0x7f))[:n]),
                           st.binary(max_size=20)), max_size=10).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(values=st.lists(_runs, min_size=1, max_size=4))
def test_long_plain_runs_against_orjson_and_backslashreplace(values):
    """records_jsonl and records_text on values of long plain runs, against orjson and
    Python's backslashreplace (the references the writers' tables were made from)."""
    pytest.importorskip("kafkalog_cli._speedups.fastcodec")
    import orjson
    from kafkalog_cli._speedups.fastcodec import records_jsonl, records_text

    from kafkalog_cli.codec.model import Record

    recs = [Record(i, 5, v, v, [], -1, 0) for i, v in enumerate(values)]
    shown = [v.decode("utf-8", "backslashreplace") for v in values]
    rows = records_jsonl(recs, b'{"offset":', b'"CreateTime"', 0).splitlines()
    assert [(r["key"], r["value"]) for r in map(orjson.loads, rows)] == [(s, s) for s in shown]
    assert [orjson.dumps(orjson.loads(r)) for r in rows] == rows  # orjson's own bytes
    text = records_text(recs, b"CreateTime", 0, True).decode()
    assert text == "".join(
        f"| offset: {i} CreateTime: 5 keySize: {len(v)} valueSize: {len(v)} sequence: -1 "
        f"headerKeys: [] key: {s} payload: {s}\n"
        for i, (v, s) in enumerate(zip(values, shown, strict=True)))
