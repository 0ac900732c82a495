"""`-j` over many small partitions: consecutive ones handed to a worker as one work item.

A worker process's item costs a few hundred microseconds of queueing, pickling and replay
whatever its size; on 2 000 partitions of 14 KB that was more than the work itself (`info -j 2`
took twice `-j 1`'s time). Runs of partitions are grouped until they hold CHUNK_BYTES of
`.log` data (or CHUNK_ITEMS partitions), so a large partition stays an item of its own and the
workers stay balanced; up to FEW partitions go one by one, as before. Results, output and
`done` calls come per partition, in order, as `parallel.ordered` gives them (an exception
from the work of one still ends the run after that partition's output; the values of the
partitions before it in its run are not yielded, as no caller goes on after it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from kafkalog_cli.commands import parallel

T = TypeVar("T")
R = TypeVar("R")

CHUNK_BYTES = 1 << 20
CHUNK_ITEMS = 256
FEW = 64  # up to this many items, one each: their overhead is small


def _size(part: Any) -> int:
    return parallel.item_bytes(part) or 0  # every format's partition has log_bytes


def chunks(items: Sequence[T], size: Callable[[T], int] = _size) -> list[list[T]]:
    """`items` in runs of consecutive ones, each under CHUNK_BYTES but for its last one."""
    out: list[list[T]] = []
    run: list[T] = []
    held = 0
    for item in items:
        run.append(item)
        held += size(item)
        if held >= CHUNK_BYTES or len(run) >= CHUNK_ITEMS:
            out.append(run)
            run, held = [], 0
    if run:
        out.append(run)
    return out


def ordered(items: Sequence[T], work: Callable[[T], R], jobs: int, *,
            renderer: Any = None, done: Callable[[T], None] | None = None,
            small: bool = False, min_bytes: int = 0) -> Iterator[R]:
    """parallel.ordered, with runs of small items as one work item each; all in this process
    when the items hold fewer than `min_bytes` bytes in all (workers would cost more than
    they save)."""
    if min_bytes and jobs > 1 and not parallel.holds_at_least(items, min_bytes):
        jobs = 1
    if jobs <= 1 or len(items) <= FEW:
        yield from parallel.ordered(items, work, jobs, renderer=renderer, done=done,
                                    small=small)
        return

    def run(chunk: list[T]) -> list[R]:
        return [work(item) for item in chunk]

    def finished(chunk: list[T]) -> None:
        if done is not None:
            for item in chunk:
                done(item)

    for values in parallel.ordered(chunks(items), run, jobs, renderer=renderer,
                                   done=finished, small=small):
        yield from values


def mapper(jobs: int, small: bool = False,
           min_bytes: int = 0) -> Callable[..., Iterator[Any]] | None:
    """parallel.mapper's, chunked: storage's map over partitions (None: -j 1). `small`,
    `min_bytes`: as ordered's."""
    if jobs <= 1:
        return None
    return lambda items, work, **kw: ordered(items, work, jobs, small=small,
                                             min_bytes=min_bytes, **kw)
