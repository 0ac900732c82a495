"""The sections other bench modules measure, as bench/RESULTS.md's table figures.

Each function takes a module's result dict (bench_textdump.run, bench_compact.run,
bench_hostile.run, bench_spark.bench) and gives (notes, figures): a few context lines and
figures in results.json's form (measure.figure_json). Every number comes from that dict.
`upgrade` does the same for a results.json written before these sections were tables (the
hostile and Spark results were kept only as text lines then, the Spark ones as best of runs).
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from measure import figure_json

TEXTDUMP = "Text dump vs kafka-dump-log --print-data-log"
COMPACT = "Compaction, 1 M keys"
HOSTILE = "Hostile inputs"
SPARK = "Spark data source"
MiB = 1 << 20

Tables = tuple[list[str], list[dict]]


def _load(before: list[float], after: list[float]) -> str:
    show = " ".join
    return (f"load average (1, 5, 15 min): {show(f'{x:.2f}' for x in before)} before, "
            f"{show(f'{x:.2f}' for x in after)} after")


def _spread(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "runs": xs}


def textdump(got: dict) -> Tables:
    seg = Path(got["input"])
    mib = got["bytes"] / MiB
    notes = [f"what: {got['what']}",
             f"data: {seg.parent.parent.name}/{seg.parent.name}/{seg.name}, {mib:.1f} MiB, "
             f"{got['records']:,} records; kafka-dump-log of Kafka {got['kafka_version']}",
             f"{got['runs']} runs of each, Kafka's first every time; " +
             _load(got["loadavg_before"], got["loadavg_after"])]
    fig = figure_json(TEXTDUMP, f"dump --records --print-data ({mib:.0f} MiB segment)",
                      "kafkalog", "kafka-dump-log --deep-iteration --print-data-log",
                      got["kafkalog_s"], got["kafka_dump_log_s"], ("<=", got["goal"]))
    return notes, [fig]


def compact(got: dict) -> Tables:
    ours = f"kafkalog compact ({'compiled' if got['compiled'] else 'pure-Python'} cleaner)"
    notes = [f"data: one segment of {got['records']:,} records of {got['keys']:,} keys; each "
             "run compacts a fresh copy in a child process (the whole command: start-up, "
             "offset map, rewrite, index rebuild, fsyncs); no peer runs here, the goals are "
             "absolute",
             f"{got['runs']} runs; " + _load(got["load_average_before"],
                                              got["load_average_after"])]
    figs = [figure_json(COMPACT, "records/s (wall)", ours, "", got["records_per_s"], None,
                        ("abs>=", got["goal_records_per_s"]), unit="records/s"),
            figure_json(COMPACT, "records per CPU-second", ours, "", got["records_per_cpu_s"],
                        None, unit="records/s"),
            figure_json(COMPACT, f"peak RSS above baseline, {got['keys'] / 1e6:g} M keys", ours,
                        "", got["above_baseline_mib"], None,
                        ("abs<=", got["goal_above_baseline_mib"]),
                        note="baseline: `compact --help`'s peak RSS, median "
                             f"{got['baseline_rss_mib']['median']:.1f} MiB", unit="MiB")]
    return notes, figs


def hostile(got: dict) -> Tables:
    notes = ["one run of each command, in a process of its own (tests/faults/hostile.py's "
             "inputs at the sizes issue 14 reported); the figure is its peak RSS"]
    figs = []
    for r in got["runs"]:
        v = r["peak_rss_mib"]
        figs.append(figure_json(
            HOSTILE, f"{r['input']} ({r['size_mib']:.1f} MiB on disk): {r['command']}",
            "kafkalog", "", {"median": v, "min": v, "max": v, "runs": [v]}, None,
            ("abs<=", got["bound_mib"]), got["goal_text"],
            note=f"CPU {r['cpu_s']:.2f} s, exit {r['exit']}", unit="MiB"))
    return notes, figs


def spark(got: dict) -> Tables:
    if "local1_s" in got:
        one, two, core, dump = (_spread(got[k]) for k in
                                ("local1_s", "local2_s", "one_core_s", "dump_s"))
        data = (f"data: {got['partitions']} partitions of one {got['mb']} MiB uncompressed "
                f"segment, {got['records']:,} records; {len(got['local1_s'])} timed reads a "
                f"Spark run, {len(got['dump_s'])} CLI dumps")
    else:  # an older run: the best of each, as records/s
        n = got["records"]
        one, two, core, dump = ({"median": n / got[k], "best_of": of} for k, of in
                                (("local1_rps", 3), ("local2_rps", 3), ("one_core_rps", 3),
                                 ("dump_rps", 2)))
        data = f"data: {n:,} records in uncompressed segments"
    notes = [data + "; each Spark run a fresh process, its reads timed after the JIT settles "
             f"(up to {got['settle_reads']} reads), every column through the `noop` sink",
             f"CPU: local[1] keeps {got['local1_cores']:.2f} cores busy (the JVM task thread "
             f"and its Python worker side by side), local[2] {got['local2_cores']:.2f}; "
             f"{got['cpu_us_per_record_1']:.2f} vs {got['cpu_us_per_record_2']:.2f} "
             f"CPU-µs/record; first action incl. worker start-up {got['warmup_s']:.1f} s; "
             f"load average {got['load_avg']:.1f} at the end"]
    cli = "kafkalog dump --records --format jsonl, one CPU"
    # The scaling goal (1 core -> 2) is judged against local[1] confined to one CPU: unpinned,
    # local[1] already keeps more than one core busy (the line above), so it is not 1 core.
    figs = [figure_json(SPARK, "full read, local[2] vs local[1]", "local[2]", "local[1]",
                        two, one),
            figure_json(SPARK, "full read, local[2] vs local[1] pinned to one CPU", "local[2]",
                        "local[1], one CPU", two, core, ("<=", round(1 / 1.7, 3)),
                        "≥ 1.7x faster"),
            figure_json(SPARK, "full read, local[1] vs the CLI", "local[1]", cli, one, dump),
            figure_json(SPARK, "full read, local[2] vs the CLI", "local[2]", cli, two, dump)]
    return notes, figs


_HOSTILE_LINE = re.compile(r"^(?P<input>.+?) \((?P<size>[\d.]+) MiB on disk\): (?P<command>.+): "
                           r"peak RSS (?P<rss>[\d.]+) MiB, CPU (?P<cpu>[\d.]+) s, "
                           r"exit (?P<exit>-?\d+)")
_SPARK_LINE = re.compile(
    r"^(?P<records>[\d,]+) records: local\[1\] (?P<local1_rps>[\d,]+) rec/s, local\[2\] "
    r"(?P<local2_rps>[\d,]+) rec/s .*?confined to one CPU (?P<one_core_rps>[\d,]+) rec/s .*?"
    r"on one core (?P<dump_rps>[\d,]+) rec/s .*?local\[1\] keeps (?P<local1_cores>[\d.]+) "
    r"cores busy .*?local\[2\] (?P<local2_cores>[\d.]+); (?P<cpu_us_per_record_1>[\d.]+) vs "
    r"(?P<cpu_us_per_record_2>[\d.]+) CPU-us/record; .*?load average (?P<load_avg>[\d.]+) at "
    r"the end \(first action incl\. worker start-up (?P<warmup_s>[\d.]+)s; timed after up to "
    r"(?P<settle_reads>\d+) reads")


def _old_hostile(lines: list[str]) -> dict | None:
    bound = next((re.search(r"peak RSS <= ([\d.]+) MiB", s) for s in lines
                  if s.startswith("bound:")), None)
    runs = [m.groupdict() for m in map(_HOSTILE_LINE.match, lines) if m]
    if bound is None or not runs:
        return None
    for r in runs:
        r.update(size_mib=float(r.pop("size")), peak_rss_mib=float(r.pop("rss")),
                 cpu_s=float(r.pop("cpu")), exit=int(r["exit"]))
    return {"bound_mib": float(bound.group(1)), "goal_text": "2 x cap + 64 MiB", "runs": runs}


def _old_spark(lines: list[str]) -> dict | None:
    m = next(filter(None, map(_SPARK_LINE.match, lines)), None)
    if m is None:
        return None
    return {k: (int(v.replace(",", "")) if k in ("records", "settle_reads") else
                float(v.replace(",", ""))) for k, v in m.groupdict().items()}


def upgrade(raw: dict) -> dict:
    """A results.json from before these sections were tables, with their figures added and
    their text lines replaced by the tables' notes ("not measured" lines stay)."""
    extra = raw.get("extra", {})
    notes = raw["notes"]
    have = {f["section"] for f in raw["figures"]}
    got = {TEXTDUMP: (textdump, extra.get("bench_textdump")),
           COMPACT: (compact, extra.get("bench_compact")),
           HOSTILE: (hostile, _old_hostile(notes.get(HOSTILE, []))),
           SPARK: (spark, _old_spark(notes.get(SPARK, [])))}
    figures, new_notes = list(raw["figures"]), dict(notes)
    for sec, (fn, result) in got.items():
        if sec in have or result is None:
            continue
        lines, figs = fn(result)
        figures += figs
        new_notes[sec] = [n for n in notes.get(sec, []) if n.startswith("not measured")] + lines
    return {**raw, "figures": figures, "notes": new_notes}
