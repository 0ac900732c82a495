"""The inputs of bench/results.py, made once under its work dir and reused.

Broker-written where there is a broker to write them (the corpora, and a log dir the reference
broker fills through kafka-python, as bench/conformance_bench.py does); generated otherwise
(bench/data.py's producer-shaped batches, one partition per codec, and `kafkalog generate`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from data import write_segment
from measure import ROOT, kl

from kafkalog_cli.codec import compression

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# MiB per codec, full size: about one second of deep verify each on 2 cores
CODEC_MB = {"none": 128, "gzip": 32, "snappy": 48, "lz4": 48, "zstd": 32}
MIX = "none:2,lz4:1,zstd:1,gzip:0.5,snappy:0.5"


def corpus_dirs(quick: bool) -> list[Path]:
    """Broker-written log dirs: the shared corpus and the reference brokers' corpora."""
    ref = _ref_dir()
    dirs = sorted(ref.glob("corpus-*/logs")) if ref is not None else []
    shared = ROOT.parent / "shared" / "corpus"
    if shared.is_dir():
        dirs += sorted(p for p in shared.iterdir() if p.is_dir())
    return dirs[:1] if quick else dirs


def _ref_dir() -> Path | None:
    d = Path(os.environ.get("KAFKALOG_KAFKA_REF") or ROOT / ".kafka-ref")
    return d if (d / "kafka-ref.json").is_file() else None


def codec_dirs(work: Path, quick: bool) -> dict[str, Path]:
    """One partition per codec under work/codecs/<codec>/t-0."""
    out = {}
    for name in CODECS:
        d = work / "codecs" / name
        mb = 2 if quick else CODEC_MB[name]
        write_segment(d / "t-0" / "00000000000000000000.log", mb << 20,
                      codec=getattr(compression, name.upper()))
        out[name] = d
    return out


# -j scaling data: (codec, MiB) per partition, unequal sizes in no order, so that workers
# meet short and long items as on a real broker's dir. Uncompressed partitions weigh on
# index-rebuild (bytes to walk), compressed ones on verify (batches to inflate); at -j 1
# about 1.5 s of verify, 1 s of index-rebuild and 9 s of dump --print-data (CPU seconds):
# results.py times a command that takes under 4 s on hard-linked copies (linked_copies).
JOBS_PARTS = [("gzip", 10), ("none", 96), ("zstd", 14), ("lz4", 20), ("snappy", 12),
              ("none", 48), ("gzip", 6), ("zstd", 8), ("none", 128), ("lz4", 10),
              ("gzip", 16), ("snappy", 24), ("none", 64), ("zstd", 20), ("gzip", 8),
              ("none", 80)]


def jobs_dir(work: Path, quick: bool) -> Path:
    """len(JOBS_PARTS) partitions of mixed codecs and sizes, for -j scaling."""
    d = work / ("jobs-quick" if quick else f"jobs-{len(JOBS_PARTS)}")
    for p, (name, mb) in enumerate(JOBS_PARTS):
        write_segment(d / f"t-{p}" / "00000000000000000000.log",
                      (1 << 20) if quick else mb << 20, codec=getattr(compression, name.upper()))
    return d


def partitions_dir(work: Path, n: int) -> Path:
    """n small partitions (100 records, one ~14 KB segment each), by `kafkalog generate`."""
    d = work / f"partitions-{n}"
    if not (d / ".done").exists():
        subprocess.run(kl("generate", d, "--partitions", n, "--records", 100,
                          "--segment-bytes", 1 << 20, "--codec", "none", "--codec", "lz4",
                          "--force"), check=True, stderr=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        (d / ".done").touch()
    return d


def broker_dir(work: Path, size_mib: int) -> tuple[Path | None, str]:
    """(log dir, note): size_mib MiB of every codec written by the reference broker, or None
    and why not."""
    if size_mib <= 0:
        return None, "no large broker-written dir (KAFKALOG_BENCH_BROKER_MIB=0)"
    if _ref_dir() is None:
        return None, "no reference Kafka (make kafka-ref): no large broker-written dir"
    sys.path.insert(0, str(ROOT / "bench"))
    import conformance_bench
    import kafka_ref

    dest = work / f"broker-{kafka_ref.kafka_version()}-{size_mib}MiB"
    if not (dest / "logs").is_dir():
        print(f"generating {size_mib} MiB with the reference broker into {dest}",
              file=sys.stderr, flush=True)
        conformance_bench.generate(dest, size_mib, conformance_bench._parse_mix(MIX), 256)
    return dest / "logs", ""


_PARTITION = re.compile(r"(?P<topic>.+)-(?P<p>[0-9]+)")


def linked_copies(d: Path, copies: int) -> Path:
    """A log dir holding `copies` copies of log dir d's topic partitions: d's own entries,
    then copy c of partition `topic-p` as `topic.cC-p` (internal `__` topics once). Files are
    hard links: the same bytes, no more disk, one copy in the page cache. Made once, beside d
    (`jobs-16-x4`; a broker dir's `logs` under `broker-...-x4`)."""
    named = d.parent if d.name == "logs" else d
    dest = named.parent / f"{named.name}-x{copies}"
    if d.name == "logs":
        dest = dest / "logs"
    done = dest.parent / f"{dest.name}.done"
    if done.exists():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for entry in sorted(d.iterdir()):
        if not entry.is_dir():
            os.link(entry, dest / entry.name)
            continue
        m = _PARTITION.fullmatch(entry.name)
        names = [entry.name]
        if m is not None and not entry.name.startswith("__"):
            names += [f"{m['topic']}.c{c}-{m['p']}" for c in range(1, copies)]
        for name in names:
            (dest / name).mkdir()
            for f in entry.iterdir():
                os.link(f, dest / name / f.name)
    done.touch()
    return dest


_COPY = re.compile(r"(?P<topic>.+)\.c[0-9]+-(?P<p>[0-9]+)")


def original(name: str) -> str:
    """The partition dir a linked copy (`topic.cC-p`, linked_copies) was made from; a
    name that is no copy's, as it is."""
    m = _COPY.fullmatch(name)
    return name if m is None else f"{m['topic']}-{m['p']}"


def halves(cost: dict[Path, float]) -> tuple[list[Path], list[Path]]:
    """The partitions in two sets of about equal cost: the costliest first, each to the set
    that costs less so far (Graham's longest processing time first: the costlier set at most
    7/6 of the best split's); each set in name order."""
    sets: tuple[list[Path], list[Path]] = ([], [])
    sums = [0.0, 0.0]
    for p in sorted(cost, key=lambda p: (-cost[p], p.name)):
        k = 0 if sums[0] <= sums[1] else 1
        sets[k].append(p)
        sums[k] += cost[p]
    return sorted(sets[0]), sorted(sets[1])


def log_files(dirs: list[Path]) -> list[Path]:
    return sorted(p for d in dirs for p in d.rglob("*.log") if p.is_file())
