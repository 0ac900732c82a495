"""The writing half of bench/results.py: RESULTS.md, and the README block quoting it.

The README's <!-- bench:begin --> ... <!-- bench:end --> block is readme_block(RESULTS.md):
RESULTS.md without its title, headings one level down. tests/bench/test_results.py checks the
committed README against the committed RESULTS.md.
"""

from __future__ import annotations

import re
from pathlib import Path

from measure import ABSOLUTE, judge

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
TITLE = "# Benchmark results"
HEADER = ("| figure | ours | peer | ours: median (min-max) | peer: median (min-max) "
          "| ours/peer | goal | holds |")
# the ✓/✗ column: None is a figure with no goal
MARK = {True: "✓", False: "✗", None: "—"}


def _num(v: float, unit: str) -> str:
    if unit in ("s", "CPU-s"):
        return f"{v:.3f}"
    if unit == "records/s":
        return f"{v:,.0f}"
    return f"{v:.1f}" if unit == "MiB" else f"{v:g}"


def _cell(v: dict | None, unit: str) -> str:
    """A summary as median (min-max), or (1 run); seconds bare, other units named after the
    median."""
    if v is None:
        return "—"
    med = _num(v["median"], unit) + ("" if unit == "s" else f" {unit}")
    if "best_of" in v:  # an older run kept only the best
        return f"{med} (best of {v['best_of']})"
    if len(v.get("runs") or ()) == 1:
        return f"{med} (1 run)"
    return f"{med} ({_num(v['min'], unit)}-{_num(v['max'], unit)})"


def ratio(f: dict) -> float | None:
    return None if f["peer_s"] is None else f["ours_s"]["median"] / f["peer_s"]["median"]


def holds(f: dict) -> bool | None:
    return judge(f["goal"], f["ours_s"]["median"], ratio(f))


def goal(f: dict) -> str:
    if f["goal"] is None:
        return "—"
    op, bound = f["goal"]
    sign = "≥" if op.endswith(">=") else "≤"
    if op == "s<=":  # older results.json: the bound in seconds is the words
        return f"{sign} {bound:g} s"
    # 1,000,000 records/s; 0.556
    text = f"{sign} {bound:,.0f}" if bound >= 10_000 else f"{sign} {bound:g}"
    if op in ABSOLUTE:
        text += f" {f.get('unit', 's')}"
    return f"{text} ({f['goal_text']})" if f["goal_text"] else text


def row(f: dict) -> str:
    unit = f.get("unit", "s")
    r = ratio(f)
    name = f"{f['name']} ({f['note']})" if f["note"] else f["name"]
    return (f"| {name} | {f['ours']} | {f['peer'] or '—'} | {_cell(f['ours_s'], unit)} "
            f"| {_cell(f['peer_s'], unit)} | {'—' if r is None else f'{r:.2f}'} | {goal(f)} "
            f"| {MARK[holds(f)]} |")


def _value(f: dict) -> str:
    """What a goal was judged on: the ratio, or our median with its unit."""
    if f["goal"][0] in ABSOLUTE:
        unit = f.get("unit", "s")
        return f"{_num(f['ours_s']['median'], unit)} {unit}"
    return f"{ratio(f):.2f}"


def goals_summary(sections: list[str], figures: list[dict]) -> list[str]:
    """The goals that hold out of those measured, and the ones that do not."""
    judged = [f for f in figures if f["goal"] is not None]
    missed = [f for f in judged if not holds(f)]
    lines = [f"**Goals: {len(judged) - len(missed)} of {len(judged)} hold**" +
             (", these do not:" if missed else ".")]
    lines += [f"- {f['section']}: {f['name']}: {_value(f)}, goal {goal(f)}" for f in missed]
    bare = [s for s in sections if not any(f["section"] == s for f in figures)]
    if bare:
        lines += ["", "Not measured in this run (no figures): " + "; ".join(bare) + "."]
    return [*lines, ""]


def markdown(raw: dict, sections: list[str]) -> str:
    """RESULTS.md from a results dict as results.json keeps it (bench/results.py writes both;
    --render-only FILE renders a saved one)."""
    m = raw["machine"]
    figures: list[dict] = raw["figures"]
    notes: dict[str, list[str]] = raw["notes"]
    lb = " ".join(f"{x:.2f}" for x in raw["load_before"])
    la = " ".join(f"{x:.2f}" for x in raw["load_after"])
    quick = " - QUICK MODE: tiny inputs, one run, figures mean nothing" if raw["quick"] else ""
    lines = [TITLE, "",
             f"Written by `make bench` (bench/results.py) on {raw['date']} in "
             f"{raw['seconds']} s{quick}. Do not edit: the README quotes this file.", "",
             f"- Machine: {m['cpu']}, {m['cores']} cores ({m['usable_cores']} usable), "
             f"{m['ram_gib']} GiB RAM, Linux {m['kernel']}, Python {m['python']}, compiled core "
             f"{m['compiled_core']}; reference Kafka {m['kafka_ref']}",
             f"- Load average (1, 5, 15 min): {lb} before, {la} after",
             f"- {raw['runs']} run(s) of each figure, ours and the peer alternating (who goes "
             "first alternates), page cache warm, unless its section says otherwise. Values are "
             "wall seconds unless a unit follows them (whole processes where a command is "
             "named: start-up included); ours/peer is median over median: below 1 ours is "
             "faster. A goal bounds that ratio, or our own median where there is no peer (its "
             "words in the issue in brackets); ✓ when it holds.", "",
             *goals_summary(sections, figures)]
    for sec in sections:
        lines += [f"## {sec}", ""]
        figs = [f for f in figures if f["section"] == sec]
        for n in notes.get(sec, []):
            lines.append(f"- {n}")
        if notes.get(sec):
            lines.append("")
        if figs:
            lines += [HEADER, "|" + "---|" * 8, *map(row, figs), ""]
    return "\n".join(lines).rstrip() + "\n"


def readme_block(results: str) -> str:
    """RESULTS.md as the README quotes it: no title, headings one level down."""
    body = results.split("\n", 1)[1] if results.startswith(TITLE) else results
    return re.sub(r"^(#+) ", r"#\1 ", body.strip("\n"), flags=re.M)


def readme_current(readme: str) -> str | None:
    m = re.search(re.escape(BEGIN) + r"\n(.*?)\n?" + re.escape(END), readme, re.S)
    return None if m is None else m.group(1)


def update_readme(path: Path, results: str) -> None:
    text = path.read_text()
    if readme_current(text) is None:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} block to rewrite")
    new = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END),
                 lambda _: f"{BEGIN}\n{readme_block(results)}\n{END}", text, flags=re.S)
    path.write_text(new)
