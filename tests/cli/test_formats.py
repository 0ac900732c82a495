"""Every command that prints rows, in every --format: csv and tables carry every value the
JSON output of the same run holds (`dump --records --format csv` once printed the batch
columns only, so every record's offset, key and value was lost), and every field name is
camelCase and named under its command in docs/json.md, so the document cannot drift."""

import csv
import io
import itertools
import json
import re
import shutil
from datetime import UTC, datetime

import pytest

from kafkalog_cli.output.render import TIME_KEYS
from tests.cli.run import run
from tests.conftest import CORPUS, FIXTURE, ROOT

NOW = "1700000010000"
CAMEL = re.compile(r"[a-z][a-zA-Z0-9]*")
DEMO0 = "{s}/demo-0"

# (id, docs/json.md section, arguments): {s} the sample, {d} a damaged sample, {v} Kafka 0.7
# data, {vd} damaged 0.7 data, {c} the corpus, {out} a new dir per run
CASES = [
    ("dump-batches", "dump", ["dump", "{s}"]),
    ("dump-records", "dump", ["dump", "{s}", "--records"]),
    ("dump-records-only", "dump", ["dump", DEMO0, "--records", "--no-batches"]),
    ("dump-index", "dump", ["dump", DEMO0 + "/00000000000000000243.index"]),
    ("dump-timeindex", "dump", ["dump", DEMO0 + "/00000000000000000243.timeindex"]),
    ("dump-txnindex", "dump", ["dump", DEMO0 + "/00000000000000000000.txnindex"]),
    ("dump-snapshot", "dump", ["dump", DEMO0 + "/00000000000000000506.snapshot"]),
    ("dump-leader-epochs", "dump", ["dump", DEMO0 + "/leader-epoch-checkpoint"]),
    ("dump-partition-metadata", "dump", ["dump", DEMO0 + "/partition.metadata"]),
    ("dump-checkpoint", "dump", ["dump", "{s}/recovery-point-offset-checkpoint"]),
    ("dump-file-and-log", "dump", ["dump", DEMO0 + "/00000000000000000000.index",
                                   DEMO0 + "/00000000000000000506.log", "--records"]),
    ("dump-kraft-metadata", "dump", ["dump", "{c}/christseng-kraft", "--records"]),
    ("dump-consumer-offsets", "dump", ["dump", "{c}/metaras-zk/__consumer_offsets-3",
                                       "--records"]),
    ("dump-0.7", "dump", ["dump", "{v}", "--records"]),
    ("verify", "verify", ["verify", "{s}"]),
    ("verify-damaged", "verify", ["verify", "{d}"]),
    ("verify-0.7", "verify", ["verify", "{vd}"]),
    ("info", "info", ["info", "{s}"]),
    ("info-corpus", "info", ["info", "{c}/metaras-zk"]),
    ("info-partition", "info", ["info", DEMO0]),
    ("info-segment", "info", ["info", DEMO0 + "/00000000000000000243.log"]),
    ("info-0.7", "info", ["info", "{vd}"]),
    ("txn", "txn", ["txn", "{s}", "--all", "--now", NOW]),
    ("find-by-time", "find-by-time", ["find-by-time", "{s}", "-t", "1700000002000"]),
    ("find-by-time-earliest", "find-by-time", ["find-by-time", "{s}", "-t", "earliest"]),
    ("find-by-time-latest", "find-by-time", ["find-by-time", "{s}", "-t", "latest"]),
    ("find-by-time-max", "find-by-time", ["find-by-time", "{s}", "-t", "max-timestamp"]),
    ("find-by-time-0.7", "find-by-time", ["find-by-time", "{v}", "-t", "latest"]),
    ("recover", "recover", ["recover", "{d}", "--dry-run"]),
    ("recover-0.7", "recover", ["recover", "{vd}", "--dry-run"]),
    ("retain", "retain", ["retain", "{s}", "--dry-run", "--retention-ms", "1",
                          "--ignore-high-watermark", "--now", NOW]),
    ("compact", "compact", ["compact", "{s}", "--all", "--dry-run", "--force", "--now", NOW]),
    ("index-rebuild", "index-rebuild", ["index-rebuild", "{d}", "--dry-run"]),
    ("migrate", "migrate", ["migrate", "{v}", "{out}"]),
]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("formats")
    s, d = base / "sample", base / "damaged"
    shutil.copytree(FIXTURE, s)
    shutil.copytree(FIXTURE, d)
    with open(d / "demo-1" / "00000000000000000506.log", "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x02\x63\x00\x00\x01")  # a torn tail
    (d / "demo-0" / "00000000000000000243.index").unlink()
    for name, extra in (("v07", []), ("v07-damaged", ["--damage", "torn-tail"])):
        r = run("generate", base / name, "--format", "0.7", "--records", "30",
                "--batch-records", "4", "--codec", "none", "--codec", "gzip", *extra)
        assert r.code == 0, r.err
    return {"s": s, "d": d, "v": base / "v07", "vd": base / "v07-damaged", "c": CORPUS,
            "base": base}


_OUT = itertools.count()


def kafkalog(*args):
    """The CLI in this process (each run in its own process would cost a second of start-up
    on a loaded machine): stdout bytes and the exit code."""
    from click.testing import CliRunner

    from kafkalog_cli.cli import root

    r = CliRunner().invoke(root, [str(a) for a in args], standalone_mode=False)
    assert r.exception is None, (args, r.exception, r.stderr)
    return r.return_value or 0, r.stdout_bytes


