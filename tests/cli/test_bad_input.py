"""Bad input writes nothing (issue 14 §3): every option and input field of `append` is checked
against its Kafka width (INT16/INT32/INT64, the config validators, per-codec levels, the
topic-name rule) before the first write, and refused with one line naming it; a partition dir
whose topic breaks Kafka's rule is reported and never written into a checkpoint."""

import json
import shutil

import pytest

from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.codec.checkpoint import parse_offsets
from kafkalog_cli.errors import UsageError
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.checkpoints import update_offsets
from tests.cli.run import run

USAGE = 16
INT16, INT32, INT64 = 2**15 - 1, 2**31 - 1, 2**63 - 1
GOOD = b"".join(b'{"key": "k%d", "value": "v%d"}\n' % (i % 7, i) for i in range(1000))
BASE = ["--topic", "t", "--partition", "0", "--batch-records", "10"]


def snapshot(root):
    """Every path under `root` with its bytes (None for a directory)."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def one_error(r):
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkalog: error: "), r.err
    return lines[0]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A log dir at log end 100, cleanly shut down (the issue's starting point)."""
    ld = tmp_path_factory.mktemp("bad-input") / "ld"
    r = run("append", ld, "--create", "--topic", "t", "--partition", "0", "--input-format",
            "lines", "--clean-shutdown", stdin=b"".join(b"%d\n" % i for i in range(100)))
    assert r.code == 0, r.err
    return ld


@pytest.fixture
def logdir(template, tmp_path):
    ld = tmp_path / "ld"
    shutil.copytree(template, ld)
    return ld


def refused(ld, args, stdin=GOOD):
    """Run append; it must exit 16 with one line and leave `ld` as it was, byte for byte."""
    before = snapshot(ld)
    assert naming.CLEAN_SHUTDOWN in before and naming.RECOVERY_POINT in before
    r = run("append", ld, *args, stdin=stdin)
    assert r.code == USAGE, (r.code, r.err)
    line = one_error(r)
    assert snapshot(ld) == before
    return line


@pytest.mark.parametrize(("args", "names"), [
    (["--leader-epoch", str(2**32)], ["--leader-epoch:", f"[-1, {INT32}]", "INT32"]),
    (["--leader-epoch", "-2"], ["--leader-epoch:", f"[-1, {INT32}]"]),
    (["--base-sequence", str(2**31), "--producer-id", "1"],
     ["--base-sequence:", f"[0, {INT32}]", "INT32"]),
    (["--coordinator-epoch", str(2**31), "--producer-id", "1", "--end-txn", "commit"],
     ["--coordinator-epoch:", f"[0, {INT32}]"]),
    (["--producer-id", str(2**63)], ["--producer-id:", f"[0, {INT64}]", "INT64"]),
    (["--producer-epoch", str(2**15), "--producer-id", "1"],
     ["--producer-epoch:", f"[0, {INT16}]", "INT16"]),
    (["--now", str(2**63)], ["--now:", f"[0, {INT64}]", "INT64"]),
    (["--segment-bytes", str(2**31)], ["--segment-bytes:", f"[14, {INT32}]"]),
    (["--segment-ms", str(2**63)], ["--segment-ms:", f"[1, {INT64}]"]),
    (["--segment-index-bytes", "3"], ["--segment-index-bytes:", f"[4, {INT32}]"]),
    (["--index-interval-bytes", str(2**31)], ["--index-interval-bytes:", f"[0, {INT32}]"]),
    (["--batch-records", str(2**31)], ["--batch-records:", f"[1, {INT32}]"]),
    (["--batch-bytes", str(2**31)], ["--batch-bytes:", f"[1, {INT32}]"]),
    (["--leader-epoch", "seven"], ["--leader-epoch:", "not an integer"]),
    (["--level", "99", "--codec", "gzip"], ["--level:", "[1, 9] or -1", "gzip"]),
    (["--level", "0", "--codec", "gzip"], ["--level:", "gzip"]),  # zlib's 0: not Kafka's
    (["--level", "18", "--codec", "lz4"], ["--level:", "[1, 17]", "lz4"]),
    (["--level", "23", "--codec", "zstd"], ["--level:", "[-131072, 22]", "zstd"]),
    (["--level", "-131073", "--codec", "zstd"], ["--level:", "[-131072, 22]"]),
    (["--level", str(2**20), "--codec", "zstd"], ["--level:", "[-131072, 22]", "zstd"]),
    (["--level", str(2**40), "--codec", "zstd"], ["--level:", f"[{-INT32 - 1}, {INT32}]", "INT32"]),
    (["--level", "3"], ["--level:", "none takes no compression level"]),
    (["--level", "3", "--codec", "snappy"], ["--level:", "snappy"]),
    (["--level", "99", "--codec", "gzip", "--magic", "1"], ["--level:", "gzip"]),
    (["--input-format", "lines", "--separator", ""], ["--separator:"]),
])
def test_an_option_outside_its_kafka_range_writes_nothing(logdir, args, names):
    line = refused(logdir, [*BASE, *args])
    for name in names:
        assert name in line, line


