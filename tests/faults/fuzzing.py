"""One fuzz harness for every reader: mutate a file of a log dir, run each reading command on
it, and hold every run to the project's promises for bad input.

A *case* is one reader command run on one mutated input. For each input the harness copies
a small template log dir (one partition of fixtures/sample, of the shared broker-written
corpus, or a generated Kafka 0.7 one), mutates one of its files (a .log of magic 0, 1 or 2, a
KRaft .checkpoint, a 0.7 .kafka, an .index, .timeindex, .txnindex, .snapshot,
leader-epoch-checkpoint, a root checkpoint, meta.properties...) and runs dump (plain,
--records --print-data, jsonl, the file itself), verify, find-by-time (a time, earliest,
latest, max-timestamp), info, txn, recover --dry-run and one of index-rebuild, compact or
retain --dry-run on it (fuzz_inputs.py has the templates and mutations). Each run is a real child
process (forked from a driver that imported kafkalog once, so a run costs milliseconds, not
an interpreter start), with stdout, stderr and exit status of its own. Asserted per run:

  * no `Traceback` and no `internal error` on stderr; the process exits (no signal, no hang)
  * the exit code is one the command's help documents
  * every `kafkalog: error:` line is `<file in the case>:<byte position>: reason`, or a
    usage error naming an option
  * peak RSS <= 2 x the decompression cap + 64 MiB (the cap is --max-decompressed-bytes
    where the command takes it, else the 64 MiB default)
  * wall time <= TIME_BASE_S + TIME_PER_BYTE_S x the bytes of the case's files

Everything follows from (seed, case number), so a failure is replayed with
`python -m tests.faults.fuzzing --seed S --replay N`. `make test` runs a few thousand cases
with fixed seeds (tests/faults/test_fuzz_cli.py); `make fuzz` runs >= 100 000 with a fresh
seed (KAFKALOG_FUZZ_CASES, KAFKALOG_FUZZ_SEED, KAFKALOG_FUZZ_JOBS).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from tests.cli.run import exit_code_of_main
from tests.faults.fuzz_inputs import CAP, MIB, Input, Template, build_templates, inputs, mutate

DEFAULT_CAP = 64 * MIB  # compression.DEFAULT_MAX_DECOMPRESSED
TIME_BASE_S = 8.0
TIME_PER_BYTE_S = 20e-6  # 50 kB/s: far below any real speed, far above a quadratic blow-up

# documented exit codes per command (their --help epilogs)
EXITS = {"dump": {0, 4, 8, 16}, "verify": {0, 4, 8, 16}, "find-by-time": {0, 4, 8, 16},
         "info": {0, 8, 16}, "txn": {0, 4, 8, 16}, "recover": {0, 1, 4, 8, 16},
         "index-rebuild": {0, 1, 4, 8, 16}, "compact": {0, 4, 8, 16}, "retain": {0, 4, 8, 16}}
LOCATED = re.compile(r"^kafkalog: error: (/[^:]*):(\d+): \S")
OPTION = re.compile(r"(^|\W)--?[a-z][a-z-]*\b")


# -- commands ---------------------------------------------------------------------------

def commands(rng: random.Random, t: Template, ld: Path, part: Path, victim: Path,
             kind: str) -> list[list[str]]:
    cap = ["--max-decompressed-bytes", str(CAP)]
    if t.v07:
        times = ["earliest", "latest"]
    else:
        lo, hi = t.timestamps
        times = [str(rng.randint(lo, hi)) if hi else "0", str(lo), "earliest", "latest",
                 "max-timestamp"]
    out = [["dump", str(part)],
           ["dump", str(part), "--records", "--print-data", *cap],
           ["verify", str(ld), *cap],
           ["find-by-time", str(part), "-t", rng.choice(times)],
           ["info", str(ld)],
           ["recover", str(ld), "--dry-run", *(["--full"] if rng.random() < 0.5 else [])]]
    if not t.v07:
        out.append(["dump", str(part), "--records", "--format", "jsonl", "--no-batches", *cap])
        out.append(["txn", str(part)])
        # the dry runs of the commands that rewrite read everything too
        out.append(rng.choice([["index-rebuild", str(part), "--dry-run"],
                               ["compact", str(part), "--dry-run", "--all"],
                               ["retain", str(part), "--dry-run", "--retention-ms", "1"]]))
    out.append(["dump", str(victim), "--records", "--print-data", *cap])
    return out


# -- running ----------------------------------------------------------------------------

@dataclass
class Run:
    argv: list[str]
    code: int
    err: str
    maxrss_kib: int
    seconds: float
    input_bytes: int

    def problems(self, case_dir: Path) -> list[str]:
        out = []
        cmd = self.argv[0]
        if "Traceback" in self.err:
            out.append("traceback")
        if "internal error" in self.err:
            out.append("internal-error")
        if self.code < 0:
            out.append(f"signal {-self.code}")
        elif self.code not in EXITS[cmd]:
            out.append(f"exit {self.code} not documented for {cmd}")
        for line in self.err.splitlines():
            if line.startswith("kafkalog: error:") and not located(line, case_dir, self.code):
                out.append("error line without file:position")
                break
        cap = CAP if "--max-decompressed-bytes" in self.argv else DEFAULT_CAP
        if self.maxrss_kib * 1024 > 2 * cap + 64 * MIB:
            out.append(f"peak RSS {self.maxrss_kib // 1024} MiB > {(2 * cap >> 20) + 64} MiB")
        if self.seconds > time_bound(self.input_bytes):
            out.append(f"took {self.seconds:.1f} s for {self.input_bytes} bytes")
        return out


def located(line: str, case_dir: Path, code: int) -> bool:
    """`<file of the case>:<byte>: reason`; a usage error (16) may instead name the option,
    or the PATH argument it cannot use."""
    m = LOCATED.match(line)
    if m and m.group(1).startswith(str(case_dir)):
        return True
    msg = line[len("kafkalog: error:"):]
    return code == 16 and (OPTION.search(msg) is not None or str(case_dir) in msg)


def time_bound(input_bytes: int) -> float:
    return TIME_BASE_S + TIME_PER_BYTE_S * input_bytes


def _child(argv: list[str], err_path: str, limit_s: int) -> None:
    """In the forked child: run the CLI with its own stdout/stderr, exit with its code."""
    code = 70
    try:
        err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(err, 2)
        signal.alarm(limit_s)  # default action: the child dies of SIGALRM (a hang)
        code = exit_code_of_main(argv)
    except BaseException:  # noqa: BLE001 - whatever escapes main is what we look for
        with contextlib.suppress(BaseException):
            traceback.print_exc()
            sys.stderr.flush()
        code = 70
    os._exit(code)


def run_one(argv: list[str], tmp: Path, input_bytes: int) -> Run:
    err_path = tmp / "stderr"
    limit = int(time_bound(input_bytes) * 4) + 5
    sys.stdout.flush()
    sys.stderr.flush()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(argv, str(err_path), limit)
    _, status, ru = os.wait4(pid, 0)
    seconds = time.monotonic() - t0
    err = err_path.read_bytes().decode("utf-8", "replace")
    return Run(argv, os.waitstatus_to_exitcode(status), err, ru.ru_maxrss, seconds,
               input_bytes)


@dataclass
class Report:
    seed: str
    cases: int = 0
    inputs: int = 0
    error_lines: int = 0
    unlocated_lines: int = 0
    max_rss_kib: int = 0
    max_rss_run: str = ""
    slowest: float = 0.0
    slowest_run: str = ""
    failures: list[dict[str, object]] = field(default_factory=list)
    signatures: dict[str, int] = field(default_factory=dict)
    unlocated_examples: dict[str, str] = field(default_factory=dict)

    def add(self, run: Run, case_dir: Path, info: dict[str, object]) -> None:
        self.cases += 1
        what = f"{' '.join(run.argv)} ({info['file']}, {info['mutation']})"
        if run.maxrss_kib > self.max_rss_kib:
            self.max_rss_kib, self.max_rss_run = run.maxrss_kib, what
        if run.seconds > self.slowest:
            self.slowest, self.slowest_run = run.seconds, what
        for line in run.err.splitlines():
            if line.startswith("kafkalog: error:"):
                self.error_lines += 1
                if not located(line, case_dir, run.code):
                    self.unlocated_lines += 1
                    shape = _shape(line, case_dir)
                    self.unlocated_examples.setdefault(shape, line)
        for p in run.problems(case_dir):
            sig = f"{run.argv[0]}: {p}: {_shape(_last_error(run.err), case_dir)}"
            self.signatures[sig] = self.signatures.get(sig, 0) + 1
            if self.signatures[sig] <= 2:
                self.failures.append({**info, "argv": run.argv, "code": run.code,
                                      "problem": p, "stderr": run.err[-3000:],
                                      "maxrss_kib": run.maxrss_kib,
                                      "seconds": round(run.seconds, 2)})

    def as_dict(self) -> dict[str, object]:
        return {**self.summary(), "signatures": self.signatures,
                "unlocated_examples": self.unlocated_examples, "failures": self.failures}

    def summary(self) -> dict[str, object]:
        return {"seed": self.seed, "cases": self.cases, "inputs": self.inputs,
                "error_lines": self.error_lines, "unlocated_error_lines": self.unlocated_lines,
                "max_rss_mib": round(self.max_rss_kib / 1024, 1), "max_rss_run": self.max_rss_run,
                "slowest_s": round(self.slowest, 2), "slowest_run": self.slowest_run,
                "failure_kinds": len(self.signatures)}


def _last_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    for line in reversed(lines):
        if line.startswith("kafkalog: error:") or "Error" in line:
            return line
    return lines[-1] if lines else ""


def _shape(line: str, case_dir: Path) -> str:
    """A line with the case path and numbers blanked, to group failures by kind."""
    line = line.replace(str(case_dir), "<case>")
    return re.sub(r"-?\d+", "N", line)[:200]


def run_input(rng: random.Random, by_kind: dict[str, list[Input]], work: Path, number: int,
              report: Report, seed: str, keep: bool = False, big: bool = False) -> int:
    """Mutate one input and run every command on it; returns how many runs it took."""
    kind = rng.choice(sorted(by_kind))
    inp = rng.choice(by_kind[kind])
    data, how = mutate(rng, inp, big)
    case_dir = work / f"case-{number}"
    if case_dir.exists():
        shutil.rmtree(case_dir)
    ld = case_dir / "ld"
    shutil.copytree(inp.template.ld, ld)
    victim = ld / inp.rel
    victim.write_bytes(data)
    if rng.random() < 0.15:  # a second damaged file of the same log dir (an index and its log)
        other = rng.choice([i for k in sorted(by_kind) for i in by_kind[k]
                            if i.template is inp.template and i.rel != inp.rel] or [inp])
        if other is not inp:
            (ld / other.rel).write_bytes(mutate(rng, other, big)[0])
            how += f"; {other.rel}"
    part = ld / inp.template.part.name
    if rng.random() < 0.04:  # a partition dir name with a byte that is not UTF-8
        bad = os.fsdecode(rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80")) +
                          os.fsencode(part.name))
        part = part.rename(part.with_name(bad))
        victim = ld / inp.rel.replace(inp.template.part.name, bad, 1)
        how += "+dirname"
    input_bytes = sum(f.stat().st_size for f in ld.rglob("*") if f.is_file())
    info = {"seed": seed, "case": number, "file": f"{inp.template.name}/{inp.rel}",
            "kind": kind, "mutation": how, "big": big,
            "pure": os.environ.get("KAFKALOG_PURE") == "1"}
    argvs = commands(rng, inp.template, ld, part, victim, kind)
    for argv in argvs:
        r = run_one(argv, case_dir, input_bytes)
        report.add(r, case_dir, info)
    report.inputs += 1
    if not keep:
        shutil.rmtree(case_dir, ignore_errors=True)
    return len(argvs)


def fuzz(seed: str, cases: int, work: Path, *, only: int | None = None,
         keep: bool = False, progress: bool = False, big: bool = False) -> Report:
    """Run at least `cases` command runs (one input at a time) from `seed`."""
    _preload()
    shutil.rmtree(work / "templates", ignore_errors=True)
    templates = build_templates(work / "templates")
    by_kind = inputs(templates)
    report = Report(seed)
    number, done = 0, 0
    last = time.monotonic()
    while done < cases:
        if only is None or number == only:
            rng = random.Random(f"{seed}:{number}")
            done += run_input(rng, by_kind, work, number, report, seed, keep, big)
            if only is not None:
                break
        number += 1
        if progress and time.monotonic() - last > 30:
            last = time.monotonic()
            _say(json.dumps(report.summary()), sys.stderr)
    return report


def _preload() -> None:
    """Import what every run imports, once, so forked runs start warm."""
    import importlib

    from tests.cli.run import preload_commands

    preload_commands()
    for mod in ("kafkalog_cli.codec.compression", "zstandard", "lz4.block", "cramjam",
                "snappy", "orjson"):
        with contextlib.suppress(ImportError):
            importlib.import_module(mod)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", default=os.environ.get("KAFKALOG_FUZZ_SEED") or
                    os.urandom(6).hex())
    ap.add_argument("--cases", type=int, default=int(os.environ.get("KAFKALOG_FUZZ_CASES",
                                                                    "100000")))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("KAFKALOG_FUZZ_JOBS",
                                                                   "2")))
    ap.add_argument("--replay", type=int, help="run only input number N and keep its files")
    ap.add_argument("--big", action="store_true",
                    default=os.environ.get("KAFKALOG_FUZZ_BIG") == "1",
                    help="also 10 MiB zero-filled indexes and batches of millions of records")
    ap.add_argument("--work", type=Path, help="where case dirs go (default: a temp dir)")
    ap.add_argument("--json", action="store_true", help="print the report as one JSON object")
    ap.add_argument("--progress", action="store_true", help="a summary on stderr every 30 s")
    a = ap.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="kafkalog-fuzz-"))
    if a.work is None and a.replay is None:  # failures are replayed from their seed
        import atexit

        atexit.register(shutil.rmtree, work, True)
    if a.replay is not None or a.jobs <= 1:
        report = fuzz(a.seed, a.cases if a.replay is None else 1, work, only=a.replay,
                      keep=a.replay is not None, progress=a.progress, big=a.big)
        if a.json:
            _say(json.dumps(report.as_dict()))
        else:
            _print(report.as_dict())
        if a.replay is not None:
            _say(f"case files kept in {work}", sys.stderr)
        sys.exit(1 if report.failures else 0)  # (atexit handlers run on SystemExit)
    # several drivers, each with its own seed suffix, so jobs never repeat a case
    import subprocess

    _say(f"fuzzing {a.cases} cases with seed {a.seed} in {a.jobs} jobs, in {work}", sys.stderr)
    procs = [subprocess.Popen([sys.executable, "-m", "tests.faults.fuzzing", "--seed",
                               f"{a.seed}.{j}", "--cases", str(-(-a.cases // a.jobs)),
                               "--jobs", "1", "--json", "--progress", "--work",
                               str(work / f"job{j}"), *(["--big"] if a.big else [])],
                              stdout=subprocess.PIPE, text=True) for j in range(a.jobs)]
    bad = False
    for p in procs:
        out, _ = p.communicate()
        _print(json.loads(out))
        bad |= p.returncode != 0
    sys.exit(1 if bad else 0)


def _say(text: str, stream: object = None) -> None:
    out = stream or sys.stdout
    out.write(text + "\n")  # type: ignore[attr-defined]
    out.flush()  # type: ignore[attr-defined]


def _print(report: dict[str, object]) -> None:
    _say(json.dumps({k: v for k, v in report.items()
                     if k not in ("signatures", "unlocated_examples", "failures")}, indent=1))
    for sig, n in sorted(report["signatures"].items(), key=lambda kv: -kv[1]):  # type: ignore[attr-defined]
        _say(f"{n:6d}  {sig}")
    for f in report["failures"]:  # type: ignore[attr-defined]
        _say(json.dumps(f, indent=1))
        _say(f"replay: {'KAFKALOG_PURE=1 ' if f['pure'] else ''}python -m tests.faults.fuzzing "
             f"--seed {f['seed']} --replay {f['case']}{' --big' if f['big'] else ''}")


if __name__ == "__main__":
    main()
