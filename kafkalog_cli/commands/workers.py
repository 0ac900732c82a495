"""-j's workers (commands/parallel.py's module doc says what they do): forked processes
fed item indexes through one shared task pipe, each item's output held until its turn or
written at it, results handed back as pickled frames. Imported only when a run starts
workers.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import io
import mmap
import os
import pickle
import select
import shutil
import signal
import stat
import sys
import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO, TypeVar

from kafkalog_cli._speedups import compiled
from kafkalog_cli.commands.parallel import item_bytes, item_weight
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.output.live import screen
from kafkalog_cli.output.render import JsonlRenderer, Renderer, TextRenderer

# the hot path of direct mode in C (_Sink's gathering, _Ring, _Turn: the same bytes to the
# same places); None: the Python classes here
_fastout = compiled("fastout")

T = TypeVar("T")
R = TypeVar("R")

SPILL = 1 << 20  # bytes an item holds in memory before it writes them to a file (big: sendfile)
RING = 64 << 20  # bytes of shared memory per worker for output held ahead of its turn (_Ring)
_BATCH = 1 << 20  # events pickled to the spill file at a time
GATHER = 1 << 16  # bytes of small writes a worker's stdout gathers before handing them on
PASS = 1 << 13  # a write this big is handed on as it is, not copied into the gathered bytes
WINDOW = 4  # items in flight per worker: a short item need not wait for a long one
MAX_IN_FLIGHT = 4096  # items handed out ahead of the one whose turn it is

# -- the worker side ---------------------------------------------------------------------
class _Ring:
    """A worker's share of memory for output held ahead of its turn, mapped before the fork
    so that the parent writes it out from there (no copy through a pickle or a spill file:
    spilling half of a big dump's output cost a sixth of its CPU, in page allocation and
    the file system). Written as a ring: a region is free again once the parent's turn
    counter has passed the item that wrote it, as the parent has then written it out."""

    def __init__(self, mem: mmap.mmap) -> None:
        self.mem = mem
        self.head = 0  # bytes ever written; a byte's place is its position modulo the size
        self._regions: deque[list[int]] = deque()  # [item, start, end], in the order written

    def put(self, item: int, parts: Sequence[Any], n: int) -> int | None:
        """Copy `parts` (buffers of bytes, `n` in all) in, one after the other, for `item`;
        the position of their first byte (None: no room)."""
        size = len(self.mem)
        while self._regions and self._regions[0][0] < _turn_now():
            self._regions.popleft()
        # back to the ring's start where [0, n) is free (never within an item's run: the
        # parent writes that out as one): the pages written stay about as many as are held
        # at once (a page's first write is a fault, and they share the cache with the
        # decoding), not the whole ring
        lap = self.head + -self.head % size
        if not self._regions:
            tail = self.head = lap
        else:
            tail = self._regions[0][1]
            if self._regions[-1][0] != item and lap - tail + n <= size:
                self.head = lap
        if n > size - (self.head - tail):
            return None
        start, mem = self.head, self.mem
        for data in parts:
            k = _nbytes(data)
            at = self.head % size
            first = min(k, size - at)
            if first == k:
                mem[at:at + k] = data
            else:  # round the end of the ring
                view = memoryview(data).cast("B")
                mem[at:at + first] = view[:first]
                mem[:k - first] = view[first:]
            self.head += k
        if self._regions and self._regions[-1][0] == item:
            self._regions[-1][2] = self.head
        else:
            self._regions.append([item, start, self.head])
        return start


def _write_ring(k: int, start: int, n: int, fd: int) -> None:
    """n bytes of worker k's ring from position `start` to `fd` (in this process's mapping)."""
    assert _rings is not None
    mem = _rings[k]
    at = start % len(mem)
    first = min(n, len(mem) - at)
    with memoryview(mem) as view:  # released: the map is closed at the end of the run
        _write_all(fd, view[at:at + first])
        if first < n:
            _write_all(fd, view[:n - first])


class _Held:
    """Bytes for fd 1 and fd 2 written before their item's turn, in order: kept as runs of
    (fd, length) over one byte stream, in the worker's ring while it has room (`_Ring`),
    then in memory up to SPILL bytes, then in a spill file. Pickles (to the parent) as the
    runs, the ring's part and the bytes or the file's path."""

    def __init__(self, spill_dir: str, item: int = -1) -> None:
        self.runs: list[list[int]] = []
        self.mem: bytearray | None = bytearray()
        self.path: str | None = None
        self.ring = -1  # the worker whose ring holds the stream's first ring_len bytes
        self.ring_start = self.ring_len = 0
        self._item = item
        self._dir = spill_dir
        self._file: BinaryIO | None = None

    def add(self, fd: int, parts: Sequence[Any], n: int) -> None:
        """`parts` (buffers, `n` bytes in all) for `fd`, after what was added before."""
        if self.runs and self.runs[-1][0] == fd:
            self.runs[-1][1] += n
        else:
            self.runs.append([fd, n])
        if _ring is not None and self.mem is not None and not self.mem and self._item >= 0:
            at = _ring.put(self._item, parts, n)
            if at is not None:  # the ring part is a prefix: once refused, never again
                if not self.ring_len:
                    self.ring, self.ring_start = _me, at
                self.ring_len += n
                return
            self._item = -1
        if self.mem is not None and len(self.mem) + n <= SPILL:
            for data in parts:
                self.mem += data
            return
        if self._file is None:
            handle, self.path = _spill_file(self._dir, ".out")
            self._file = os.fdopen(handle, "wb")
            self._file.write(self.mem or b"")
            self.mem = None
        for data in parts:
            self._file.write(data)

    def __getstate__(self) -> dict[str, Any]:
        if self._file is not None:
            self._file.close()
        return {"runs": self.runs, "mem": self.mem, "path": self.path, "ring": self.ring,
                "ring_start": self.ring_start, "ring_len": self.ring_len}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _item=-1, _dir="", _file=None)

    def write_out(self) -> None:
        """Write the runs to their fds, in order (the file is then deleted)."""
        if self._file is not None:
            self._file.close()
        ring_pos, ring_left = self.ring_start, self.ring_len
        f = open(self.path, "rb") if self.path is not None else None  # noqa: SIM115
        try:
            pos = 0  # in what follows the ring's part
            for fd, n in self.runs:
                k = min(n, ring_left)
                if k:
                    _write_ring(self.ring, ring_pos, k, fd)
                    ring_pos, ring_left, n = ring_pos + k, ring_left - k, n - k
                if not n:
                    continue
                if f is not None:
                    _copy(f.fileno(), fd, pos, n)
                else:
                    assert self.mem is not None
                    _write_all(fd, memoryview(self.mem)[pos:pos + n])
                pos += n
        finally:
            if f is not None:
                f.close()
                os.unlink(f.name)


def _spill_file(spill_dir: str, suffix: str) -> tuple[int, str]:
    """A new file in the run's private temp dir, which the first spill of any worker
    creates: a run that holds no more than SPILL bytes an item makes nothing outside the
    log dir (and a killed one leaves nothing behind)."""
    try:
        os.mkdir(spill_dir, 0o700)
    except FileExistsError:  # another worker's: the name is random, so it is ours
        st = os.lstat(spill_dir)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise
    return tempfile.mkstemp(dir=spill_dir, suffix=suffix)


def _write_all(fd: int, data: Any) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _writev_all(fd: int, parts: Sequence[Any], n: int) -> None:
    """`parts` (buffers, `n` bytes in all) to `fd`: one writev where the fd takes them all
    at once (no copy into one buffer first)."""
    done = os.writev(fd, parts)
    if done == n:
        return
    for i, data in enumerate(parts):
        k = _nbytes(data)
        if done < k:  # a short write (a pipe, a signal): the rest one by one
            _write_all(fd, memoryview(data).cast("B")[done:])
            for rest in parts[i + 1:]:
                _write_all(fd, rest)
            return
        done -= k


def _nbytes(data: Any) -> int:
    return len(data) if isinstance(data, (bytes, bytearray)) else memoryview(data).nbytes


def _copy(src: int, fd: int, pos: int, n: int) -> None:
    """n bytes of file `src` from `pos` to `fd`: sendfile (no copy through this process),
    or read and write where the kernel cannot (an O_APPEND file, some old kernels)."""
    end = pos + n
    try:
        while pos < end:
            sent = os.sendfile(fd, src, pos, min(end - pos, 1 << 30))
            if not sent:
                raise OSError(errno.EIO, "spill file shorter than written")
            pos += sent
        return
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise
    while pos < end:
        chunk = os.pread(src, min(end - pos, 1 << 20), pos)
        if not chunk:
            raise OSError(errno.EIO, "spill file shorter than written")
        _write_all(fd, chunk)
        pos += len(chunk)


class _Turn:
    """One item's output in direct mode: held until the parent's turn counter reaches the
    item, written straight to the fds from then on."""

    def __init__(self, i: int, spill_dir: str) -> None:
        self._i = i
        self.held: _Held | None = _Held(spill_dir, i)

    def _mine(self) -> bool:
        if self.held is not None and _turn is not None and _turn_now() == self._i:
            held, self.held = self.held, None
            held.write_out()
        return self.held is None

    def add(self, fd: int, parts: Sequence[Any], n: int) -> None:
        held = self.held  # (once per write of every batch: kept to few calls)
        if held is not None:
            if _turn_now() != self._i:
                held.add(fd, parts, n)
                return
            self.held = None
            held.write_out()
        _writev_all(fd, parts, n)

    def finish(self) -> _Held | None:
        """What the parent must write when the turn comes (None: nothing)."""
        if self._mine():
            return None
        assert self.held is not None
        return self.held if self.held.runs else None


class _Recording:
    """What one item printed, as ("out", bytes) / ("err", str) / ("row", dict) /
    ("text", str) events in order; in memory up to SPILL bytes, then in a spill file."""

    def __init__(self, spill_dir: str) -> None:
        self.events: list[tuple[str, Any]] = []
        self._size = 0
        self._dir = spill_dir
        self._file: BinaryIO | None = None
        self.path: str | None = None

    def add(self, kind: str, payload: Any, size: int | None = None) -> None:
        """An event; "out" and "err" take the bytes written (a buffer)."""
        size = len(payload) if size is None else size
        if kind == "err":
            payload = bytes(payload).decode("utf-8", "surrogateescape")
        if kind == "out" and self.events and self.events[-1][0] == kind:
            self.events[-1][1].extend(payload)  # consecutive writes: one event
        elif kind == "out":
            self.events.append((kind, bytearray(payload)))
        else:
            self.events.append((kind, payload))
        self._size += size
        if self._size >= (_BATCH if self._file else SPILL):
            if self._file is None:
                fd, self.path = _spill_file(self._dir, ".events")
                self._file = os.fdopen(fd, "wb")
            pickle.dump(self.events, self._file, pickle.HIGHEST_PROTOCOL)
            self.events, self._size = [], 0

    def add_parts(self, kind: str, parts: Sequence[Any], n: int) -> None:
        for data in parts:
            self.add(kind, data)

    def finish(self) -> str | list[tuple[str, Any]]:
        """The spill file's path, or the events."""
        if self._file is not None:
            pickle.dump(self.events, self._file, pickle.HIGHEST_PROTOCOL)
            self._file.close()
            assert self.path is not None
            return self.path
        return self.events


