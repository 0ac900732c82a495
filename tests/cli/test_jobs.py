"""-j/--jobs: every command that walks partitions prints, byte for byte and in order, what
-j 1 prints (stdout, stderr, exit code), and a mutating one leaves the same bytes on disk
and in its quarantine; Ctrl-C and a closed stdout stop every worker; the mechanism
(commands/parallel.py, commands/workers.py) keeps order, spills big outputs and raises a
worker's error after its output."""

import itertools
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kafkalog_cli.commands import parallel, workers
from kafkalog_cli.errors import CorruptDataError, KafkalogError
from tests.cli.run import run
from tests.conftest import CORPUS, FIXTURE

NOW = "1700000010000"
FORMATS = ["text", "json", "jsonl", "csv", "table"]
# every log dir of the corpus (Kafka 0.7 dirs have their own path: not -j's business yet)
CORPUS_DIRS = sorted(str(d) for d in CORPUS.iterdir()
                     if d.is_dir() and any(p.is_dir() for p in d.iterdir())
                     and not any(p.suffix == ".kafka" for p in d.rglob("*.kafka")))


def _generate(out: Path, *args: str) -> Path:
    r = run("generate", out, "--force", *args)
    assert r.code == 0, r.err
    return out


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five partitions, transactions, three codecs, and damage each command reports."""
    return _generate(tmp_path_factory.mktemp("jobs") / "ld", "--partitions", "5",
                     "--records", "1500", "--codec", "zstd", "--codec", "none",
                     "--codec", "gzip", "--transactions", "--keys", "40",
                     "--segment-bytes", "8192", "--damage", "torn-tail", "--damage",
                     "bit-flip", "--damage", "missing-index", "--damage", "orphan-index",
                     "--damage", "swap-leftover")


def _same(args: list[str], jobs: int = 3) -> None:
    one, many = run(*args, "-j", "1"), run(*args, "-j", str(jobs))
    assert (many.code, many.err, many.out) == (one.code, one.err, one.out), args
    assert one.out or one.err  # something was compared


READ_ONLY = [
    *(["verify", "--all", "--format", f] for f in FORMATS),
    *(["dump", "--records", "--print-data", "--format", f] for f in FORMATS),
    ["dump", "--records", "--format", "jsonl", "--payload", "base64"],
    *(["info", "--format", f] for f in ("text", "csv")),
    *(["txn", "--all", "--now", NOW, "--format", f] for f in ("text", "table")),
    ["index-rebuild", "--dry-run"],
]
# on the broker-written corpus too (a few seconds each: one format per command)
ON_CORPUS = [["verify", "--format", "json"], ["dump"], ["dump", "--records", "--format", "jsonl"],
             ["dump", "--records", "--print-data"],
             ["info", "--format", "json"], ["txn", "--all", "--now", NOW, "--format", "jsonl"],
             ["index-rebuild", "--dry-run", "--format", "csv"]]


@pytest.mark.parametrize("args", READ_ONLY, ids=[" ".join(a) for a in READ_ONLY])
def test_read_only_commands_print_what_one_job_prints(args: list[str], damaged: Path) -> None:
    # the sample and a damaged multi-partition dir, in one run
    _same([args[0], str(FIXTURE), str(damaged), *args[1:]])


@pytest.mark.parametrize("args", ON_CORPUS, ids=[" ".join(a) for a in ON_CORPUS])
def test_on_the_corpus_too(args: list[str]) -> None:
    _same([args[0], *CORPUS_DIRS, *args[1:]], jobs=2)


def _mutated(tmp: Path, src: Path, args: list[str], jobs: int
             ) -> tuple[int, bytes, str, dict[str, bytes], list[tuple[str, bytes]]]:
    """Run on a fresh copy at one fixed path (outputs name it): the result, the log dir's
    files and the quarantine's (run folder name left out: it is the time)."""
    ld, q = tmp / "ld", tmp / "q"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, ld, symlinks=True)
    r = run(args[0], ld, *args[1:], "--quarantine", q, "-j", str(jobs))
    tree = {str(p.relative_to(ld)): p.read_bytes() for p in sorted(ld.rglob("*"))
            if p.is_file()}
    runs = sorted(q.iterdir()) if q.exists() else []
    assert len(runs) <= 1  # one run folder, as with -j 1
    quarantined = sorted((str(p.relative_to(runs[0])), p.read_bytes())
                         for p in runs[0].rglob("*") if p.is_file()
                         and p.name != "manifest.jsonl") if runs else []
    return r.code, r.out, r.err, tree, quarantined


MUTATING = [
    ["recover"], ["recover", "--dry-run"], ["recover", "--full", "--force", "--format", "json"],
    ["index-rebuild"], ["index-rebuild", "--index-interval-bytes", "100"],
    ["compact", "--all", "--force", "--now", NOW, "--dedupe-buffer-size", "2400",
     "--format", "csv"],
    ["compact", "--all", "--force", "--now", NOW, "--dry-run"],
    ["retain", "--retention-bytes", "20000", "--ignore-high-watermark", "--now", NOW],
    ["retain", "--retention-bytes", "20000", "--ignore-high-watermark", "--now", NOW,
     "--dry-run", "--format", "json"],
]


