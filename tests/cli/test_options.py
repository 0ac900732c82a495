"""Every option value is checked before any work (issue 19): each option of each command,
found in the click definitions themselves, is fed values out of its Kafka range, NaN,
infinities, huge, empty, in Unicode digits and not UTF-8; each is one line naming the option
and what it takes, exit 16, and nothing is written. Every time option takes epoch ms and
ISO-8601 alike; `append` makes no log dir unless told to (--create)."""

import json
import shutil
import sys

import click
import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import COMMANDS, main, root
from kafkalog_cli.commands import options as o
from tests.conftest import FIXTURE

USAGE, OPERATIONAL = 16, 8
INT64 = 2**63 - 1
NOT_UTF8 = "\udcff"  # how Python hands over an argv byte 0xff that is not UTF-8
MUTATING = ("append", "compact", "retain", "recover", "index-rebuild")
WRITES_OUT = ("generate", "migrate", "export")  # write OUT, which must not appear

# a run each command would do with good values; the option under test is added after it
# ({s} the sample, {v} Kafka 0.7 data, {new} a path that does not exist)
BASE = {
    "append": ["{s}", "--topic", "demo", "--partition", "0"],
    "dump": ["{s}"], "verify": ["{s}"], "index-rebuild": ["{s}"], "info": ["{s}"],
    "find-by-time": ["{s}", "-t", "0"], "retain": ["{s}"], "compact": ["{s}", "--all"],
    "recover": ["{s}"], "txn": ["{s}"], "export": ["{s}", "{new}", "--to", "json"],
    "generate": ["{new}"], "migrate": ["{v}", "{new}"],
}

COMMON = ["", " ", "²", "٣", NOT_UTF8, "a" + NOT_UTF8, "1\n2"]


def bad_values(t):
    """(values, what the error line must hold) for an option of type `t`, or None."""
    if isinstance(t, o.KafkaInt):
        return ([t.low - 1, t.high + 1, 2**64, -(2**64), 10**400, "nan", "inf", "1_0", "1.5",
                 "0x10", "1e3", *COMMON], [f"[{t.low}, {t.high}]", t.kafka_type])
    if isinstance(t, o.Double):
        return ([t.low - 1, t.high + 1, "nan", "NaN", "inf", "-inf", "1e400", "1_0", "0x1p0",
                 *COMMON], [f"[{t.low:g}, {t.high:g}]", "finite"])
    if isinstance(t, o.Time):
        return ([-1, INT64 + 1, 2**64, "nan", "2024-01-01T00:00:00", "1969-12-31T23:59:59Z",
                 "\uff12\uff10\uff12\uff14-01-01T00:00:00Z", "tomorrow", *COMMON],
                [f"epoch ms in [0, {INT64}]", "ISO-8601", *t.specials])
    if isinstance(t, o.TopicName):
        return ["", ".", "..", "a b", "x" * 250, "caf\u00e9", "a/b", NOT_UTF8, "a\n"], ["topic"]
    if isinstance(t, o.Text):
        return [NOT_UTF8, "host" + NOT_UTF8 + ":9092"], ["not valid UTF-8"]
    if isinstance(t, click.Choice):
        return ["", "nope", "²", NOT_UTF8], [repr(c) for c in t.choices]
    return None


def params():
    ctx = click.Context(root)
    for name in COMMANDS:
        for p in root.get_command(ctx, name).params:
            if not (isinstance(p, click.Option) and p.is_flag):
                yield name, p


def opt_name(p):
    return max(p.opts, key=len)


CASES = [pytest.param(name, p, id=f"{name} {opt_name(p)}") for name, p in params()
         if isinstance(p, click.Option) and bad_values(p.type) is not None]


def kafkalog(*args, stdin=b""):
    """The CLI in this process, as the console script runs it (main()): exit code, stdout,
    stderr. A process per run would cost a second of start-up each."""
    code = None
    with CliRunner().isolation(input=stdin) as (out, err, _):
        try:
            main([a if isinstance(a, str) else str(a) for a in args])
        except SystemExit as e:
            code = e.code
        sys.stdout.flush()
        sys.stderr.flush()
    return code, out.getvalue(), err.getvalue().decode("utf-8", "replace")


def snapshot(root_):
    return {str(p.relative_to(root_)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root_.rglob("*"))}


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("options")
    shutil.copytree(FIXTURE, base / "s")
    code, _, err = kafkalog("generate", base / "v", "--format", "0.7", "--records", "20")
    assert code == 0, err
    return {"s": base / "s", "v": base / "v", "new": base / "new"}