Emit = Callable[[Sequence[Any], int], None]  # takes buffers and their length in all


class _Sink(io.RawIOBase):
    """A writable stream whose bytes go to `emit`: with `gather`, writes under PASS bytes
    are gathered up to that many, and a bigger one goes on as it is, with what was
    gathered before it, in one emit (stdout: most of a dump's output is chunks of record
    text, which a buffer would copy once more); without, each write goes on at once."""

    def __init__(self, emit: Emit, tty: bool, first: _Sink | None = None,
                 gather: int = 0) -> None:
        super().__init__()
        self._emit, self._tty, self._first, self._gather = emit, tty, first, gather
        self._buf = bytearray()
        if gather and first is None and _fastout is not None:  # the same, compiled
            fast = _fastout.Gather(emit, gather, PASS)
            self.write, self.flush = fast.write, fast.flush  # type: ignore[method-assign]

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:  # as the stream it stands for: colours are decided the same
        return self._tty

    def write(self, b: Any, /) -> int:
        if self._first is not None:  # stdout written before this stays before it
            self._first.flush()
        n = _nbytes(b)
        if n < PASS and self._gather:
            self._buf += b
            if len(self._buf) >= self._gather:
                self.flush()
        elif self._buf:
            held, self._buf = self._buf, bytearray()
            self._emit((held, b), len(held) + n)
        elif n:
            self._emit((b,), n)
        return n

    def flush(self) -> None:
        if self._buf:
            held, self._buf = self._buf, bytearray()
            self._emit((held,), len(held))


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
_FDS: tuple[int, int] | None = None  # stdout's and stderr's fds in direct mode, else None
# direct mode: the item whose output may be written, an int64 in memory shared with the
# workers (anonymous mmap, inherited by fork); only the parent writes it, and it only grows
_turn: mmap.mmap | None = None
_turn_view: memoryview | None = None  # a worker's view of it as an int64 (read per write)
# direct mode: each worker's ring (_Ring), mapped before the fork; in a worker, its own
# (_ring) and its index (_me)
_rings: list[mmap.mmap] | None = None
_ring: Any = None  # _Ring, or its compiled twin
_me = -1
# the highest item index a worker may still start, an int64 shared the same way: an item
# that fails lowers it to its own index (those after it would not run at -j 1), the
# parent's finish to -1 (finish_started: no item starts, those started are finished)
_limit: mmap.mmap | None = None


