"""The measuring half of bench/results.py: alternating runs, summaries, goals, machine facts.

A figure is ours against a peer, timed in turns (ours, peer, peer, ours, ...: who goes first
alternates) so load from elsewhere falls on both alike. Its ratio is always ours/peer in
seconds: below 1 is ours faster. A goal is a bound on that ratio ("<=" or ">="), or, for a
figure with no peer (records/s, MiB, seconds), on our own median ("abs<=" or "abs>=").
"""

from __future__ import annotations

import functools
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Figure:
    section: str
    name: str
    ours: str  # what was timed, in words
    peer: str
    # the runs' values in `unit`: wall seconds unless said
    ours_s: list[float] = field(default_factory=list)
    peer_s: list[float] = field(default_factory=list)
    # ("<=", 1.1): a bound on ours/peer; ("abs<=", 0.5) or ("abs>=", 1e6): on our median
    goal: tuple[str, float] | None = None
    goal_text: str = ""  # the goal in the words, when they differ from the bound
    note: str = ""
    unit: str = "s"

    @property
    def ratio(self) -> float | None:
        if not self.peer_s:
            return None
        return statistics.median(self.ours_s) / statistics.median(self.peer_s)

    @property
    def holds(self) -> bool | None:
        return judge(self.goal, statistics.median(self.ours_s), self.ratio)

    def as_json(self) -> dict:
        return figure_json(self.section, self.name, self.ours, self.peer, summary(self.ours_s),
                           summary(self.peer_s) if self.peer_s else None, self.goal,
                           self.goal_text, self.note, self.unit)


# goals on our own median rather than the ratio ("s<=": older results.json's seconds bound)
ABSOLUTE = ("abs<=", "abs>=", "s<=")


def judge(goal: tuple[str, float] | list | None, ours: float, ratio: float | None
          ) -> bool | None:
    """Whether a goal holds: None without one. "abs" goals bound our own median (the older
    "s<=" is "abs<=" in seconds), the others ours/peer."""
    if goal is None:
        return None
    op, bound = goal
    if op in ABSOLUTE:
        value = ours
    else:
        assert ratio is not None, f"a goal on the ratio needs a peer: {goal}"
        value = ratio
    return value >= bound if op.endswith(">=") else value <= bound


def figure_json(section: str, name: str, ours: str, peer: str, ours_v: dict,
                peer_v: dict | None, goal: tuple[str, float] | list | None = None,
                goal_text: str = "", note: str = "", unit: str = "s") -> dict:
    """A figure as results.json keeps it and report.py renders it, from summaries (median,
    min, max and, when kept, the runs) of ours and the peer."""
    ratio = None if peer_v is None else ours_v["median"] / peer_v["median"]
    return {"section": section, "name": name, "ours": ours, "peer": peer, "unit": unit,
            "ours_s": ours_v, "peer_s": peer_v,
            "ratio": None if ratio is None else round(ratio, 4),
            "goal": list(goal) if goal else None, "goal_text": goal_text,
            "holds": judge(goal, ours_v["median"], ratio), "note": note}


def summary(xs: list[float]) -> dict:
    return {"median": round(statistics.median(xs), 6), "min": round(min(xs), 6),
            "max": round(max(xs), 6), "runs": [round(x, 6) for x in xs]}


def alternate(ours: Callable[[], float], peer: Callable[[], float],
              runs: int) -> tuple[list[float], list[float]]:
    """runs of each, interleaved (ours, peer, peer, ours, ...); each callable returns its
    own seconds."""
    a, b = rotate([ours, peer], runs)
    return a, b


def rotate(fns: list[Callable[[], float]], runs: int) -> list[list[float]]:
    """runs of each of fns, one of each a round, who goes first turning by one each round:
    figures compared with each other share the same rounds (a run minutes later met another
    machine: the same command's wall time moved by 20-40 % between rows of one bench)."""
    out: list[list[float]] = [[] for _ in fns]
    for i in range(runs):
        for k in range(len(fns)):
            j = (i + k) % len(fns)
            out[j].append(fns[j]())
    return out


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    """fn as a callable returning its wall seconds (in this process, after a gc)."""
    def go() -> float:
        gc.collect()
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    return go