def outputs(dirs, args):
    """The case in json, jsonl, csv and table (`--utc`: dates independent of the zone)."""
    got = {}
    for fmt in ("json", "jsonl", "csv", "table"):
        out = dirs["base"] / f"out-{next(_OUT)}"
        argv = [a.format(**{k: str(v) for k, v in dirs.items()}, out=out) for a in args]
        code, got[fmt] = kafkalog("--utc", *argv, "--format", fmt)
        assert code in (0, 4), (argv, fmt, code)
    return got


def _visible(s):
    """Tables show control characters but newline as \\xNN (a \\r would break a row)."""
    return re.sub(r"[\x00-\x09\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", s)


def _norm(v, key, table):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if table and key in TIME_KEYS and isinstance(v, int) and v >= 0:
        dt = datetime.fromtimestamp(v / 1000, UTC)
        return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return _visible(str(v)).strip() if table else str(v)


def leaves(v, key=None, table=False):
    """(field, value as csv or a table shows it) of every scalar in a JSON value."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, k, table)
    elif isinstance(v, list):
        for x in v:
            yield from leaves(x, key, table)
    elif table and isinstance(v, str) and "\n" in v:
        for line in v.split("\n"):
            yield key, _visible(line).strip()
    else:
        yield key, _norm(v, key, table)


def _cell_leaves(col, cell, table):
    """A cell: itself, and when it holds a JSON list or object (nested rows), its scalars."""
    yield col, cell
    if cell[:1] in "[{" and cell:
        try:
            parsed = json.loads(cell)
        except ValueError:
            return
        if isinstance(parsed, (list, dict)):
            yield from leaves(parsed, col, table)


def csv_pairs(text):
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    return rows, {p for r in rows for c, v in r.items() for p in _cell_leaves(c, v, False)}


def table_pairs(text):
    """(column, cell) of every table tabulate's "simple" format printed, and the headers."""
    lines = text.split("\n")
    pairs, headers = set(), set()
    i = 0
    while i + 1 < len(lines):
        if not re.fullmatch(r"-+( +-+)*", lines[i + 1].rstrip()) or not lines[i].strip():
            i += 1
            continue
        starts = [m.start() for m in re.finditer(r"-+", lines[i + 1])]
        cut = [*starts[1:], None]

        def cells(line, starts=starts, cut=cut):
            return [line[a:b].strip() for a, b in zip(starts, cut, strict=True)]
        cols = cells(lines[i])
        headers |= set(cols)
        i += 2
        while i < len(lines) and lines[i].strip():
            for c, v in zip(cols, cells(lines[i]), strict=True):
                pairs |= set(_cell_leaves(c, v, True))
            i += 1
    return headers, pairs


def _doc_fields():
    sections, name = {}, None
    for line in (ROOT / "docs" / "json.md").read_text().splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            sections[name] = set()
        elif name and (m := re.match(r"\| `(\w+)` \|", line)):
            sections[name].add(m.group(1))
    return sections


def field_names(v, parent=None):
    """Every field name in a JSON value, but inside the payloads that are Kafka's own JSON
    (a decoded record's key and value, a KRaft control record's data)."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield k
            if (parent, k) not in {("control", "data"), ("decoded", "key"),
                                   ("decoded", "value")}:
                yield from field_names(x, k)
    elif isinstance(v, list):
        for x in v:
            yield from field_names(x, parent)


@pytest.mark.parametrize(("case_id", "section", "args"), CASES, ids=[c[0] for c in CASES])
def test_every_format_carries_every_value_under_documented_names(dirs, case_id, section, args):
    out = outputs(dirs, args)
    doc = json.loads(out["json"])
    want = set(leaves(doc))
    assert want, "the case prints nothing to compare"
    # csv: every (field, value) of the JSON, as a cell of that column or inside a JSON cell
    rows, got = csv_pairs(out["csv"].decode())
    assert rows and not want - got, sorted(want - got)[:20]
    # tables: the same, dates for epoch-ms times, never a value cut
    headers, got_t = table_pairs(out["table"].decode())
    want_t = set(leaves(doc, table=True))
    assert not want_t - got_t, sorted(want_t - got_t)[:20]
    assert headers <= set(rows[0])  # tables name fields as csv does
    # jsonl: the same values, one row a line
    lines = [json.loads(x) for x in out["jsonl"].split(b"\n") if x]
    assert lines and want <= set(leaves(lines))
    # every field name camelCase, and named in docs/json.md under the command
    names = set(field_names(doc)) | set(field_names(lines))
    assert {n for n in names if not CAMEL.fullmatch(n)} == set()
    assert names - _doc_fields()[section] == set(), \
        f"not in docs/json.md under '## {section}'"


def test_every_command_that_prints_rows_is_covered_and_documented():
    from kafkalog_cli.cli import COMMANDS

    covered = {s for _i, s, _a in CASES}
    assert covered == set(COMMANDS) - {"append", "generate", "export"}
    assert covered <= set(_doc_fields())
    # every command offers every format
    for name in covered:
        help_text = kafkalog(name, "--help")[1].decode()
        assert all(f in help_text for f in ("text", "json", "jsonl", "csv", "table")), name


def test_dump_records_csv_has_every_record(sample):
    # the reported case: batches and records in one csv, every record's offset, key and value
    rows = list(csv.DictReader(io.StringIO(run("dump", sample / "demo-0", "--records",
                                               "--format", "csv").text, newline="")))
    recs = [r for r in rows if r["kind"] == "record"]
    want = [json.loads(x) for x in run("dump", sample / "demo-0", "--records", "--no-batches",
                                       "--format", "jsonl").out.split(b"\n") if x]
    assert [(r["offset"], r["key"], r["value"]) for r in recs] == \
        [(str(w["offset"]), w["key"] or "", w["value"] or "") for w in want]
    assert len(recs) == 608 and {r["isValid"] for r in rows if r["kind"] == "batch"} == {"true"}