def _lower_limit(i: int) -> None:
    if _limit is not None and i < int.from_bytes(_limit[:8], "little", signed=True):
        _limit[:8] = i.to_bytes(8, "little", signed=True)


def _turn_now() -> int:
    if _turn_view is not None:
        return _turn_view[0]
    assert _turn is not None
    return int.from_bytes(_turn[:8], "little", signed=True)


def _start_worker(k: int) -> None:
    """In worker k, once forked."""
    global _me, _ring, _turn_view
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers
    screen.forget()  # the terminal and its bar are the parent's
    if _rings is not None:
        _me = k
        _ring = _Ring(_rings[k]) if _fastout is None else _fastout.Ring(_rings[k], _turn)
    if _turn is not None and sys.byteorder == "little":  # (as the parent writes it)
        _turn_view = memoryview(_turn).cast("q")


def _run(i: int) -> tuple[Any, Any, Any]:
    """Item i in a worker: (its held output: a _Held, the path of a spilled _Recording
    or the events of one, or None), the value, the error."""
    assert _job is not None
    items, work, renderer, spill_dir = _job
    emit_out: Emit
    emit_err: Emit
    if _FDS is not None:
        turn = _new_turn(i, spill_dir)
        emit_out = functools.partial(turn.add, _FDS[0])
        emit_err = functools.partial(turn.add, _FDS[1])
    else:
        rec = _Recording(spill_dir)
        emit_out = functools.partial(rec.add_parts, "out")
        emit_err = functools.partial(rec.add_parts, "err")
    # stderr flushes stdout first: the output keeps the order it was written in
    out = _Sink(emit_out, _TTY[0], gather=GATHER)
    errors = (getattr(sys.stdout, "errors", None) or "strict",
              getattr(sys.stderr, "errors", None) or "strict")  # the parent's (\\xNN)
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8",
                                  errors=errors[0], write_through=True)
    sys.stderr = io.TextIOWrapper(_Sink(emit_err, _TTY[1], out),
                                  encoding="utf-8", errors=errors[1], write_through=True)
    restore: dict[str, Any] = {}
    if renderer is not None:
        restore = dict(vars(renderer))
        if _stateless(renderer):  # render here
            renderer.out = out
        else:
            assert _FDS is None
            stand_in = _RowRecorder(rec, out)
            renderer.row, renderer.text = stand_in.row, stand_in.text  # type: ignore
            renderer.out = stand_in.out
    value, error = None, None
    try:
        try:
            value = work(items[i])
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            out.flush()
    except BaseException as e:  # noqa: BLE001 - raised again in the parent, after the output
        error = _portable(e)
    finally:
        if renderer is not None:
            vars(renderer).clear()
            vars(renderer).update(restore)
    try:  # writing what was held can meet a closed stdout too: that is this item's error
        held = turn.finish() if _FDS is not None else rec.finish()
    except BaseException as e:  # noqa: BLE001 - as above
        held = None
        error = error or _portable(e)
    return held, value, error