def test_partition_is_int32(logdir):
    line = refused(logdir, ["--topic", "t", "--partition", str(2**31)])
    assert "--partition:" in line and f"[0, {INT32}]" in line


@pytest.mark.parametrize(("bad", "field"), [
    ({"value": "x", "timestamp": 2**63}, "timestamp: 9223372036854775808 is out of range"),
    ({"value": "x", "timestamp": -2}, "timestamp: -2 is out of range"),
    ({"value": "x", "timestamp": True}, "timestamp:"),
    ({"value": "x", "timestamp": 1.5}, "timestamp:"),
    ({"value": "x", "timestamp": "noon"}, "timestamp:"),
    ({"value": "x", "headers": 5}, "headers:"),
    ({"value": "x", "headers": {"k": "v"}}, "headers:"),
    ({"value": "x", "headers": [{"key": 1, "value": "v"}]}, "headers:"),
    ({"value": "x", "headers": [{"key": "k", "value": 5}]}, "header value:"),
    ({"key": 5, "value": "x"}, "key:"),
    ({"value": ["x"]}, "value:"),
])
def test_a_bad_record_on_the_last_line_writes_nothing(logdir, bad, field):
    stdin = GOOD + json.dumps(bad).encode() + b"\n"
    line = refused(logdir, BASE, stdin=stdin)
    assert f"<stdin>:1001: {field}" in line, line


def test_headers_are_refused_for_magic_0_and_1(logdir):
    stdin = GOOD + b'{"value": "x", "headers": [{"key": "k", "value": "v"}]}\n'
    line = refused(logdir, [*BASE, "--magic", "1"], stdin=stdin)
    assert "<stdin>:1001: headers:" in line


@pytest.mark.parametrize("topic", ["a\nb", "a b", ".", "..", "x" * 250, "caf\u00e9", "a/b",
                                   "t\t"])
def test_a_topic_name_kafka_refuses_writes_nothing(logdir, topic):
    line = refused(logdir, ["--topic", topic, "--partition", "0"])
    assert line.startswith("kafkalog: error: --topic: "), line
    assert "\n" not in line


@pytest.mark.parametrize("topic", ["x" * 249, "a.b_c-D9", "..."])
def test_topic_names_kafka_takes_are_taken(tmp_path, topic):
    r = run("append", tmp_path / "ld", "--create", "--topic", topic, "--partition", "0",
            stdin=b'{"value": "v"}\n')
    assert r.code == 0, r.err
    assert (tmp_path / "ld" / f"{topic}-0").is_dir()
    assert run("verify", tmp_path / "ld").code == 0


@pytest.mark.parametrize(("codec", "level"), [("gzip", "-1"), ("gzip", "9"), ("lz4", "17"),
                                              ("zstd", "-131072"), ("zstd", "22")])
def test_the_edges_of_each_codecs_level_range_are_taken(logdir, codec, level):
    r = run("append", logdir, *BASE, "--codec", codec, "--level", level, stdin=GOOD)
    assert r.code == 0, r.err
    out = run("dump", logdir / "t-0", "--records", "--no-batches", "--format", "jsonl")
    values = [json.loads(x)["value"] for x in out.out.splitlines()]
    assert values[100:] == [f"v{i}" for i in range(1000)]
    assert run("verify", logdir).code == 0


def test_sequences_wrap_past_int32_as_a_producers_do(logdir):
    r = run("append", logdir, *BASE, "--producer-id", "7", "--base-sequence", str(INT32 - 14),
            stdin=GOOD[:GOOD.index(b"v30")].rsplit(b"\n", 1)[0] + b"\n")
    assert r.code == 0, r.err
    out = run("dump", logdir / "t-0", "--format", "jsonl")
    seqs = [(b["baseSequence"], b["lastSequence"]) for b in map(json.loads, out.out.splitlines())
            if b.get("kind") == "batch" and b["producerId"] == 7]
    # 30 records in batches of 10 from INT32 - 14: the second batch crosses INT32 max to 0
    assert seqs == [(INT32 - 14, INT32 - 5), (INT32 - 4, 4), (5, 14)]
    assert run("verify", logdir).code == 0


