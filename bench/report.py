"""The writing half of bench/results.py: RESULTS.md, and the README block quoting it.

The README's <!-- bench:begin --> ... <!-- bench:end --> block is readme_block(RESULTS.md):
RESULTS.md without its title, headings one level down. tests/bench/test_results.py checks the
committed README against the committed RESULTS.md.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from measure import Figure

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
TITLE = "# Benchmark results"
HEADER = ("| figure | ours | peer | ours, s: median (min-max) | peer, s: median (min-max) "
          "| ours/peer | goal | holds |")
# the ✓/✗ column: None is a figure with no goal
MARK = {True: "✓", False: "✗", None: "—"}


def _secs(xs: list[float]) -> str:
    if not xs:
        return "—"
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def _goal(f: Figure) -> str:
    if f.goal is None:
        return "—"
    op, bound = f.goal
    if op == "s<=":
        return f"≤ {bound:g} s"
    text = f"{'≤' if op == '<=' else '≥'} {bound:g}"
    return f"{text} ({f.goal_text})" if f.goal_text else text


def row(f: Figure) -> str:
    ratio = "—" if f.ratio is None else f"{f.ratio:.2f}"
    name = f"{f.name} ({f.note})" if f.note else f.name
    return (f"| {name} | {f.ours} | {f.peer or '—'} | {_secs(f.ours_s)} | {_secs(f.peer_s)} "
            f"| {ratio} | {_goal(f)} | {MARK[f.holds]} |")


def markdown(meta: dict, sections: list[str], figures: list[Figure],
             notes: dict[str, list[str]]) -> str:
    m = meta["machine"]
    lb = " ".join(f"{x:.2f}" for x in meta["load_before"])
    la = " ".join(f"{x:.2f}" for x in meta["load_after"])
    quick = " - QUICK MODE: tiny inputs, one run, figures mean nothing" if meta["quick"] else ""
    lines = [TITLE, "",
             f"Written by `make bench` (bench/results.py) on {meta['date']} in "
             f"{meta['seconds']} s{quick}. Do not edit: the README quotes this file.", "",
             f"- Machine: {m['cpu']}, {m['cores']} cores ({m['usable_cores']} usable), "
             f"{m['ram_gib']} GiB RAM, Linux {m['kernel']}, Python {m['python']}, compiled core "
             f"{m['compiled_core']}; reference Kafka {m['kafka_ref']}",
             f"- Load average (1, 5, 15 min): {lb} before, {la} after",
             f"- {meta['runs']} run(s) of each figure, ours and the peer alternating (who goes "
             "first alternates), page cache warm. Seconds are wall time (whole processes where "
             "a command is named: start-up included); ours/peer is median over median: below "
             "1 ours is faster. A goal bounds that ratio (its words in the issue in brackets); "
             "✓ when it holds.", ""]
    for sec in sections:
        lines += [f"## {sec}", ""]
        figs = [f for f in figures if f.section == sec]
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


def figures_from(section: str, got: dict) -> list[Figure]:
    """Figures in another bench module's run() dict: a "figures" list, or the dict itself,
    each with ours_s and peer_s lists of seconds (and optionally name, ours, peer, goal as
    [op, bound], goal_text)."""
    raw = got.get("figures") or ([got] if isinstance(got.get("ours_s"), list) else [])
    out = []
    for d in raw:
        goal = d.get("goal")
        out.append(Figure(section, d.get("name", section), d.get("ours", "kafkalog"),
                          d.get("peer", ""), list(d["ours_s"]), list(d.get("peer_s") or []),
                          goal=(goal[0], float(goal[1])) if goal else None,
                          goal_text=d.get("goal_text", ""), note=d.get("note", "")))
    return out


def lines_from(got: dict) -> list[str]:
    """The rest of a run() dict, one `key: value` line each."""
    skip = {"figures", "ours_s", "peer_s", "name", "ours", "peer", "goal", "goal_text", "note"}
    out = []
    for k, v in got.items():
        if k in skip:
            continue
        if isinstance(v, dict):
            out += [f"{k} {k2}: {v2}" for k2, v2 in v.items()]
        else:
            out.append(f"{k}: {v}")
    return out