def _new_turn(i: int, spill_dir: str) -> Any:
    """Item i's _Turn, or its compiled twin (which copies into the ring itself: its _Held
    takes only what the ring refuses)."""
    if _fastout is None:
        return _Turn(i, spill_dir)
    ring = _ring if isinstance(_ring, _fastout.Ring) else None
    return _fastout.Turn(i, _Held(spill_dir), ring, _turn, _me)


def _stateless(renderer: Renderer) -> bool:
    """A renderer whose rows render alone (in a worker, not through the parent)."""
    return type(renderer) in (TextRenderer, JsonlRenderer)


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
            done: Callable[[T], None] | None = None, small: bool = False,
            finish_started: bool = False, by_records: bool = True) -> Iterator[R]:
    """parallel.ordered with `jobs` > 1 (at most one per item): the workers started, fed,
    and their results and output taken in, in order."""
    global _job, _FDS, _turn, _limit, _rings
    sys.stdout.flush()
    sys.stderr.flush()
    if renderer is not None:
        renderer.out.flush()
    # made by the first spill, if any (_spill_file); a random name, as mkdtemp's
    spill_dir = os.path.join(tempfile.gettempdir(), "kafkalog-jobs-" + os.urandom(8).hex())
    _job = (items, work, renderer, spill_dir)
    _TTY[:] = [_isatty(sys.stdout), _isatty(sys.stderr)]
    _FDS = _direct_fds(renderer)
    if _FDS is not None:
        _turn = mmap.mmap(-1, 8)
        _turn[:8] = (-1).to_bytes(8, "little", signed=True)
        _rings = _map_rings(jobs)
    _limit = mmap.mmap(-1, 8)
    _limit[:8] = len(items).to_bytes(8, "little", signed=True)
    # Ctrl-C held while the workers start: raised before `try`, it would leave them running
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    gc.freeze()  # the collector in a worker would touch, so copy, every inherited object
    try:
        pool = _Workers(jobs, mask)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise
    finally:
        gc.unfreeze()
    finished = finish = False
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a held Ctrl-C is raised here
        window = min(len(items) if small else WINDOW * jobs, MAX_IN_FLIGHT)
        order = _dispatch_order(items, window, item_weight if by_records else item_bytes)
        nxt = 0
        for i in range(len(items)):
            while nxt < len(items) and nxt - i < window:
                pool.submit(order[nxt])
                nxt += 1
            if _turn is not None:  # what the caller printed since goes first
                _flush(renderer)
                _turn[:8] = i.to_bytes(8, "little", signed=True)
            held, value, error = pool.result(i)
            if isinstance(held, _Held):
                held.write_out()
            elif isinstance(held, str):
                _replay_file(held, renderer)
            elif held is not None:
                _replay(held, renderer)
            if error is not None:
                raise _rebuilt(error)
            if done is not None:
                done(items[i])
            yield value
        finished = True
    except KeyboardInterrupt:
        raise
    except BaseException:
        finish = finish_started  # an error, a dead worker: started partitions are finished
        raise
    finally:
        # done: each worker exits at the end of the task pipe; else (Ctrl-C, an error, a
        # closed stdout) no worker outlives the run
        if finished:
            pool.close()
        elif finish:
            _lower_limit(-1)
            pool.finish()
        else:
            pool.kill()
        if _turn is not None:
            _turn.close()
        _limit.close()
        for ring in _rings or ():
            # a write that failed (a closed stdout) leaves views of it in its traceback:
            # the map then goes with the last of them
            with contextlib.suppress(BufferError):
                ring.close()
        _job = _FDS = _turn = _limit = _rings = None
        shutil.rmtree(spill_dir, ignore_errors=True)