@pytest.mark.parametrize("args", MUTATING, ids=[" ".join(a) for a in MUTATING])
def test_mutating_commands_leave_what_one_job_leaves(args: list[str], damaged: Path,
                                                    tmp_path: Path) -> None:
    src = damaged
    if args[0] in ("compact", "retain", "index-rebuild"):  # they refuse interrupted ones
        src = tmp_path / "repaired"
        shutil.copytree(damaged, src)
        assert run("recover", src, "--full", "--force", "--no-quarantine").code == 1
    one = _mutated(tmp_path / "run", src, args, 1)
    many = _mutated(tmp_path / "run", src, args, 3)
    assert many == one
    assert one[1] or one[2]


def test_an_error_in_a_worker_is_the_error_of_one_job(damaged: Path, tmp_path: Path) -> None:
    # compact meets a corrupt zstd batch in demo-1. What was printed, the one error line
    # and the exit code are -j 1's; later partitions already running in workers are
    # finished (each crash-safe on its own), so the trees may differ.
    src = tmp_path / "src"
    shutil.copytree(damaged, src)
    assert run("recover", src, "--no-quarantine").code in (1, 4, 5)  # OR-ed
    args = ["compact", "--all", "--force", "--now", NOW]
    one, many = _mutated(tmp_path / "run", src, args, 1), _mutated(tmp_path / "run", src, args, 3)
    assert many[:3] == one[:3]
    assert one[0] == 4 and one[2].startswith("kafkalog: error: ") and one[2].count("\n") == 1


def test_recover_on_the_corpus_leaves_what_one_job_leaves(tmp_path: Path) -> None:
    src = Path(CORPUS_DIRS[0])
    one = _mutated(tmp_path / "run", src, ["recover", "--full"], 1)
    assert _mutated(tmp_path / "run", src, ["recover", "--full"], 2) == one


def test_jobs_out_of_range_is_one_line_naming_the_option(sample: Path) -> None:
    for bad in ("0", "1025", "x"):
        r = run("verify", sample, "-j", bad)
        assert r.code == 16
        assert r.err.startswith("kafkalog: error: --jobs: ") and r.err.count("\n") == 1
        assert "[1, 1024]" in r.err


# -- stopping ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough that a -j 2 text dump runs a few seconds."""
    return _generate(tmp_path_factory.mktemp("jobs-big") / "ld", "--partitions", "4",
                     "--records", "60000", "--codec", "zstd", "--segment-bytes", "1048576")


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(c) for c in (task / "children").read_text().split()]
    return kids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _start(big: Path, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "dump", str(big),
                             "--records", "--print-data", "-j", "2"],
                            stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


def _wait_for_workers(p: subprocess.Popen[bytes]) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        kids = _children(p.pid)
        if len(kids) >= 2:
            return kids
        time.sleep(0.02)
    raise AssertionError("no workers started")


