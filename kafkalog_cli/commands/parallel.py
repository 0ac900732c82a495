"""`-j/--jobs`: run one command's per-partition work in worker processes, in order.

`ordered(items, work, jobs)` yields `work(item)` for each item in the order of `items`,
as `map` would, and with `jobs` > 1 computes them in forked worker processes (the compiled
codecs hold the GIL: threads would not scale). What a worker prints is not printed by it:
its stdout bytes, stderr lines and the rows it hands the command's renderer are recorded,
and the parent replays them when that item's turn comes, so output is byte for byte, and in
order, that of `-j 1`. A worker's recording spills to a file in a private temp dir past
`SPILL` bytes, and at most `2 * jobs` items are in flight: memory stays bounded per worker.

The parent keeps what a worker cannot inherit: the log dir's `.lock` (fcntl locks belong to
one process; the parent holding it keeps a broker out), the terminal (the progress bar is
advanced as results arrive), and Ctrl-C (workers ignore SIGINT; the parent stops them all).
An exception in `work` reaches the parent after that item's output, as with `-j 1`.
"""

from __future__ import annotations

import functools
import io
import multiprocessing
import os
import pickle
import shutil
import signal
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO, TypeVar

from kafkalog_cli.output.live import screen
from kafkalog_cli.output.render import JsonlRenderer, Renderer, TextRenderer

T = TypeVar("T")
R = TypeVar("R")

SPILL = 4 << 20  # recorded bytes a worker holds in memory before it writes them to a file
_BATCH = 1 << 20  # events pickled to the spill file at a time


# -- the worker side ---------------------------------------------------------------------
class _Recording:
    """What one item printed, as ("out", bytes) / ("err", str) / ("row", dict) /
    ("text", str) events in order; in memory up to SPILL bytes, then in a spill file."""

    def __init__(self, spill_dir: str) -> None:
        self.events: list[tuple[str, Any]] = []
        self._size = 0
        self._dir = spill_dir
        self._file: BinaryIO | None = None
        self.path: str | None = None

    def add(self, kind: str, payload: Any, size: int) -> None:
        if kind == "out" and self.events and self.events[-1][0] == kind:
            self.events[-1][1].extend(payload)  # consecutive writes: one event
        else:
            self.events.append((kind, bytearray(payload) if kind == "out" else payload))
        self._size += size
        if self._size >= (_BATCH if self._file else SPILL):
            if self._file is None:
                fd, self.path = tempfile.mkstemp(dir=self._dir, suffix=".events")
                self._file = os.fdopen(fd, "wb")
            pickle.dump(self.events, self._file, pickle.HIGHEST_PROTOCOL)
            self.events, self._size = [], 0

    def finish(self) -> tuple[str | None, list[tuple[str, Any]]]:
        if self._file is not None:
            pickle.dump(self.events, self._file, pickle.HIGHEST_PROTOCOL)
            self._file.close()
            return self.path, []
        return None, self.events


class _Sink(io.RawIOBase):
    """A writable stream whose bytes become events of one kind."""

    def __init__(self, rec: _Recording, kind: str, tty: bool,
                 first: Any = None) -> None:
        super().__init__()
        self._rec, self._kind, self._tty, self._first = rec, kind, tty, first

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:  # as the stream it stands for: colours are decided the same
        return self._tty

    def write(self, b: Any, /) -> int:
        if self._first is not None:  # stdout written before this stays before it
            self._first.flush()
        data = bytes(b)
        if data:
            self._rec.add(self._kind, data if self._kind == "out" else data.decode(
                "utf-8", "surrogateescape"), len(data))
        return len(data)


class _RowRecorder(Renderer):
    """Stands in for a renderer that keeps state across rows (json's commas, csv's header,
    table's column widths): the rows go to the parent's renderer."""

    def __init__(self, rec: _Recording, out: BinaryIO) -> None:
        super().__init__(out)
        self._rec = rec

    def row(self, row: dict[str, Any]) -> None:
        self._rec.add("row", row, 256)

    def text(self, line: str) -> None:
        self._rec.add("text", line, len(line))

    def close(self) -> None:
        pass


# set in the parent before the pool forks: the workers inherit them (nothing is pickled)
_job: tuple[Sequence[Any], Callable[[Any], Any], Renderer | None, str] | None = None
_TTY = [False, False]  # whether the parent's stdout, stderr are terminals


def _start_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers
    screen.forget()  # the terminal and its bar are the parent's


def _run(i: int) -> tuple[str | None, list[tuple[str, Any]], Any, Any]:
    assert _job is not None
    items, work, renderer, spill_dir = _job
    rec = _Recording(spill_dir)
    # stderr flushes stdout first: the events keep the order they were written in
    out = io.BufferedWriter(_Sink(rec, "out", _TTY[0]), 1 << 16)
    errors = (getattr(sys.stdout, "errors", None) or "strict",
              getattr(sys.stderr, "errors", None) or "strict")  # the parent's (\\xNN)
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8",
                                  errors=errors[0], write_through=True)
    sys.stderr = io.TextIOWrapper(_Sink(rec, "err", _TTY[1], out),
                                  encoding="utf-8", errors=errors[1], write_through=True)
    restore: dict[str, Any] = {}
    if renderer is not None:
        restore = dict(vars(renderer))
        if type(renderer) in (TextRenderer, JsonlRenderer):  # no state: render here
            renderer.out = out
        else:
            stand_in = _RowRecorder(rec, out)
            renderer.row, renderer.text = stand_in.row, stand_in.text  # type: ignore
            renderer.out = stand_in.out
    value, error = None, None
    try:
        value = work(items[i])
    except BaseException as e:  # noqa: BLE001 - raised again in the parent, after the output
        error = _portable(e)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        out.flush()
        if renderer is not None:
            vars(renderer).clear()
            vars(renderer).update(restore)
    path, events = rec.finish()
    return path, events, value, error