def _map_rings(jobs: int) -> list[mmap.mmap] | None:
    """A ring for each worker (shared, anonymous: pages are taken as they are first written);
    None where the system refuses the mappings (held output then spills as before)."""
    rings: list[mmap.mmap] = []
    try:
        for _ in range(jobs):
            rings.append(mmap.mmap(-1, RING))
    except (OSError, ValueError):
        for ring in rings:
            ring.close()
        return None
    return rings


def _dispatch_order(items: Sequence[Any], window: int,
                    weigh: Callable[[Any], int | None] = item_weight) -> list[int]:
    """The order items go to workers: theirs, but the last `window` (all in flight at
    once near the end) heaviest first (by `weigh`), so that no worker is left
    alone with a big partition while the others idle (their output is held until its turn:
    in order all the same)."""
    order = list(range(len(items)))
    tail = order[-window:]
    sizes = [weigh(items[i]) for i in tail]
    if None not in sizes:
        by_size = dict(zip(tail, sizes, strict=True))
        tail.sort(key=lambda i: -by_size[i])  # type: ignore[operator]
        order[-window:] = tail
    return order


def _direct_fds(renderer: Renderer | None) -> tuple[int, int] | None:
    """Stdout's and stderr's fds when workers may write them themselves (module doc)."""
    if screen.live:
        return None
    if renderer is not None and not (
            _stateless(renderer) and renderer.out is getattr(sys.stdout, "buffer", None)):
        return None
    try:
        return sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a StringIO (tests), a closed stream
        return None