def process(cmd: list[str], cwd: Path | None = None, check: bool = True,
            ok: tuple[int, ...] = (0, 1), cpu: int | None = None,
            cpu_s: list[float] | None = None) -> Callable[[], float]:
    """cmd as a callable returning the process's wall seconds, stdout to /dev/null; an exit
    code outside ok raises (verify exits 1 on findings, which some corpus dirs have).
    `cpu`: the process (and its children) may run on that CPU only. `cpu_s`: each run's
    CPU seconds (user and system, its workers' included) are appended to it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8"}
    pin = None if cpu is None else functools.partial(os.sched_setaffinity, 0, {cpu})

    def go() -> float:
        before = _children_cpu()
        t = time.perf_counter()
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, preexec_fn=pin)
        dt = time.perf_counter() - t
        if cpu_s is not None:
            cpu_s.append(_children_cpu() - before)
        if check and p.returncode not in ok:
            raise RuntimeError(f"{' '.join(map(str, cmd[:6]))} ... exited {p.returncode}: "
                               f"{p.stderr.decode(errors='replace')[-400:]}")
        return dt
    return go


def _children_cpu() -> float:
    """CPU seconds of the children reaped so far (a command's workers count once it reaps
    them)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def together(cmd: list[str], n: int = 2, ok: tuple[int, ...] = (0, 1)) -> Callable[[], float]:
    """n copies of cmd started at once, as a callable returning the wall seconds until the
    last ends (stdout to /dev/null): what the machine gives n busy processes."""
    return at_once([cmd] * n, ok)


def at_once(cmds: list[list[str]], ok: tuple[int, ...] = (0, 1)) -> Callable[[], float]:
    """Every one of cmds started at once, as a callable returning the wall seconds until the
    last ends (stdout to /dev/null)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8"}

    def go() -> float:
        t = time.perf_counter()
        ps = [subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL) for cmd in cmds]
        codes = [p.wait() for p in ps]
        dt = time.perf_counter() - t
        if any(c not in ok for c in codes):
            raise RuntimeError(f"{' '.join(map(str, cmds[0][:6]))} ... exited {codes}")
        return dt
    return go


def loop_alone(cmd: list[str]) -> Callable[[], float]:
    """A compute loop (bench/peers/cpu_loop.c) run alone, as a callable returning twice its
    own seconds: what one core takes for the work of two such runs (the -j 1 side)."""
    return lambda: 2 * _loop_seconds(subprocess.run(cmd, capture_output=True, text=True,
                                                    check=True).stdout)


def loop_pair(cmd: list[str]) -> Callable[[], float]:
    """Two copies of the loop started together, as a callable returning 2 / (1/t0 + 1/t1)
    from their own seconds t0, t1: the time the two cores would take for the work of two
    runs shared perfectly between them at the speeds they ran at together (the -j 2 side).
    Over loop_alone: the best -j 2 / -j 1 this host allows a CPU-bound run (0.5 for two
    independent cores)."""
    def go() -> float:
        ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate()[0] for p in ps]
        if any(p.returncode for p in ps):
            raise RuntimeError(f"{cmd[0]} exited {[p.returncode for p in ps]}")
        t0, t1 = (_loop_seconds(o) for o in outs)
        return 2 / (1 / t0 + 1 / t1)
    return go


def _loop_seconds(out: str) -> float:
    return float(json.loads(out)["seconds"])


def kl(*args: object) -> list[str]:
    return [sys.executable, "-m", "kafkalog_cli", *map(str, args)]


def warm(paths: list[Path]) -> None:
    """Read every file once: figures compare page-cache-warm runs."""
    for d in paths:
        for p in (d.rglob("*") if d.is_dir() else [d]):
            if p.is_file():
                with open(p, "rb") as f:
                    while f.read(1 << 22):
                        pass


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "ram_gib": round(ram / (1 << 30), 1), "kernel": platform.release(),
            "python": platform.python_version(), "compiled_core": _compiled()}


def _compiled() -> str:
    try:
        from kafkalog_cli._speedups import fastscan
    except ImportError:
        return "no (pure Python)"
    return f"yes (CRC tier {fastscan.crc_tier()})"