def _portable(e: BaseException) -> Any:
    """`e` as it pickles when that gives it back whole (OSError keeps its errno and file
    name only so), else as its type, args and attributes (a KafkalogError subclass whose
    __init__ takes other arguments than its args)."""
    try:
        back = pickle.loads(pickle.dumps(e, pickle.HIGHEST_PROTOCOL))
        if type(back) is type(e) and str(back) == str(e):
            return e
    except Exception:  # noqa: BLE001, S110 - then its parts
        pass
    return type(e), e.args, {k: v for k, v in vars(e).items() if _picklable(v)}


def _picklable(v: Any) -> bool:
    try:
        pickle.dumps(v)
    except Exception:  # noqa: BLE001
        return False
    return True


def _rebuilt(p: Any) -> BaseException:
    if isinstance(p, BaseException):
        return p
    cls, args, attrs = p
    e: BaseException = cls.__new__(cls)
    e.args = args
    vars(e).update(attrs)
    return e


# -- the parent side ---------------------------------------------------------------------
def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _replay(events: list[tuple[str, Any]], renderer: Renderer | None) -> None:
    for kind, payload in events:
        if kind == "out":
            sys.stdout.flush()
            target = renderer.out if renderer is not None else sys.stdout.buffer
            target.write(payload)
        elif kind == "err":
            if screen.live:
                screen.err(payload)
            else:
                sys.stderr.write(payload)
        elif kind == "row":
            assert renderer is not None
            renderer.row(payload)
        else:
            assert renderer is not None
            renderer.text(payload)


def _replay_file(path: str, renderer: Renderer | None) -> None:
    with open(path, "rb") as f:
        while True:
            try:
                events = pickle.load(f)
            except EOFError:
                break
            _replay(events, renderer)
    os.unlink(path)


def ordered(items: Sequence[T], work: Callable[[T], R], jobs: int, *,
            renderer: Renderer | None = None,
            done: Callable[[T], None] | None = None) -> Iterator[R]:
    """`work(item)` for each of `items`, in order, over `jobs` processes (see the module
    doc). `renderer`: the command's renderer, which workers' rows reach through the parent;
    `done(item)` is called in the parent once an item's output is out (progress)."""
    jobs = min(jobs, len(items))
    if os.environ.get("KAFKALOG_CRASH_AT") or os.environ.get("KAFKALOG_FAIL_AT"):
        jobs = 1  # fault drills count crash points, and die, in one process (drills/faults.py)
    if jobs <= 1:
        for item in items:
            value = work(item)
            if done is not None:
                done(item)
            yield value
        return
    global _job
    sys.stdout.flush()
    sys.stderr.flush()
    if renderer is not None:
        renderer.out.flush()
    spill_dir = tempfile.mkdtemp(prefix="kafkalog-jobs-")
    _job = (items, work, renderer, spill_dir)
    _TTY[:] = [_isatty(sys.stdout), _isatty(sys.stderr)]
    # Ctrl-C held while the pool starts: raised before `try`, it would skip _kill, and the
    # pool's exit-time teardown waits forever for the task queue's lock an idle worker holds
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pool = multiprocessing.get_context("fork").Pool(jobs, initializer=_start_worker)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise
    finished = False
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a held Ctrl-C is raised here
        pending: deque[Any] = deque()
        nxt = 0
        for i in range(len(items)):
            while nxt < len(items) and len(pending) < 2 * jobs:
                pending.append(pool.apply_async(_run, (nxt,)))
                nxt += 1
            path, events, value, error = pending.popleft().get()
            if path is not None:
                _replay_file(path, renderer)
            else:
                _replay(events, renderer)
            if error is not None:
                raise _rebuilt(error)
            if done is not None:
                done(items[i])
            yield value
        pool.close()
        pool.join()
        finished = True
    finally:
        if finished:
            pool.terminate()
            pool.join()
        else:  # Ctrl-C, an error, a closed stdout: no worker outlives the run
            _kill(pool)
        _job = None
        shutil.rmtree(spill_dir, ignore_errors=True)


def _kill(pool: Any) -> None:
    """Kill the workers and drop the pool's own teardown: Pool.terminate joins its task
    thread, which blocks forever when a killed worker held the task queue's lock (seen under
    `| head -1`), and its worker thread forks new workers for killed ones until told to stop;
    the pool's threads are daemons and die with the process."""
    from multiprocessing.pool import TERMINATE

    pool._state = pool._worker_handler._state = TERMINATE  # no new workers from here
    pool._worker_handler.join(timeout=5)
    for p in pool._pool:
        p.kill()
    for p in pool._pool:
        p.join()
    pool._terminate.cancel()


def mapper(jobs: int) -> Callable[..., Iterator[Any]] | None:
    """`ordered` over `jobs` processes, for storage's work over partitions (None: -j 1,
    the storage code's own loop)."""
    return None if jobs <= 1 else functools.partial(ordered, jobs=jobs)