def _flush(renderer: Renderer | None) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    if renderer is not None:
        renderer.out.flush()


class _Workers:
    """`jobs` forked processes, each running `_run(i)` for the item indexes it reads from one
    shared task pipe (4-byte writes and reads: atomic, so each index goes to one worker) and
    writing (i, result) frames back on a pipe of its own. A few forks and pipes: a
    multiprocessing pool cost ~30 ms of start-up more (its import, its three threads), and
    killing one mid-run meant reaching into its internals."""

    def __init__(self, jobs: int, mask: Any) -> None:
        self._pids: dict[int, int] = {}  # result pipe's fd -> worker pid
        self._dead: list[int] = []  # workers that left before the task pipe's end
        self._bufs: dict[int, bytearray] = {}
        self._done: dict[int, tuple[Any, Any, Any]] = {}
        tasks_r, self._tasks = os.pipe()
        try:
            parent = os.getpid()
            for k in range(jobs):
                r, w = os.pipe()
                try:
                    pid = os.fork()
                except BaseException:
                    os.close(r)
                    os.close(w)
                    raise
                if pid == 0:  # the worker: never returns into the caller's code
                    code = 1
                    try:
                        os.close(r)
                        os.close(self._tasks)
                        for fd in self._pids:
                            os.close(fd)
                        _die_with(parent)
                        _start_worker(k)
                        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                        _serve(tasks_r, w, parent)
                        code = 0
                    finally:
                        os._exit(code)
                os.close(w)
                self._pids[r] = pid
                self._bufs[r] = bytearray()
        except BaseException:
            self.kill()
            raise
        finally:
            os.close(tasks_r)
        os.set_blocking(self._tasks, False)  # the workers' end (another description) blocks
        self._poll = select.poll()
        for fd in self._pids:
            self._poll.register(fd, select.POLLIN)
        self._open = set(self._pids)  # result pipes not yet at their end

    def submit(self, i: int) -> None:
        """Hand item i to the first worker free. The task pipe does not block: while it is
        full, the workers' results are read (a worker waiting to write one reads no task)."""
        while self._tasks >= 0:  # (closed once a worker died: nothing more starts)
            try:
                os.write(self._tasks, i.to_bytes(4, "little"))  # <= PIPE_BUF: all or nothing
                return
            except BlockingIOError:
                self._pump(room=True)
            except BrokenPipeError:  # no worker left to read it; not stdout's reader gone
                raise _died("every worker process") from None

    def result(self, i: int) -> tuple[Any, Any, Any]:
        """Item i's (held output, value, error), waiting for it; once a worker has died,
        the items before the first that never comes back are still given, as at -j 1 up to
        a failing item, then the error."""
        while i not in self._done:
            if not self._open:  # every worker gone: i was the dead one's
                raise _died(f"worker process {self._dead[0]}")
            self._pump()
        return self._done.pop(i)

    def _pump(self, room: bool = False) -> None:
        """Wait for results and take them in; with `room`, return also once the task pipe
        can take more."""
        tasks = self._tasks
        if room:
            self._poll.register(tasks, select.POLLOUT)
        try:
            events = self._poll.poll()
        finally:
            if room:
                self._poll.unregister(tasks)
        for fd, _ev in events:
            if fd == tasks:
                continue  # room, or no reader left: the next write tells
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self._left(fd)
                continue
            buf = self._bufs[fd]
            buf += chunk
            while len(buf) >= 8:
                n = int.from_bytes(buf[:8], "little")
                if len(buf) < 8 + n:
                    break
                j, got = pickle.loads(memoryview(buf)[8:8 + n])
                del buf[:8 + n]
                self._done[j] = got

    def _left(self, fd: int) -> None:
        """Worker fd's result pipe is at its end. Before the task pipe's, that is a worker
        killed (the OOM killer, an operator) with its item: no item starts any more, those
        the others have started finish and come back (result() then stops at the gap)."""
        self._poll.unregister(fd)
        self._open.discard(fd)
        if self._tasks >= 0:
            self._dead.append(self._pids[fd])
            _lower_limit(-1)  # the items still in the task pipe are skipped
            self._end_tasks()  # ... and the workers then read its end and leave

    def _end_tasks(self) -> None:
        """Close the task pipe, once: each worker reads its end and leaves."""
        if self._tasks >= 0:
            os.close(self._tasks)
            self._tasks = -1

    def close(self) -> None:
        """No more tasks: the workers read the pipe's end, exit, and are reaped."""
        with _no_interrupt():
            self._end_tasks()
            self._reap()

    def finish(self) -> None:
        """After an error (the caller has set _limit): the items started are finished, their
        results read and dropped (a worker blocked writing one would never exit), no other
        starts; the workers then exit and are reaped. Ctrl-C meanwhile kills them."""
        try:
            self._end_tasks()
            while self._open:
                for fd, _ev in self._poll.poll():
                    if fd in self._open and not os.read(fd, 1 << 20):
                        self._left(fd)  # (the task pipe closed: no worker counts as dead)
        except BaseException:
            self._tasks = -1
            self.kill()
            raise
        with _no_interrupt():
            self._reap()

    def kill(self) -> None:
        # a second Ctrl-C here must not leave a worker running on after the parent (and
        # its .lock) are gone: it is raised once every worker is reaped
        with _no_interrupt():
            for pid in self._pids.values():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self._end_tasks()
            self._reap()

    def _reap(self) -> None:
        for fd, pid in self._pids.items():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            os.close(fd)
        self._pids = {}