def fill(args, dirs):
    return [a.format(**{k: str(v) for k, v in dirs.items()}) for a in args]


@pytest.mark.parametrize(("name", "param"), CASES)
def test_a_bad_value_is_one_line_naming_the_option_and_what_it_takes(dirs, name, param):
    values, wanted = bad_values(param.type)
    before = snapshot(dirs["s"])
    failures = []
    for value in values:
        code, out, err = kafkalog(name, *fill(BASE[name], dirs), opt_name(param), value)
        lines = err.strip().splitlines()
        ok = (code == USAGE and len(lines) == 1 and out == b""
              and lines[0].startswith(f"kafkalog: error: {opt_name(param)}: ")
              and all(w in lines[0] for w in wanted) and "internal error" not in lines[0])
        if not ok:
            failures.append((value, code, err))
        if name in MUTATING:
            assert snapshot(dirs["s"]) == before, (value, "changed the log dir")
        assert not dirs["new"].exists(), (value, "made OUT")
    assert not failures, failures


def test_every_option_has_a_type_that_checks_it():
    """No option takes a bare int, float or string any more: each goes through the one
    place (commands/options.py), or is a path, a choice or a flag."""
    checked = (o.KafkaInt, o.Double, o.Time, o.TopicName, o.Text, o.Bytes, click.Choice,
               click.Path)
    loose = [f"{name} {p.name}: {type(p.type).__name__}" for name, p in params()
             if not isinstance(p.type, checked)]
    assert not loose
    assert len(CASES) > 80  # the walk found the options (append alone has 20)


@pytest.mark.parametrize(("name", "param"), CASES)
def test_the_edges_of_each_range_are_taken(name, param):
    t = param.type
    if isinstance(t, o.KafkaInt):
        assert t.convert(str(t.low), param, None) == t.low
        assert t.convert(str(t.high), param, None) == t.high
        assert t.convert(f"+{t.high}", param, None) == t.high
    elif isinstance(t, o.Double):
        assert t.convert(f"{t.low:g}", param, None) == t.low
        assert t.convert(f"{t.high:g}", param, None) == t.high
        assert t.convert(".5e0", param, None) == 0.5
    elif isinstance(t, o.Time):
        assert t.convert("0", param, None) == 0
        assert t.convert(str(INT64), param, None) == INT64
        assert t.convert("1970-01-01T00:00:00Z", param, None) == 0
        for special in t.specials:
            assert t.convert(special, param, None) == special


# -- time options: epoch ms and ISO-8601 alike, in every command ---------------------------

T = 1700000003123  # inside the sample's timestamps
SAME_TIMES = [str(T), "2023-11-14T22:13:23.123Z", "2023-11-15T00:13:23.123+02:00",
              "2023-11-14T22:13:23.123z"]
TIME_RUNS = {
    ("append", "--now"): ["append", "{s}", "--topic", "demo", "--partition", "0",
                          "--timestamp-type", "log-append"],
    ("compact", "--now"): ["compact", "{s}", "--all", "--force", "--no-quarantine",
                           "--delete-retention-ms", "1000", "--format", "json"],
    ("retain", "--now"): ["retain", "{s}", "--retention-ms", "2000", "--ignore-high-watermark",
                          "--no-quarantine", "--format", "json"],
    ("dump", "--from-time"): ["dump", "{s}", "--records", "--format", "jsonl"],
    ("dump", "--to-time"): ["dump", "{s}", "--records", "--format", "jsonl"],
    ("find-by-time", "--timestamp"): ["find-by-time", "{s}", "--format", "json"],
    ("txn", "--now"): ["txn", "{s}", "--all", "--format", "json"],
    ("migrate", "--timestamp"): ["migrate", "{v}", "{new}"],
}
TIME_OPTIONS = [(name, opt_name(p)) for name, p in params() if isinstance(p.type, o.Time)]


def test_every_time_option_has_a_run_below():
    assert sorted(TIME_RUNS) == sorted(TIME_OPTIONS)