def test_ctrl_c_stops_every_worker_and_exits_32(big: Path) -> None:
    p = _start(big, stdout=subprocess.DEVNULL)
    kids = _wait_for_workers(p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 32
    assert err.decode().endswith("kafkalog: error: interrupted\n")
    assert not [k for k in kids if _alive(k)]


def test_a_closed_stdout_exits_as_cat_and_leaves_no_worker(big: Path) -> None:
    p = _start(big, stdout=subprocess.PIPE)
    kids = _wait_for_workers(p)
    assert p.stdout is not None
    assert p.stdout.readline().startswith(b"Dumping ")
    p.stdout.close()  # as `| head -1` does
    p.wait(timeout=30)
    assert p.returncode == 141  # 128 + SIGPIPE, a shell's status for cat: the run did not end
    assert p.stderr is not None and p.stderr.read() == b""
    assert not [k for k in kids if _alive(k)]


# -- the mechanism ----------------------------------------------------------------------
def _noisy(n: int) -> int:
    """Writes stdout and stderr in turn, a lot of it for some items."""
    for i in range(n):
        sys.stdout.write(f"{n}:{i}\n")
        if i % 1000 == 0:
            sys.stderr.write(f"note {n}:{i}\n")
    if n == 7:
        raise CorruptDataError("bad batch", "/x/00.log", 12)
    return n * n


@pytest.mark.parametrize("mode", ["direct", "replay"])
def test_ordered_keeps_order_spills_and_raises_after_the_output(
        mode: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    # direct: capfd's files are fds, which workers write at their turn; replay: the parent
    # writes what workers recorded (as under a progress bar or for a json renderer)
    monkeypatch.setattr(workers, "SPILL", 1000)  # the forked workers inherit it
    monkeypatch.setattr(workers, "_BATCH", 500)
    if mode == "replay":
        monkeypatch.setattr(workers, "_direct_fds", lambda renderer: None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # gettempdir() caches it
    items = [3000, 5, 0, 2500, 1, 7, 9]
    want_out = "".join(f"{n}:{i}\n" for n in items[:6] for i in range(n))
    want_err = "".join(f"note {n}:{i}\n" for n in items[:6] for i in range(0, n, 1000))
    got = []
    with pytest.raises(CorruptDataError) as e:
        for v in parallel.ordered(items, _noisy, 2):
            got.append(v)
    out, err = capfd.readouterr()
    assert got == [n * n for n in items[:5]]
    assert (out, err) == (want_out, want_err)
    assert str(e.value) == str(CorruptDataError("bad batch", "/x/00.log", 12))
    assert os.listdir(tmp_path) == []  # the spill dir is gone


def _temp_listing(n: int) -> list[str]:
    sys.stdout.write(f"{n}\n" * n)
    sys.stdout.flush()  # to the held output: spilled, if past SPILL
    return os.listdir(tempfile.gettempdir())


@pytest.mark.parametrize("mode", ["direct", "replay"])
def test_a_run_that_holds_little_makes_no_temp_dir(
        mode: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    # the private temp dir is made by the first spill: a run whose items hold less than
    # SPILL bytes (a mutating command's rows, verify's findings) writes nothing outside
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # gettempdir() caches it
    if mode == "replay":
        monkeypatch.setattr(workers, "_direct_fds", lambda renderer: None)
    items = [400, 300, 200, 100]
    want = "".join(f"{n}\n" * n for n in items)
    assert list(parallel.ordered(items, _temp_listing, 2)) == [[]] * 4
    assert capfd.readouterr().out == want
    if mode == "replay":  # a recording spills whether or not its item has the turn
        monkeypatch.setattr(workers, "SPILL", 100)
        listings = list(parallel.ordered(items, _temp_listing, 2))
        assert len({name for names in listings for name in names}) == 1
        assert listings[0][0].startswith("kafkalog-jobs-")
        assert capfd.readouterr().out == want
    assert os.listdir(tmp_path) == []


def _interleaved(n: int) -> int:
    """Stdout and stderr lines in turn, then a long stdout run (past the in-memory hold)."""
    for i in range(3):
        sys.stdout.write(f"out {n}.{i}\n")
        sys.stderr.write(f"err {n}.{i}\n")
    sys.stdout.write(f"{n}" * 5000 + "\n")
    return n


_ORDER_SCRIPT = """
import sys
from kafkalog_cli.commands import parallel, workers
from tests.cli.test_jobs import _interleaved
workers.SPILL = 4096
for v in parallel.ordered(list(range(int(sys.argv[1]))), _interleaved, 2):
    sys.stdout.write(f"value {v}\\n")
"""


def test_stderr_keeps_its_place_in_one_stream() -> None:
    # 2>&1: each item's stderr lines come after the stdout written before them, and the
    # caller's own output for an item (the "value" line) before the next item's
    p = subprocess.run([sys.executable, "-c", _ORDER_SCRIPT, "9"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60, check=True,
                       cwd=Path(__file__).parents[2])
    want = "".join("".join(f"out {n}.{i}\nerr {n}.{i}\n" for i in range(3))
                   + f"{n}" * 5000 + f"\nvalue {n}\n" for n in range(9))
    assert p.stdout.decode() == want


def test_appending_to_a_file_gives_what_one_job_gives(big: Path, tmp_path: Path) -> None:
    # `>> file`: sendfile refuses an O_APPEND fd, so held output is copied by read/write
    outs = []
    for jobs in ("1", "2"):
        dest = tmp_path / f"out-{jobs}"
        dest.write_bytes(b"before\n")
        with open(dest, "ab") as f:
            subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump", str(big),
                            "--records", "-j", jobs], stdout=f, check=True, timeout=300)
        outs.append(dest.read_bytes())
    assert outs[0] == outs[1]
    assert outs[0].startswith(b"before\nDumping ") and len(outs[0]) > 4 * workers.SPILL


def test_one_job_runs_in_this_process() -> None:
    assert list(parallel.ordered([1, 2, 3], lambda n: (n, os.getpid()), 1)) == \
        [(n, os.getpid()) for n in (1, 2, 3)]
    pids = {pid for _, pid in parallel.ordered(list(range(6)), lambda n: (n, os.getpid()), 2)}
    assert os.getpid() not in pids


def _sized_parts(tmp_path: Path, sizes: list[int]) -> list:  # type: ignore[type-arg]
    """Partitions t-0, t-1, ... of one segment of these .log sizes."""
    from kafkalog_cli.storage.disk.logdir import PartitionDir
    from kafkalog_cli.storage.disk.segment import Segment

    parts = []
    for p, size in enumerate(sizes):
        d = tmp_path / f"t-{p}"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(b"x" * size)
        parts.append(PartitionDir(d, None, [Segment(d, 0, has_log=True)]))
    return parts


def test_the_last_window_goes_to_workers_biggest_first(tmp_path: Path) -> None:
    parts = _sized_parts(tmp_path, [5, 1, 9, 2, 7, 3])
    assert workers._dispatch_order(parts, 4) == [0, 1, 2, 4, 5, 3]
    assert workers._dispatch_order(parts, 8) == [2, 4, 0, 5, 3, 1]
    assert workers._dispatch_order(list(range(6)), 4) == list(range(6))  # no sizes: as given
    # the consumer still gets them in order, from workers
    got = list(parallel.ordered(parts, lambda part: part.path.name, 2))
    assert got == [f"t-{p}" for p in range(6)]


# -- partition dirs named one by one (a shell glob) --------------------------------------
GLOBBED = [["verify", "--all", "--format", "json"], ["dump", "--records", "--print-data"],
           ["index-rebuild", "--dry-run"]]


def _item_counts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many items each parallel.ordered call gets, from here on."""
    sizes: list[int] = []
    real = parallel.ordered

    def spy(items, work, jobs, **kw):  # type: ignore[no-untyped-def]
        sizes.append(len(items))
        return real(items, work, jobs, **kw)

    monkeypatch.setattr(parallel, "ordered", spy)
    return sizes


@pytest.mark.parametrize("args", GLOBBED, ids=[" ".join(a) for a in GLOBBED])
def test_partitions_named_one_by_one_are_one_set_of_items(
        args: list[str], damaged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from kafkalog_cli.cli import root

    # (index-rebuild refuses a partition holding a .swap leftover, before any work)
    parts = sorted(str(p) for p in damaged.iterdir() if p.is_dir() and not any(p.glob("*.swap")))
    assert len(parts) == 4
    # the same output as -j 1, from a real process
    _same([args[0], *parts, *args[1:]], jobs=2)
    # and the partitions went to the workers as one set, not one -j run per PATH
    sizes = _item_counts(monkeypatch)
    r = CliRunner().invoke(root, [args[0], *parts, *args[1:], "-j", "2"],
                           standalone_mode=False)
    assert r.exception is None, r.exception
    assert sizes == [4]


def test_a_partition_named_twice_is_rebuilt_twice_in_turn(
        damaged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from kafkalog_cli.cli import root

    part = str(sorted(p for p in damaged.iterdir() if p.is_dir())[0])
    sizes = _item_counts(monkeypatch)
    r = CliRunner().invoke(root, ["index-rebuild", "--dry-run", part, part, "-j", "2"],
                           standalone_mode=False)
    assert r.exception is None, r.exception
    assert sizes == [1, 1]  # never the same partition in two workers at once


def test_every_item_at_once_biggest_first_when_small(tmp_path: Path) -> None:
    parts = _sized_parts(tmp_path, [5, 1, 9, 2, 7, 3])
    # runs of partitions (commands/chunked.py) by their sum
    assert workers._dispatch_order([parts[:2], parts[2:4], parts[4:]], 3) == [1, 2, 0]
    got = list(parallel.ordered(parts, lambda part: (part.path.name, os.getpid()), 2,
                                small=True))
    assert [name for name, _ in got] == [f"t-{p}" for p in range(6)]
    assert os.getpid() not in {pid for _, pid in got}


@pytest.mark.parametrize("slow_first", [False, True])
def test_a_worker_that_dies_ends_the_run_with_one_error_not_a_hang(slow_first: bool) -> None:
    # killed by the OOM killer or an operator: its item never comes back (a multiprocessing
    # pool waited for it for ever); the run stops with an operational error, workers reaped.
    # slow_first: item 0 is slow in one worker while the other does 1 and 2 and is killed in
    # 3, its pipe ending before item 0 is back: 0, 1 and 2 still come (as at -j 1)
    def work(i: int) -> int:
        if i == 0 and slow_first:
            time.sleep(0.5)
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i

    got: list[int] = []
    with pytest.raises(KafkalogError, match=r"worker process \d+ died"):
        for v in parallel.ordered(list(range(8)), work, 2):
            got.append(v)
    assert got == [0, 1, 2]


def test_work_for_workers_all_dead_is_an_error_not_stdouts_reader_gone() -> None:
    # the task pipe's EPIPE must not pass for a closed stdout (a quiet exit 141)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    pool = workers._Workers(2, mask)
    try:
        for pid in list(pool._pids.values()):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        with pytest.raises(KafkalogError, match="every worker process died"):
            pool.submit(0)
    finally:
        pool.kill()


HELD_THEN_CLOSED = """
import os, sys, time
from kafkalog_cli.commands import parallel, workers
r, w = os.pipe()
os.close(r)
os.dup2(w, 1)  # stdout: a pipe whose reader is gone

def work(i):
    if i == 1:
        print("x" * 10, flush=True)  # held: item 0 has the turn
        while workers._turn_now() < 1:  # the turn comes while this item still works
            time.sleep(0.01)
    else:
        time.sleep(0.3)
    return i

try:
    list(parallel.ordered([0, 1], work, 2))
except BrokenPipeError:
    sys.exit(0)
except Exception as e:
    sys.stderr.write(f"{type(e).__name__}: {e}")
    sys.exit(3)
"""


def test_held_output_meeting_a_closed_stdout_is_the_items_broken_pipe() -> None:
    # not a worker that died: the CLI makes a BrokenPipeError the quiet exit 141 of `| head`
    r = subprocess.run([sys.executable, "-c", HELD_THEN_CLOSED], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr


SMALL_PIPES = """
import fcntl, os
from kafkalog_cli.commands import parallel
real = os.pipe

def small():  # what Linux gives a user past fs.pipe-user-pages-soft: a page
    r, w = real()
    fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ
    return r, w

os.pipe = small
assert list(parallel.ordered(list(range(3000)), lambda i: i, 2, small=True)) == list(range(3000))
"""


def test_pipes_of_one_page_do_not_deadlock_the_workers() -> None:
    # the parent must never wait to write a task while workers wait for it to read results
    r = subprocess.run([sys.executable, "-c", SMALL_PIPES], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr


def _marked(arg: tuple[str, str, int]) -> int:
    """Item 0 fails (an error, or its worker dies) 0.3 s in; item 1 takes 1 s; each item
    that runs to its end leaves a marker file."""
    where, how, n = arg
    if n == 0:
        time.sleep(0.3)
        if how == "death":
            os.kill(os.getpid(), signal.SIGKILL)
        raise CorruptDataError("bad batch", "/x/00.log", 12)
    time.sleep(1.0 if n == 1 else 0)
    Path(where, str(n)).touch()
    return n


@pytest.mark.parametrize("how", ["error", "death"])
@pytest.mark.parametrize("finish_started", [True, False])
def test_after_a_failure_started_partitions_are_finished_and_no_other_starts(
        tmp_path: Path, how: str, finish_started: bool) -> None:
    # a command that changes partitions finishes those other workers have started (each
    # whole, no recover needed); a reading one stops them at once after an error. A death
    # does not say which item was the dead worker's: the others finish the one each has
    # started (their results may come before it), so a reading run waits for them too.
    # Items after the failing one never start, as with -j 1
    items = [(str(tmp_path), how, n) for n in range(8)]
    with pytest.raises(KafkalogError) as e:
        list(parallel.ordered(items, _marked, 2, finish_started=finish_started))
    assert ("bad batch" if how == "error" else "died") in str(e.value)
    assert sorted(os.listdir(tmp_path)) == (["1"] if finish_started or how == "death" else [])


# -- dump's pieces: a big partition cut at batch starts (storage/disk/pieces.py) ---------
# -j 2 with pieces and a ring made small, so that the fixtures are cut into many pieces and
# held output wraps around the ring and overflows it into spill files
_SMALL_PIECES = """
import sys
from kafkalog_cli.commands import workers
from kafkalog_cli.storage.disk import pieces
pieces.MIN_PIECE, pieces.PIECE_BYTES, pieces.PIECE_RECORDS = 512, 2048, 40
workers.RING = int(sys.argv[1])
if sys.argv[2] == "pure":  # the Python twins of the compiled direct-mode output
    workers._fastout = None
from kafkalog_cli.launch import main
sys.argv = ["kafkalog", *sys.argv[3:]]
main()
"""
PIECES = [["--records", "--print-data"], ["--records", "--format", "jsonl"],
          ["--format", "json", "--records"], ["--records", "--to-offset", "700"],
          ["--records", "--no-batches", "--format", "csv", "--payload", "hex"]]


# ring 0: none (held output spills as before); 3000 bytes: it wraps and overflows. Output
# through workers' compiled classes (fastout, where built) and their Python twins
OUT = ["compiled", "pure"] if workers._fastout is not None else ["pure"]
PIECE_RUNS = [*((a, 3000, o) for a in PIECES for o in OUT),
              *((PIECES[0], 0, o) for o in OUT), (PIECES[0], 1 << 20, OUT[0])]


@pytest.mark.parametrize(("args", "ring", "out"), PIECE_RUNS,
                         ids=[f"{' '.join(a)} ring {r} {o}" for a, r, o in PIECE_RUNS])
def test_dump_of_partitions_cut_in_pieces_prints_what_one_job_prints(
        args: list[str], ring: int, out: str, damaged: Path, big: Path) -> None:
    # damaged: torn tail, bit flip, transactions, three codecs; big (once): 1 MiB segments
    paths = [str(damaged), str(big)] if (args, ring) == PIECE_RUNS[0][:2] else [str(damaged)]
    one = run("dump", *paths, *args, "-j", "1")
    p = subprocess.run([sys.executable, "-c", _SMALL_PIECES, str(ring), out, "dump", *paths,
                        *args, "-j", "2"], capture_output=True, timeout=300,
                       cwd=Path(__file__).parents[2])
    assert (p.returncode, p.stderr.decode(), p.stdout) == (one.code, one.err, one.out)
    assert one.code == (0 if "--to-offset" in args else 4)  # the damage is past 700
    assert one.out.count(b"\n") > 700


@pytest.mark.parametrize("out", OUT)
def test_the_corpus_cut_in_pieces_dumps_as_one_job_does(out: str) -> None:
    # broker-written: legacy formats (never cut), KRaft metadata and offsets decoded
    one = run("dump", *CORPUS_DIRS, "--records", "--print-data", "-j", "1")
    p = subprocess.run([sys.executable, "-c", _SMALL_PIECES, "3000", out, "dump", *CORPUS_DIRS,
                        "--records", "--print-data", "-j", "2"], capture_output=True,
                       timeout=300, cwd=Path(__file__).parents[2])
    assert (p.returncode, p.stderr.decode(), p.stdout) == (one.code, one.err, one.out)
    assert one.out.count(b"Dumping ") > 500


def test_pieces_tile_each_segment_and_the_first_carries_the_headings(
        big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalog_cli.commands.dump import Dumper, Filters, Piece
    from kafkalog_cli.output.render import make_renderer, payload_encoder
    from kafkalog_cli.storage.disk import pieces
    from kafkalog_cli.storage.disk.logdir import open_target

    d = Dumper(make_renderer("jsonl", lambda row: None, None), True, True,
               payload_encoder("utf8"), Filters(None, None, None, None, None, None, "all"),
               1 << 26)
    part = open_target(big / "demo-0").partitions()[0]
    monkeypatch.setattr(pieces, "MIN_PIECE", 4096)
    monkeypatch.setattr(pieces, "PIECE_RECORDS", 2000)
    got = d.cut(part, pieces.HopBudget(1 << 20))
    assert len(got) > 2 * len(part.segments) > 2
    assert all(isinstance(pc, Piece) for pc in got)
    for seg in part.segments:
        mine = [pc for pc in got if pc.seg is seg]
        assert mine[0].start == 0 and mine[-1].end is None
        assert [pc.heading for pc in mine] == [True] + [False] * (len(mine) - 1)
        assert all(a.end == b.start for a, b in itertools.pairwise(mine))
    assert [pc.snapshots for pc in got] == [True] + [False] * (len(got) - 1)
    # with no hops left: a piece a segment; under two MIN_PIECE: the partition, as before
    assert [(pc.start, pc.end) for pc in d.cut(part, pieces.HopBudget(0))] == \
        [(0, None)] * len(part.segments)
    monkeypatch.undo()
    small = open_target(FIXTURE).partitions()[0]
    assert small.log_bytes < 2 * pieces.MIN_PIECE and d.cut(small, pieces.HopBudget(9)) == [small]


def test_the_last_window_goes_heaviest_first_by_records_not_bytes_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a zstd partition holds more records in fewer bytes than an uncompressed one: it costs
    # more to decode and print, so it goes first
    from kafkalog_cli.storage.disk.logdir import open_target

    parts = [open_target(_generate(tmp_path / c, "--partitions", "1", "--records", n,
                                   "--codec", c)).partitions()[0]
             for c, n in (("none", "30000"), ("zstd", "60000"))]
    assert parts[0].log_bytes > parts[1].log_bytes
    monkeypatch.setattr(parallel, "SAMPLED", 0)
    assert parallel.item_weight(parts[1]) > parallel.item_weight(parts[0])  # type: ignore[operator]
    assert workers._dispatch_order(parts, 2) == [1, 0]
    # work by the byte (index-rebuild: reading and CRCs) weighs bytes alone
    assert workers._dispatch_order(parts, 2, parallel.item_bytes) == [0, 1]
    monkeypatch.setattr(parallel, "SAMPLED", 1 << 40)  # not sampled: by bytes
    assert workers._dispatch_order(parts, 2) == [0, 1]


def test_the_default_is_one_process_on_a_small_dir_and_every_core_on_a_big_one(
        tmp_path: Path) -> None:
    """-j's default starts no worker for less than AUTO_BYTES of data (they would cost more
    than they save); an N given on the command line is taken as it is."""
    half = parallel.AUTO_BYTES // 2
    (tmp_path / "small").mkdir()
    (tmp_path / "big").mkdir()
    small = _sized_parts(tmp_path / "small", [half, half - 1])
    big = _sized_parts(tmp_path / "big", [half, half])
    auto = parallel.Auto(2)
    assert parallel.jobs_for(small, auto) == 1
    assert parallel.jobs_for(big, auto) == 2
    # decided once: the answer is a plain int, so asking again (dump, then ordered) keeps it
    # and reads no sizes
    assert not isinstance(parallel.jobs_for(big, auto), parallel.Auto)
    assert parallel.jobs_for(small, parallel.jobs_for(big, auto)) == 2
    assert parallel.jobs_for(small, 2) == 2  # -j 2 given
    assert parallel.jobs_for([*small, object()], auto) == 2  # a size unknown: as a big one

    def pids(parts: list, jobs: int) -> set[int]:  # type: ignore[type-arg]
        return set(parallel.ordered(parts, lambda _: os.getpid(), jobs))

    assert pids(small, auto) == {os.getpid()}
    assert os.getpid() not in pids(big, auto)
    assert os.getpid() not in pids(small, 2)


def test_the_cli_default_is_every_core_as_auto() -> None:
    import click

    from kafkalog_cli.commands.options import _default_jobs

    ctx, opt = click.Context(click.Command("x")), click.Option(["-j"])
    got = _default_jobs(ctx, opt, None)
    assert isinstance(got, parallel.Auto) and got == len(os.sched_getaffinity(0))
    given = _default_jobs(ctx, opt, 2)
    assert given == 2 and not isinstance(given, parallel.Auto)


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "ctypes"])
def test_a_worker_is_set_to_die_with_its_parent(pure: bool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """_die_with sets PR_SET_PDEATHSIG to SIGKILL, through the compiled helper or, without
    the build, ctypes; read back with PR_GET_PDEATHSIG (2) in the forked child."""
    import ctypes

    if pure:
        monkeypatch.setenv("KAFKALOG_PURE", "1")
    elif workers.compiled("fastscan") is None:
        pytest.skip("no compiled build here (KAFKALOG_NO_EXT)")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: what a worker does first, then report the setting
        try:
            workers._die_with(os.getppid())
            sig = ctypes.c_int(-1)
            ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(sig))
            os.write(w, str(sig.value).encode())
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 16)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == str(int(signal.SIGKILL)).encode()


RINGS = ["python", "compiled"] if workers._fastout is not None else ["python"]


def _new_ring(kind: str, size: int, turn: object) -> object:
    """workers._Ring (which reads workers._turn) or its compiled twin (given the counter)."""
    import mmap

    mem = mmap.mmap(-1, size)
    return workers._Ring(mem) if kind == "python" else workers._fastout.Ring(mem, turn)


@pytest.mark.parametrize("kind", RINGS)
def test_the_ring_goes_back_to_its_start_where_that_is_free(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # held output is written from the ring's start whenever the bytes there are free, so
    # that a worker touches about as many pages as it holds at once, not the whole ring;
    # an item's own bytes stay one run (the parent writes them out as one), and what would
    # overlap bytes still held is refused (they then spill)
    import mmap

    turn = mmap.mmap(-1, 8)
    monkeypatch.setattr(workers, "_turn", turn)

    def set_turn(i: int) -> None:
        turn[:8] = i.to_bytes(8, "little", signed=True)

    ring = _new_ring(kind, 100, turn)

    def put(item: int, data: bytes) -> int | None:
        return ring.put(item, [data], len(data))

    set_turn(0)
    assert put(1, b"a" * 20) == 0
    assert put(1, b"b" * 20) == 20  # item 1 goes on where it was
    set_turn(2)  # item 1 written out: the ring is free again
    assert put(3, b"c" * 30) % 100 == 0
    assert put(4, b"d" * 10) % 100 == 30  # item 3 still held: after it
    set_turn(4)
    at = put(5, b"e" * 25)  # [0, 25) is free again, item 4 is at [30, 40)
    assert at is not None and at % 100 == 0
    assert put(5, b"f" * 10) is None  # would run into item 4's bytes
    assert put(6, b"g" * 6) is None  # [25, 30) is left: too short
    assert put(6, b"g" * 5) == 225  # (positions count every byte ever written)
    set_turn(7)
    assert put(7, b"h" * 100) == 300  # all free: the whole ring, from its start
    assert bytes(ring.mem[:5]) == b"h" * 5


@pytest.mark.skipif(workers._fastout is None, reason="needs the compiled core")
def test_the_compiled_ring_holds_the_same_bytes_as_the_python_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the compiled ring copies with stores that bypass the cache (16-byte aligned, 64 at a
    # time, from 4 KiB on): every length around those steps, at every alignment, and big
    # puts split at the ring's end, must leave exactly the bytes the Python ring leaves
    import mmap

    turn = mmap.mmap(-1, 8)
    monkeypatch.setattr(workers, "_turn", turn)
    size = 1 << 18
    rings = [_new_ring(kind, size, turn) for kind in ("python", "compiled")]
    rnd = random.Random(17)
    item = 0

    def put(n: int, parts: list[bytes]) -> int | None:
        got = [ring.put(item, parts, n) for ring in rings]
        assert got[0] == got[1]
        assert rings[0].mem[:] == rings[1].mem[:], n
        return got[0]

    def next_item(keep_last: bool) -> None:
        """On to the next item, all before it written out, or all but the last one."""
        nonlocal item
        item += 1
        turn[:8] = (item - keep_last).to_bytes(8, "little", signed=True)

    lengths = [1, 15, 16, 17, 63, 64, 65, 4095, 4096, 4097, 4111, 4160, 5000, 65537,
               size // 3, size - 31, size] + [rnd.randrange(1, 70000) for _ in range(60)]
    for n in lengths:  # from the ring's start, after a lead-in of 0-31 bytes
        lead = rnd.randbytes(rnd.randrange(min(32, size - n + 1)))
        next_item(keep_last=False)
        put(len(lead), [lead])
        assert put(n, [rnd.randbytes(k) for k in _split(rnd, n)]) is not None
    for n in [4096, 4097, 5000, 65537] + [rnd.randrange(4096, 70000) for _ in range(20)]:
        # item A at [0, a), B after it up to n bytes short of the end, A written out: the
        # next item does not fit at the start (n > a) and goes on after B, over the end
        a = rnd.randrange(1, n)
        next_item(keep_last=False)
        put(a, [rnd.randbytes(a)])
        next_item(keep_last=True)
        put(size - n, [rnd.randbytes(size - n)])
        next_item(keep_last=True)
        at = put(n, [rnd.randbytes(k) for k in _split(rnd, n)])
        assert at is not None and at % size == a + size - n  # rounds the end by a bytes


def _split(rnd: random.Random, n: int) -> list[int]:
    """n as 1-3 part lengths (the gatherer hands on two at most; three covers more)."""
    cuts = sorted(rnd.randrange(n + 1) for _ in range(rnd.randrange(3)))
    return [b - a for a, b in itertools.pairwise([0, *cuts, n]) if b > a] or [n]


@pytest.mark.parametrize("kind", RINGS)
def test_stdout_gathers_small_writes_and_hands_a_big_one_on_as_it_is(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # a worker's stdout: small writes gathered (one emit per GATHER bytes), a write of
    # PASS bytes or more handed on uncopied, with what was gathered before it, in one
    # emit; stderr (no gathering) first hands on what stdout gathered: order is kept
    if kind == "python":
        monkeypatch.setattr(workers, "_fastout", None)
    emitted: list[tuple[str, list[bytes], int]] = []

    def emit(name: str):
        def take(parts, n: int) -> None:
            assert n == sum(len(p) for p in parts)
            emitted.append((name, list(parts), n))
        return take

    out = workers._Sink(emit("out"), False, gather=workers.GATHER)
    err = workers._Sink(emit("err"), False, out)
    big = b"x" * workers.PASS
    assert out.write(b"head\n") == 5 and out.write(b"er\n") == 3
    assert emitted == []  # gathered
    assert out.write(big) == len(big)
    assert [(name, n) for name, _, n in emitted] == [("out", 8 + len(big))]
    assert bytes(emitted[0][1][0]) == b"head\ner\n" and emitted[0][1][1] is big  # no copy
    out.write(big)  # nothing gathered before it: on its own
    assert emitted[1][1] == [big]
    out.write(b"line\n")
    err.write(b"warning\n")  # stdout's line goes first
    assert [(name, b"".join(parts)) for name, parts, _ in emitted[2:]] == [
        ("out", b"line\n"), ("err", b"warning\n")]
    small = b"y" * (workers.PASS - 1)
    for _ in range(workers.GATHER // len(small) + 1):
        out.write(small)
    assert emitted[-1][0] == "out" and emitted[-1][2] >= workers.GATHER  # a full gather
    out.write(b"z")
    out.flush()
    assert emitted[-1][1] == [bytearray(b"z")]
    out.flush()  # nothing left: no emit
    assert emitted[-1][1] == [bytearray(b"z")]


@pytest.mark.parametrize("kind", RINGS)
def test_held_parts_round_the_end_of_the_ring_in_order(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import mmap

    turn = mmap.mmap(-1, 8)
    turn[:8] = (0).to_bytes(8, "little", signed=True)
    monkeypatch.setattr(workers, "_turn", turn)
    ring = _new_ring(kind, 100, turn)
    assert ring.put(1, [b"a" * 70], 70) == 0
    turn[:8] = (1).to_bytes(8, "little", signed=True)  # item 1 still held: [0, 70)
    parts = [b"b" * 10, bytearray(b"c" * 15)]
    assert ring.put(2, parts, 25) == 70  # [70, 95): after item 1
    assert ring.put(2, [memoryview(b"d" * 5), b"e" * 8], 13) is None  # would reach item 1
    turn[:8] = (2).to_bytes(8, "little", signed=True)  # item 1 written out
    assert ring.put(2, [memoryview(b"d" * 5), b"e" * 8], 13) == 95  # item 2 stays one run
    assert bytes(ring.mem[70:100]) == b"b" * 10 + b"c" * 15 + b"d" * 5
    assert bytes(ring.mem[:8]) == b"e" * 8  # round the end


def test_a_short_writev_writes_the_rest(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    # writev may take fewer bytes than given (a pipe, a signal): the rest still goes out,
    # in order, once
    real = os.writev

    def short(fd: int, parts) -> int:
        return real(fd, [memoryview(b"".join(parts))[:7]])

    monkeypatch.setattr(workers.os, "writev", short)
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        workers._writev_all(fd, [b"abcde", bytearray(b"fghij"), memoryview(b"klm")], 13)
        workers._writev_all(fd, [b"no", b"pq"], 4)  # whole: nothing after
    finally:
        os.close(fd)
    assert path.read_bytes() == b"abcdefghijklmnopq"


def test_dump_cuts_the_last_partition_of_a_dir_with_more_batches_than_the_fixed_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dump -j's hop budget grows with the dir: a fixed one ran out part-way through a big
    dir, leaving the later partitions whole (their text held ahead of its turn, spilled)."""
    from kafkalog_cli.commands import dump
    from kafkalog_cli.storage.disk import pieces
    from kafkalog_cli.storage.disk.logdir import open_target

    d = _generate(tmp_path / "ld", "--partitions", "4", "--records", "6000",
                  "--batch-records", "20", "--value-bytes", "300", "--codec", "none",
                  "--segment-bytes", str(1 << 30))
    parts = sorted(open_target(d).partitions(), key=lambda p: p.path.name)
    sizes = [p.log_bytes for p in parts]
    assert all(n >= 1 << 20 for n in sizes)  # 300 batches of ~6.5 KB (> HOP_BYTES) each
    monkeypatch.setattr(pieces, "MIN_PIECE", 1 << 16)
    monkeypatch.setattr(pieces, "PIECE_BYTES", 1 << 18)
    monkeypatch.setattr(dump, "HOPS", 10)  # far fewer than the dir's 1 200 batches
    dumper = dump.Dumper(None, True, True, str, dump.Filters(None, None, None, None, None,
                                                            None, "all"), 1 << 20)
    dumper.jobs = 2
    items = dumper.work_items(parts)
    for part, size in zip(parts, sizes, strict=True):
        mine = [x for x in items if getattr(x, "part", None) is part]
        assert len(mine) >= size // pieces.PIECE_BYTES, part.path.name  # cut to its end
        assert [x.start for x in mine[1:]] == [x.end for x in mine[:-1]]
        assert mine[0].start == 0 and mine[-1].end is None