def _died(who: str) -> KafkalogError:
    return KafkalogError(f"-j: {who} died (killed, or out of memory?); the run is incomplete")


@contextlib.contextmanager
def _no_interrupt() -> Iterator[None]:
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _die_with(parent: int) -> None:
    """A worker is killed when the parent dies (Linux's PR_SET_PDEATHSIG): a mutating item
    must not go on once the parent, and the .lock it holds, are gone (each item is
    crash-safe: a kill mid-item is what the drills test). Elsewhere _serve's check between
    items is what remains."""
    try:
        fast = compiled("fastscan")
        if fast is not None and hasattr(fast, "die_with_parent"):
            fast.die_with_parent(signal.SIGKILL)
        else:  # ctypes costs a worker ~5 ms to import
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError, ImportError):
        return
    if os.getppid() != parent:  # it died before the call took effect
        os._exit(1)


def _serve(tasks: int, results: int, parent: int) -> None:
    """A worker's loop: item indexes in, (index, _run's result) frames out, until the end.
    Whatever goes wrong with an item is its error, in a frame: a worker that exits without
    one is one that died."""
    while True:
        b = os.read(tasks, 4)
        if not b or os.getppid() != parent:
            return
        i = int.from_bytes(b, "little")
        assert _limit is not None
        if i > int.from_bytes(_limit[:8], "little", signed=True):
            continue  # after an item that failed: the parent stops before it needs this one
        try:
            got = _run(i)
        except BaseException as e:  # noqa: BLE001 - sent to the parent, as _run's are
            got = (None, None, _portable(e))
        if got[2] is not None:
            _lower_limit(i)
        try:
            frame = pickle.dumps((i, got), pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # noqa: BLE001 - what does not pickle (a value, a row)
            try:  # the output still goes out, then the error
                frame = pickle.dumps((i, (got[0], None, _portable(e))), pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - the held rows themselves
                frame = pickle.dumps((i, (None, None, _portable(e))), pickle.HIGHEST_PROTOCOL)
        _write_all(results, len(frame).to_bytes(8, "little") + frame)