def test_offsets_past_int64_are_refused_before_the_first_write(tmp_path):
    ld = tmp_path / "ld"
    (ld / "t-0").mkdir(parents=True)
    base = INT64 - 7
    (ld / "t-0" / naming.segment_file_name(base, naming.LOG)).write_bytes(
        encode_batch([(base, 0, None, b"v", [])]))
    lines = b"".join(b"%d\n" % i for i in range(7))
    before = snapshot(ld)
    r = run("append", ld, "--topic", "t", "--partition", "0", "--input-format", "lines",
            stdin=lines)
    assert r.code == USAGE
    assert "leaves room for 6 more records" in one_error(r)
    assert {k: v for k, v in snapshot(ld).items() if k != naming.LOCK} == before
    r = run("append", ld, "--topic", "t", "--partition", "0", "--input-format", "lines",
            stdin=lines[:-2])
    assert r.code == 0, r.err
    assert f"t 0 {INT64}" in (ld / naming.RECOVERY_POINT).read_text()


def test_timestamps_at_both_ends_of_int64_are_stored_as_given(tmp_path):
    # -1 then INT64 max: a delta the record's varlong cannot hold, so they go in two batches
    stdin = b"".join(json.dumps({"value": str(t), "timestamp": t}).encode() + b"\n"
                     for t in (-1, INT64, 0, -1))
    r = run("append", tmp_path / "ld", "--create", "--topic", "t", "--partition", "0", stdin=stdin)
    assert r.code == 0, r.err
    out = run("dump", tmp_path / "ld" / "t-0", "--records", "--format", "jsonl")
    rows = [json.loads(x) for x in out.out.splitlines()]
    assert [x["timestamp"] for x in rows if x["kind"] == "record"] == [-1, INT64, 0, -1]
    assert [x["count"] for x in rows if x["kind"] == "batch"] == [1, 3]
    assert run("verify", tmp_path / "ld").code == 0


def test_lines_that_are_not_utf8_are_stored_as_they_are(tmp_path):
    r = run("append", tmp_path / "ld", "--create", "--topic", "t", "--partition", "0",
            "--input-format",
            "lines", "--separator", ":", stdin=b"a\xff\xfeb\nk\xc3:\xffv\n")
    assert r.code == 0, r.err
    out = run("dump", tmp_path / "ld" / "t-0", "--records", "--no-batches", "--format",
              "jsonl", "--payload", "hex")
    got = [(x["key"], x["value"]) for x in map(json.loads, out.out.splitlines())]
    assert got == [(None, b"a\xff\xfeb".hex()), (b"k\xc3".hex(), b"\xffv".hex())]


def test_a_bad_value_of_any_command_is_one_line_naming_the_option(sample):
    for args, name in ((["compact", sample, "--topic", "a b"], "--topic"),
                       (["find-by-time", sample, "-t", "0", "--topic", "."], "--topic"),
                       (["generate", sample / "new", "--topic", "a\nb"], "--topic"),
                       (["dump", sample, "--format", "yaml"], "--format")):
        r = run(*args)
        assert r.code == USAGE
        assert one_error(r).startswith(f"kafkalog: error: {name}: "), r.err
    assert not (sample / "new").exists()


def test_retain_refuses_a_topic_config_naming_an_illegal_topic(sample, tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"demo": {"retention.ms": 1}, "a b": {"retention.ms": 1}}))
    before = snapshot(sample)
    r = run("retain", sample, "--topic-config", cfg, "--ignore-high-watermark")
    assert r.code == USAGE
    assert "'a b'" in one_error(r)
    assert snapshot(sample) == before


def test_the_topic_rule_is_kafkas():
    legal = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    for c in map(chr, range(256)):
        assert (naming.topic_name_error(f"a{c}b") is None) == (c in legal), repr(c)
    assert naming.topic_name_error("x" * 249) is None
    assert "250 characters" in naming.topic_name_error("x" * 250)
    for bad in ("", ".", ".."):
        assert naming.topic_name_error(bad) is not None
    assert naming.topic_name_error("...") is None and naming.topic_name_error("_") is None


def test_kafka_int_types_take_their_whole_width_and_no_more():
    from kafkalog_cli.commands.options import Int16, Int32, Int64

    for t, bits in ((Int16(), 16), (Int32(), 32), (Int64(), 64)):
        lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        assert t.error(lo) is None and t.error(hi) is None
        assert f"INT{bits}" in t.error(hi + 1) and f"INT{bits}" in t.error(lo - 1)
        assert t.error(True) is not None and t.error(1.0) is not None
    assert Int32(min=-1).error(-2) == "-2 is out of range [-1, 2147483647] (INT32)"


