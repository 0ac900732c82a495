"""kafkalog against the native floors (bench/peers/README.md), printed as JSON ratios.

    python bench/bench_native.py [--runs 5] [--logdir DIR]... [--corpus DIR] [--no-generate]

For every log dir (the corpus's, given ones such as a broker-written ProducerPerformance dir,
and a generated one per codec under bench/out/native-data/), alternating runs of:
  deep     `kafkalog verify DIR` (a process, one core) vs kafka-native-floor over its .log files
           (the kafka-protocol crate's RecordBatchDecoder, one core); and in this process
           check_log_file over the same files (records/s against the Rust decoder's records/s)
  shallow  `kafkalog verify --shallow DIR` vs crc32c_loop (SSE4.2, three interleaved streams)
           over the same files; and in this process check_log_file(shallow). A shallow pass
           over a dir of 32-50 MiB takes 5-15 ms, where a timer tick or a page fault is a tenth
           of the figure: both the library and the loop then pass over the files as often as
           reading SHALLOW_SAMPLE bytes takes (the loop's --repeat), and report seconds a pass
Files are read once before timing (page-cache warm). Each figure is the median of --runs with
its min and max; ratios are median over median (time ratios: lower is better for kafkalog;
records/s ratio: higher is better). A process's time includes the interpreter's start-up,
reported on its own as `startup_s` (verify of an empty dir). Peers are built by `make peers`;
a missing one is skipped with a note.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
PY = sys.executable
RUST = OUT / "rust" / "release" / "kafka-native-floor"
CRC_LOOP = OUT / "crc32c_loop"
SHALLOW_SAMPLE = 512 << 20  # bytes a shallow sample reads, in passes over a dir's files
CODEC_MB = {"none": 128, "gzip": 32, "snappy": 48, "lz4": 48, "zstd": 32}

sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from data import write_segment  # noqa: E402

from kafkalog_cli.codec import compression  # noqa: E402
from kafkalog_cli.storage.checks.check import CheckOptions, Stats, check_log_file  # noqa: E402
from kafkalog_cli.storage.checks.findings import Findings  # noqa: E402
from kafkalog_cli.storage.disk import naming  # noqa: E402


def generated_dirs() -> list[Path]:
    """One partition per codec, producer-shaped batches (bench/data.py)."""
    out = []
    for name, mb in CODEC_MB.items():
        d = OUT / "native-data" / name
        write_segment(d / "t-0" / "00000000000000000000.log", mb << 20,
                      codec=getattr(compression, name.upper()))
        out.append(d)
    return out


def log_files(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*.log") if p.is_file())


def warm(files: list[Path]) -> None:
    for p in files:
        with open(p, "rb") as f:
            while f.read(1 << 22):
                pass


def _run_json(cmd: list[str]) -> dict:
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def _process(cmd: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed kafkalog has its bytecode cached
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t


def _library(files: list[Path], shallow: bool, passes: int = 1) -> tuple[float, int]:
    """check_log_file over the files, as verify's segment pass, `passes` times: seconds a
    pass and records."""
    stats = Stats()
    f = Findings()
    opts = CheckOptions(shallow=shallow)
    gc.collect()
    t = time.perf_counter()
    for _ in range(passes):
        for p in files:
            base = naming.parse_file_name(p.name).offset if p.suffix == ".log" else 0
            check_log_file(p, base if base is not None else 0, f, opts, stats)
    return (time.perf_counter() - t) / passes, stats.records // passes


def shallow_passes(files: list[Path]) -> int:
    """Passes over `files` that read SHALLOW_SAMPLE bytes or more."""
    size = sum(p.stat().st_size for p in files)
    return max(1, -(-SHALLOW_SAMPLE // max(size, 1)))


def _summary(xs: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(xs), 6), "min": round(min(xs), 6),
            "max": round(max(xs), 6)}


def bench_dir(d: Path, runs: int) -> dict:
    files = log_files(d)
    names = [str(p) for p in files]
    warm(files)
    kl = [PY, "-m", "kafkalog_cli", "verify"]
    size = sum(p.stat().st_size for p in files)
    passes = shallow_passes(files)
    tools: dict[str, Callable[[], float]] = {
        "verify_s": lambda: _process([*kl, str(d)]),
        "verify_shallow_s": lambda: _process([*kl, "--shallow", str(d)]),
        "library_deep_s": lambda: _library(files, False)[0],
        "library_shallow_s": lambda: _library(files, True, passes)[0],
    }
    res: dict = {"dir": str(d), "files": len(files), "bytes": size, "shallow_passes": passes}
    notes = []
    if RUST.exists():
        tools["rust_s"] = lambda: _run_json([str(RUST), *names])["seconds"]
        r = _run_json([str(RUST), *names])
        res["rust_records"] = r["records"]
        res["rust_legacy_batches"] = r["legacy_batches"]
        res["rust_errors"] = r["errors"]
    else:
        notes.append("no Rust peer (make peers needs cargo): deep ratios skipped")
    if CRC_LOOP.exists():
        tools["crc_loop_s"] = lambda: _run_json(
            [str(CRC_LOOP), "--repeat", str(passes), *names])["seconds"] / passes
    else:
        notes.append("no crc32c_loop (make peers): shallow ratios skipped")
    res["library_records"] = _library(files, False)[1]
    times: dict[str, list[float]] = {k: [] for k in tools}
    order = list(tools)
    for i in range(runs):  # alternate, and rotate who goes first
        for k in order[i % len(order):] + order[:i % len(order)]:
            times[k].append(tools[k]())
    res.update({k: _summary(v) for k, v in times.items()})
    med = {k: statistics.median(v) for k, v in times.items()}
    if "rust_s" in med:
        res["verify_vs_rust"] = round(med["verify_s"] / med["rust_s"], 3)
        res["library_deep_vs_rust"] = round(med["library_deep_s"] / med["rust_s"], 3)
        if res["rust_records"] and res["library_records"] == res["rust_records"]:
            res["library_records_per_s_vs_rust"] = round(med["rust_s"] / med["library_deep_s"], 3)
    if "crc_loop_s" in med:
        res["verify_shallow_vs_crc_loop"] = round(med["verify_shallow_s"] / med["crc_loop_s"], 3)
        res["library_shallow_vs_crc_loop"] = round(
            med["library_shallow_s"] / med["crc_loop_s"], 3)
        res["library_shallow_gb_per_s"] = round(res["bytes"] / med["library_shallow_s"] / 1e9, 2)
    if notes:
        res["notes"] = notes
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--logdir", action="append", default=[], type=Path,
                    help="a log dir to measure (repeatable), e.g. a broker-written one")
    ap.add_argument("--corpus", type=Path, default=None,
                    help="a dir of log dirs (each measured, and all of them together)")
    ap.add_argument("--no-generate", action="store_true",
                    help="skip the generated per-codec dirs")
    a = ap.parse_args()
    dirs = list(a.logdir)
    if a.corpus:
        dirs += sorted(p for p in a.corpus.iterdir() if p.is_dir())
    if not a.no_generate:
        dirs += generated_dirs()
    empty = OUT / "native-empty"
    empty.mkdir(parents=True, exist_ok=True)
    startup = [_process([PY, "-m", "kafkalog_cli", "verify", str(empty)]) for _ in range(a.runs)]
    out = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "load_average": os.getloadavg(), "runs": a.runs,
           "crc_tier": _crc_tier(), "startup_s": _summary(startup),
           "dirs": [bench_dir(d, a.runs) for d in dirs]}
    print(json.dumps(out, indent=1))


def _crc_tier() -> str:
    try:
        from kafkalog_cli._speedups import fastscan
    except ImportError:
        return "none (pure Python)"
    return str(fastscan.crc_tier())


if __name__ == "__main__":
    main()