@pytest.mark.parametrize(("name", "opt"), sorted(TIME_RUNS))
def test_epoch_ms_and_iso_8601_are_the_same_time(dirs, tmp_path, name, opt):
    """The same run with the time in each form gives the same output and the same files."""
    got = []
    for when in SAME_TIMES:
        run_dirs = {"s": tmp_path / "s", "v": dirs["v"], "new": tmp_path / "new"}
        shutil.rmtree(run_dirs["s"], ignore_errors=True)
        shutil.rmtree(run_dirs["new"], ignore_errors=True)
        shutil.copytree(FIXTURE, run_dirs["s"])
        code, out, err = kafkalog(*fill(TIME_RUNS[name, opt], run_dirs), opt, when,
                                  stdin=b'{"value": "v"}\n')
        assert code in (0, 4), (when, err)
        written = run_dirs["new"] if name == "migrate" else run_dirs["s"]
        files = {k: v for k, v in snapshot(written).items()  # a new topic id is random
                 if not k.endswith("partition.metadata")}
        got.append((code, out, files))
    assert all(g == got[0] for g in got[1:])
    if name == "find-by-time":
        assert f'"targetTimestamp":{T}'.encode() in got[0][1]


def test_retain_now_takes_iso_8601_as_txn_does(sample):
    """The issue's example: `retain --now 2024-01-01T00:00:00Z` was refused."""
    code, out, err = kafkalog("retain", sample, "--now", "2024-01-01T00:00:00Z",
                              "--retention-ms", "1", "--dry-run", "--ignore-high-watermark",
                              "--format", "json")
    assert code == 4, err  # a dry run that would delete (2024 is after every batch)
    assert json.loads(out)["now"] == 1704067200000


# -- bytes options: the argument's bytes, UTF-8 or not --------------------------------------

def test_key_and_separator_take_bytes_that_are_not_utf8(tmp_path):
    ld = tmp_path / "ld"
    code, _, err = kafkalog("append", ld, "--create", "--topic", "t", "--partition", "0",
                            "--input-format", "lines", "--separator", "\udcfe",
                            stdin=b"k\xff\xfev1\nk\xfev2\n")
    assert code == 0, err
    code, out, err = kafkalog("dump", ld / "t-0", "--key", "k" + NOT_UTF8, "--no-batches",
                              "--format", "jsonl", "--payload", "hex")
    assert code == 0, err
    rows = [json.loads(x) for x in out.splitlines()]
    assert [(r["key"], r["value"]) for r in rows] == [(b"k\xff".hex(), b"v1".hex())]


# -- retain --topic-config: every value checked as Kafka checks it ---------------------------

@pytest.mark.parametrize(("settings", "wanted"), [
    ({"retention.ms": -5}, "retention.ms: -5 is out of range [-1, "),
    ({"retention.ms": "soon"}, "retention.ms: 'soon' is not an integer"),
    ({"retention.ms": "٣"}, "retention.ms: '٣' is not an integer"),
    ({"retention.ms": 1.5}, "retention.ms: 1.5 is not an integer"),
    ({"retention.ms": True}, "retention.ms: True is not an integer"),
    ({"retention.ms": None}, "retention.ms: None is not an integer"),
    ({"retention.ms": 2**63}, f"retention.ms: {2**63} is out of range [-1, {INT64}]"),
    ({"retention.bytes": -2}, "retention.bytes: -2 is out of range [-1, "),
    ({"cleanup.policy": "remove"}, "cleanup.policy: 'remove' is not one of compact, delete"),
    ({"cleanup.policy": "compact,"}, "cleanup.policy: '' is not one of compact, delete"),
    ({"cleanup.policy": 5}, "cleanup.policy: 5 is not a list"),
    ({"retention.msec": 5}, "retention.msec: not a setting retain applies"),
])
def test_a_topic_config_value_kafka_refuses_writes_nothing(sample, tmp_path, settings, wanted):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"demo": settings}))
    before = snapshot(sample)
    code, out, err = kafkalog("retain", sample, "--topic-config", cfg, "--retention-ms", "1",
                              "--ignore-high-watermark", "--now", T)
    lines = err.strip().splitlines()
    assert code == USAGE and len(lines) == 1, err
    assert lines[0].startswith(f"kafkalog: error: {cfg}: demo: {wanted}"), lines[0]
    assert snapshot(sample) == before and out == b""


@pytest.mark.parametrize(("settings", "deletes"), [
    ({"retention.ms": "1000"}, True),  # Kafka's own text form
    ({"retention.ms": 1000}, True),
    ({"retention.ms": -1}, False),
    ({"retention.ms": 1000, "cleanup.policy": "compact,delete"}, True),
    ({"retention.ms": 1000, "cleanup.policy": ["delete", "compact"]}, True),
    ({"retention.ms": 1000, "cleanup.policy": "compact"}, False),
    ({"retention.ms": 1000, "cleanup.policy": ""}, False),  # an empty LIST: neither
])
def test_topic_config_values_kafka_takes_are_applied(sample, tmp_path, settings, deletes):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"demo": settings}))
    code, out, err = kafkalog("retain", sample, "--topic-config", cfg, "--dry-run",
                              "--ignore-high-watermark", "--now", T + 86_400_000, "--format",
                              "json")
    demo = [p for p in json.loads(out)["partitions"] if p["topic"] == "demo"]
    assert len(demo) == 2
    assert any(p["deleted"] for p in demo) == deletes
    assert code == (4 if any(p["deleted"] or p["rolled"] is not None or p["logStartOffset"]
                             is not None for p in json.loads(out)["partitions"]) else 0), err


