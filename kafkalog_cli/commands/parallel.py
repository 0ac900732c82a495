"""`-j/--jobs`: run one command's per-partition work in worker processes, in order.

`ordered(items, work, jobs)` yields `work(item)` for each item in the order of `items`,
as `map` would, and with `jobs` > 1 computes them in forked worker processes (the compiled
codecs hold the GIL: threads would not scale). Output is byte for byte, and in order, that
of `-j 1`, in one of two ways:

- direct (stdout and stderr are files, pipes or a terminal without a bar, and the renderer,
  if any, keeps no state across rows: text, jsonl): the parent hands out turns, one item at
  a time, through a counter in shared memory; the worker whose item has the turn writes
  fd 1 and fd 2 itself. A worker ahead of its turn holds what it writes (in a ring of
  memory shared with the parent, `RING` bytes a worker; past that in memory up to `SPILL`
  bytes, then in a file in a private temp dir) and writes it out the moment its turn comes;
  one that finishes first hands it to the parent, which writes it out (from the ring, or
  the file by sendfile) when the turn comes. Writing is spread over the workers, not done by one
  process, and the pipe's reader slows the worker that has the turn, as it would `-j 1`.
- replay (a progress bar owns the terminal, a renderer keeps state: json's commas, csv's
  header, table's widths, or stdout is not a file descriptor): a worker records its stdout
  bytes, stderr lines and rows as events, spilled the same way, and the parent replays
  them through the bar and the renderer when that item's turn comes.

The workers are commands/workers.py, imported only when a run starts them. At most
`WINDOW * jobs` items are in flight, and what an item holds in memory is bounded:
memory stays bounded per worker (a worker far ahead of the turn spills to disk).

The parent keeps what a worker cannot inherit: the log dir's `.lock` (fcntl locks belong to
one process; the parent holding it keeps a broker out), the progress bar (advanced as
results arrive), and Ctrl-C (workers ignore SIGINT; the parent stops them all). An
exception in `work` reaches the parent after that item's output, as with `-j 1`: a closed
stdout is a BrokenPipeError in the worker that had the turn, raised again in the parent.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from kafkalog_cli.output.render import Renderer
from kafkalog_cli.storage.disk import naming, pieces
from kafkalog_cli.storage.disk.segment import Segment

T = TypeVar("T")
R = TypeVar("R")


def ordered(items: Sequence[T], work: Callable[[T], R], jobs: int, *,
            renderer: Renderer | None = None,
            done: Callable[[T], None] | None = None, small: bool = False,
            finish_started: bool = False, by_records: bool = True) -> Iterator[R]:
    """`work(item)` for each of `items`, in order, over `jobs` processes (see the module
    doc). `renderer`: the command's renderer, which workers' rows reach through the parent;
    `done(item)` is called in the parent once an item's output is out (progress). `small`:
    what an item prints and returns is small (verify's findings, index-rebuild's rows), so
    every item may be in flight at once, the biggest first: no worker is left alone with a
    big partition at the end while the other idles. `finish_started` (commands that change
    partitions): after an error, or a worker's death, no item starts any more, but those
    started in other workers are finished, each a whole partition; Ctrl-C still stops every
    worker at once. `by_records`: items are weighed by their records too (item_weight), not
    their bytes alone (work that costs by the byte: reading, CRCs)."""
    jobs = min(jobs_for(items, jobs), len(items))
    if os.environ.get("KAFKALOG_CRASH_AT") or os.environ.get("KAFKALOG_FAIL_AT"):
        jobs = 1  # fault drills count crash points, and die, in one process (drills/faults.py)
    if jobs <= 1:
        for item in items:
            value = work(item)
            if done is not None:
                done(item)
            yield value
        return
    # workers.py (and pickle) only when there are workers: most runs of a small dir have none
    from kafkalog_cli.commands import workers

    yield from workers.ordered(items, work, jobs, renderer=renderer, done=done, small=small,
                               finish_started=finish_started, by_records=by_records)


class Auto(int):
    """-j's default: every core, but one process where the partitions hold less than
    AUTO_BYTES of `.log` data in all. An N given on the command line is taken as it is."""


# below this, workers cost more time to start and feed than they save (measured on 2 cores:
# a 0.3 MB dir took 0.36 s to recover at -j 2, 0.20 s at -j 1; at 14 MB verify breaks even)
AUTO_BYTES = 2 << 20


def jobs_for(items: Sequence[Any], jobs: int) -> int:
    """The processes to run `items` on: `jobs`, or 1 for the default on a small dir (a
    remote partition, whose size this does not know, counts as a big one). A plain int, so
    that a second call (dump decides before it cuts, `ordered` again) reads no sizes."""
    if not isinstance(jobs, Auto) or jobs <= 1:
        return int(jobs)
    return int(jobs) if holds_at_least(items, AUTO_BYTES, unknown=AUTO_BYTES) else 1


def holds_at_least(items: Sequence[Any], n: int, unknown: int = 0) -> bool:
    """Whether `items` hold `n` bytes of `.log` data or more (item_bytes), an item whose size
    is not known counted as `unknown` bytes; stops reading sizes once it knows."""
    total = 0
    for item in items:
        size = item_bytes(item)
        total += unknown if size is None else size
        if total >= n:
            return True
    return False


def item_bytes(item: Any) -> int | None:
    """A partition's `.log` bytes (of any format), a run of partitions' (commands/chunked.py),
    else None: what -j's planning weighs items by."""
    parts = item if isinstance(item, list) else [item]
    sizes = [getattr(p, "log_bytes", None) for p in parts]
    return sum(sizes) if parts and all(isinstance(n, int) for n in sizes) else None


RECORD_BYTES = 2048  # what -j's planning counts a record as, besides its bytes on disk
SAMPLED = 1 << 20  # a smaller partition is weighed by its bytes (a sample costs two syscalls)


def item_weight(item: Any) -> int | None:
    """`item_bytes`, plus RECORD_BYTES for each record its partitions' first batches suggest
    they hold (None where item_bytes is): decoding and printing cost by the record, and a
    compressed partition holds several times the records of an uncompressed one its size,
    so that by bytes alone the biggest went last."""
    total = item_bytes(item)
    if total is None:
        return None
    for part in item if isinstance(item, list) else [item]:
        seg = getattr(part, "seg", None)  # dump's piece of a partition
        start = getattr(part, "start", 0)
        if seg is None:
            seg = next((s for s in getattr(part, "segments", ()) if s.listed_bytes), None)
        if isinstance(seg, Segment) and part.log_bytes >= SAMPLED:
            density = pieces.records_per_byte(seg.file(naming.LOG), start)
            total += round(RECORD_BYTES * density * part.log_bytes)
    return total


def mapper(jobs: int, finish_started: bool = False) -> Callable[..., Iterator[Any]] | None:
    """`ordered` over `jobs` processes, for storage's work over partitions (None: -j 1,
    the storage code's own loop)."""
    return None if jobs <= 1 else functools.partial(ordered, jobs=jobs,
                                                    finish_started=finish_started)