# -- a partition dir on disk whose topic name breaks the rule ----------------------------

@pytest.fixture
def with_bad_dir(sample):
    shutil.copytree(sample / "demo-0", sample / "a b-0")
    return sample


def no_bad_topic_in_checkpoints(ld):
    for name in naming.ROOT_CHECKPOINTS:
        p = ld / name
        if p.exists():
            text = p.read_text()
            assert "a b" not in text and "\nb " not in text, (name, text)
            parse_offsets(text)  # it still parses


def test_verify_reports_a_dir_whose_topic_breaks_the_rule(with_bad_dir):
    r = run("verify", with_bad_dir, "--format", "jsonl")
    assert r.code == 4
    found = [json.loads(x) for x in r.out.splitlines()]
    bad = [f for f in found if f.get("code") == "TOPIC_NAME_ILLEGAL"]
    assert len(bad) == 1 and bad[0]["file"].endswith("a b-0") and bad[0]["severity"] == "error"
    assert not [f for f in found if f.get("code") == "TOPIC_NAME_ILLEGAL"
                and "demo" in f["file"]]


def test_no_command_writes_such_a_topic_into_a_checkpoint(with_bad_dir):
    ld = with_bad_dir
    bad_before = snapshot(ld / "a b-0")
    r = run("append", ld, "--topic", "other", "--partition", "0", stdin=b'{"value": "v"}\n')
    assert r.code == 0, r.err
    no_bad_topic_in_checkpoints(ld)
    r = run("compact", ld, "--all", "--force", "--now", "1800000000000")
    assert r.code == 4, r.err
    assert "a b-0: skipped: 'a b'" in r.text
    no_bad_topic_in_checkpoints(ld)
    r = run("retain", ld, "--retention-ms", "1", "--now", "1800000000000")
    assert r.code == 4, r.err
    assert "skipped" in r.text and "a b-0" in r.text
    no_bad_topic_in_checkpoints(ld)
    assert snapshot(ld / "a b-0") == bad_before  # skipped whole: nothing half-done
    r = run("recover", ld)
    # 1 | 4: the snapshots retain left at the new log starts go too, as a broker's load
    # deletes them (ProducerStateManager.truncateAndReload)
    assert r.code == 5, r.err
    assert "its recovery point is not written" in r.text
    no_bad_topic_in_checkpoints(ld)


def test_the_checkpoint_writer_itself_refuses_such_a_topic(tmp_path):
    cp = tmp_path / naming.RECOVERY_POINT
    update_offsets(cp, {("t", 0): 5}, fsync=False)
    before = cp.read_bytes()
    for topic in ("a b", "a\nb", "", "x" * 250):
        with pytest.raises(UsageError):
            update_offsets(cp, {(topic, 0): 1, ("t", 0): 9}, fsync=False)
        assert cp.read_bytes() == before
    update_offsets(cp, {("a b", 0): None}, fsync=False)  # dropping an entry writes no name


def test_append_writes_only_what_it_checked(tmp_path, monkeypatch, capsys):
    """append reads --input twice (check, then write): a file changed in between is refused
    before any write (8), a pipe is read once (as stdin), and the write pass never takes
    more records than the check pass counted."""
    import os

    from kafkalog_cli import cli
    from kafkalog_cli.commands import append

    inp = tmp_path / "in.jsonl"
    inp.write_text('{"value":"a"}\n{"value":"b"}\n')
    real = append.read_records
    calls = []

    def grows(src, name, *args, **kw):  # another writer adds a bad line after pass 1
        calls.append(name)
        yield from real(src, name, *args, **kw)
        if len(calls) == 1:
            with open(inp, "a") as f:
                f.write("not json\n")

    monkeypatch.setattr(append, "read_records", grows)
    ld = tmp_path / "ld"
    with pytest.raises(SystemExit) as e:
        cli.main(["append", str(ld), "--create", "--topic", "t", "--partition", "0",
                  "--input", str(inp)])
    assert e.value.code == 8 and "changed while it was being read" in capsys.readouterr().err
    assert not (ld / "t-0").exists() or not any((ld / "t-0").glob("*.log"))
    monkeypatch.setattr(append, "read_records", real)
    r, w = os.pipe()
    os.write(w, b'{"value":"x"}\n')
    os.close(w)
    with pytest.raises(SystemExit) as e:
        cli.main(["append", str(ld), "--create", "--topic", "t", "--partition", "0",
                  "--input", f"/dev/fd/{r}"])
    os.close(r)
    assert e.value.code == 0
    assert b'"value":"x"' in run("dump", ld / "t-0", "--records", "--format", "jsonl").out