# -- cross-option checks, before any work -----------------------------------------------------

@pytest.mark.parametrize(("args", "wanted"), [
    (["--topic", "demo", "--all"], "--topic and --all"),
    (["--all", "--dedupe-buffer-size", "48", "--load-factor", "0.5"], "fewer than 2 keys"),
    (["--all", "--now", str(INT64), "--delete-retention-ms", "1"], "INT64 delete horizon"),
])
def test_compact_refuses_options_that_cannot_go_together(sample, args, wanted):
    before = snapshot(sample)
    code, out, err = kafkalog("compact", sample, "--force", *args)
    lines = err.strip().splitlines()
    assert code == USAGE and len(lines) == 1 and wanted in lines[0], err
    assert snapshot(sample) == before and out == b""


# -- append makes a log dir only when told to -------------------------------------------------

def test_append_to_a_log_dir_that_does_not_exist_creates_nothing(tmp_path):
    ld = tmp_path / "typo" / "ld"
    code, out, err = kafkalog("append", ld, "--topic", "t", "--partition", "0",
                              stdin=b'{"value": "v"}\n')
    lines = err.strip().splitlines()
    assert code == OPERATIONAL and len(lines) == 1 and out == b"", err
    assert str(ld) in lines[0] and "--create" in lines[0]
    assert not (tmp_path / "typo").exists()


def test_append_create_makes_the_log_dir(tmp_path):
    ld = tmp_path / "new" / "ld"
    code, _, err = kafkalog("append", ld, "--create", "--topic", "t", "--partition", "0",
                            stdin=b'{"value": "v"}\n')
    assert code == 0, err
    assert (ld / "t-0").is_dir()
    code, _, err = kafkalog("verify", ld)
    assert code == 0, err


# -- export -o: the Spark source's own options, with the same widths ---------------------------

@pytest.mark.parametrize(("opts", "wanted"), [
    ({"minPartitions": "٣"}, "option minPartitions: expected an integer"),
    ({"minPartitions": "1_0"}, "option minPartitions: expected an integer"),
    ({"minPartitions": str(2**31)}, f"option minPartitions: {2**31} is out of range [1, "),
    ({"startingTimestamp": str(2**63)}, f"out of range [0, {INT64}]"),
    ({"startingTimestamp": "-1"}, "option startingTimestamp: -1 is out of range"),
    ({"startingOffsets": '{"demo": {"0": 1e30}}'}, "expected an integer"),
    ({"startingOffsets": '{"demo": {"0": true}}'}, "expected an integer"),
    ({"startingOffsets": '{"demo": {"4294967296": 0}}'}, "4294967296 is out of range [0, "),
    ({"assign": '{"demo": [-1]}'}, "option assign: -1 is out of range"),
    ({"maxDecompressedBytes": "0"}, "option maxDecompressedBytes: 0 is out of range [1, "),
])
def test_spark_source_options_take_ascii_integers_of_kafkas_widths(opts, wanted):
    from kafkalog_cli.spark.options import OptionError, parse

    with pytest.raises(OptionError) as e:
        parse({"path": str(FIXTURE), **opts})
    assert wanted in str(e.value)


def test_times_are_shown_to_the_exact_millisecond():
    """Shown times come from integer ms: a float (ms / 1000) rounded 9999-12-31T23:59:59.999
    down to .998; past year 9999 (or its local time) the epoch ms are shown as they are."""
    from kafkalog_cli.output.console import _iso

    for ms in (0, 1, 999, 1_700_000_000_123, 253_402_300_799_999):
        shown = _iso(ms, True, ("UTC", "UTC"))
        assert shown.endswith(f".{ms % 1000:03d}Z"), shown
    assert _iso(253_402_300_799_999, True, ("UTC", "UTC")) == "9999-12-31T23:59:59.999Z"
    assert _iso(253_402_300_800_000, True, ("UTC", "UTC")) == "253402300800000"
