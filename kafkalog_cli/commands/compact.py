"""`kafkalog compact`: Kafka's log cleaner, offline, in bounded memory."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from kafkalog_cli.codec.layout import INT64_MAX
from kafkalog_cli.commands import options, parallel
from kafkalog_cli.commands.common import (
    copy_skipped,
    lock_dirs,
    partition_bytes,
    partition_fields,
    ticked,
)
from kafkalog_cli.errors import UsageError
from kafkalog_cli.output.console import progress, settings
from kafkalog_cli.output.render import write_report
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.checkpoints import read_offsets, update_offsets
from kafkalog_cli.storage.disk.logdir import PartitionDir, open_target, scan_partition
from kafkalog_cli.storage.maintenance.compaction import (
    CleanerConfig,
    clean_round,
    cleanable_range,
    replay,
)
from kafkalog_cli.storage.maintenance.guard import quarantines
from kafkalog_cli.storage.maintenance.offset_map import ENTRY
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.replace import UNFINISHED_DELETION
from kafkalog_cli.storage.maintenance.retention import remove_deleted

MAX_ROUNDS = 1000


@click.command("compact", epilog="Exit codes: 0 done (or nothing eligible), 4 --dry-run found "
               "work or a partition was skipped (its topic name breaks Kafka's rule), 8 "
               "operational error (e.g. the log dir lock is held), 16 usage error."
               + options.NO_LINKS)
@options.local_paths_argument
@click.option("--topic", "topics", multiple=True, type=options.TopicName(),
              shell_complete=options.complete_topic,
              help="In a log dir, compact these topics (repeatable). The tool cannot know a "
                   "topic's cleanup.policy, so a log dir needs --topic or --all.")
@click.option("--all", "all_topics", is_flag=True,
              help="Compact every partition under PATH (not with --topic).")
@click.option("--now", "now_ms", type=options.Time(),
              help="The clock, epoch ms or ISO-8601 (reproducible runs).")
@click.option("--delete-retention-ms", type=options.CONFIGS["delete.retention.ms"],
              default=86_400_000, show_default=True,
              help="How long tombstones and empty markers live.")
@click.option("--min-compaction-lag-ms", type=options.CONFIGS["min.compaction.lag.ms"],
              default=0, show_default=True)
@click.option("--min-cleanable-ratio", type=options.CONFIGS["min.cleanable.dirty.ratio"],
              default=0.5, show_default=True,
              help="Skip partitions whose dirty ratio is not above this.")
@click.option("--force", is_flag=True, help="Clean even below --min-cleanable-ratio.")
@click.option("--dedupe-buffer-size", type=options.CONFIGS["log.cleaner.dedupe.buffer.size"],
              default=128 * 1024 * 1024, show_default=True,
              help="Offset map memory (24 bytes per key); a round ends when it fills and the "
                   "next continues.")
@click.option("--load-factor", type=options.CONFIGS["log.cleaner.io.buffer.load.factor"],
              default=0.9, show_default=True,
              help="How full the offset map may get (log.cleaner.io.buffer.load.factor).")
@click.option("--segment-bytes", type=options.CONFIGS["segment.bytes"],
              default=1024 * 1024 * 1024, show_default=True,
              help="The topic's segment.bytes (limits merged segments).")
@click.option("--max-rounds", type=options.Int32(min=1), default=MAX_ROUNDS, show_default=True)
@click.option("--dry-run", is_flag=True,
              help="Report dirty ratio and what would go; change nothing.")
@click.option("--quarantine", "quarantine_dir",
              type=options.LocalPath(file_okay=False, path_type=Path))
@click.option("--no-quarantine", is_flag=True, help="Delete replaced segments outright.")
@options.format_option()
@options.jobs_option
def command(paths: tuple[str, ...], topics: tuple[str, ...], all_topics: bool,
            now_ms: int | None, delete_retention_ms: int, min_compaction_lag_ms: int,
            min_cleanable_ratio: float, force: bool, dedupe_buffer_size: int, load_factor: float,
            segment_bytes: int, max_rounds: int, dry_run: bool, quarantine_dir: Path | None,
            no_quarantine: bool, fmt: str, jobs: int = 1) -> int:
    """Compact partitions the way Kafka's log cleaner does: latest record per key, tombstones
    until the delete horizon, aborted transactions dropped, offsets kept, segments replaced
    crash-safely (.cleaned -> .swap -> .deleted), cleaner-offset-checkpoint updated.

    \b
    Examples:
      kafkalog compact /var/lib/kafka/users-0 --dry-run
      kafkalog compact /var/lib/kafka --topic users --topic __consumer_offsets
      kafkalog compact /var/lib/kafka --all --now 1714564800000 --force
    """
    if quarantine_dir and no_quarantine:
        raise UsageError("--quarantine and --no-quarantine contradict each other")
    if topics and all_topics:
        raise UsageError("--topic and --all contradict each other: give one")
    if dedupe_buffer_size // ENTRY * load_factor <= 1:  # LogCleaner's own requirement
        raise UsageError(f"--dedupe-buffer-size {dedupe_buffer_size} at --load-factor "
                         f"{load_factor} holds fewer than 2 keys: give more memory")
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    if now + delete_retention_ms > INT64_MAX:  # the delete horizon a batch header carries
        raise UsageError(f"--delete-retention-ms: {delete_retention_ms} after --now {now} is "
                         f"past {INT64_MAX} (the INT64 delete horizon of a batch)")
    cfg = CleanerConfig(dedupe_buffer_size=dedupe_buffer_size, load_factor=load_factor,
                        delete_retention_ms=delete_retention_ms,
                        min_compaction_lag_ms=min_compaction_lag_ms,
                        min_cleanable_ratio=min_cleanable_ratio, segment_bytes=segment_bytes)
    parts: list[PartitionDir] = []
    for p in paths:
        t = open_target(p)
        if t.kind == "partition":
            parts += t.partitions(linked=True)
        elif t.kind in ("logdir", "archive"):
            if not topics and not all_topics:
                raise UsageError(f"{p} is a log dir: choose partitions with --topic T or --all "
                                 "(kafkalog cannot know which topics are compacted)")
            parts += [x for x in t.partitions(linked=True) if all_topics or x.topic in topics]
        else:
            raise UsageError(f"{p}: compact a partition dir or a log dir")
    report: list[dict[str, Any]] = []
    work = skipped = False
    out = sys.stdout
    with ExitStack() as stack:
        parts = lock_dirs(parts, stack, dry_run=dry_run, writes=(naming.CLEANER,))
        qs = {} if no_quarantine else quarantines(parts, quarantine_dir)
        bar = stack.enter_context(progress(partition_bytes(parts), "compact"))
        parts = [part for part in parts if part.segments]

        def one(part: PartitionDir) -> tuple[dict[str, Any], list[int]]:
            """Compact a partition (perhaps in a worker process: commands/parallel.py): its
            report entry, and the cleaner checkpoints left for this process to write."""
            if part.topic_error is not None:  # its cleaner checkpoint entry cannot be written
                return {**partition_fields(part), "rounds": [],
                        "skipped": f"{part.topic_error} (rename the dir)"}, []
            if part.state:
                return {**partition_fields(part), "rounds": [],
                        "skipped": copy_skipped(part, "cleaning")}, []
            log_dir = part.path.parent.resolve()
            ends: list[int] = []
            # -j 1 writes the checkpoint after each round, as the cleaner does; workers
            # leave it to this process (one writer of the shared file, in partition order):
            # a checkpoint that lags is safe, the range is cleaned again
            write = None if jobs > 1 else (lambda end: update_offsets(
                log_dir / naming.CLEANER, {part.key: end}))
            entry = _compact_partition(part, log_dir, cfg, now, force, dry_run, max_rounds,
                                       qs.get(log_dir), write or ends.append)
            return entry, ends

        for part, (entry, ends) in zip(parts, parallel.ordered(
                parts, one, jobs, done=ticked(bar), finish_started=True), strict=True):
            for end in ends:
                update_offsets(part.path.parent.resolve() / naming.CLEANER, {part.key: end})
            skipped = skipped or part.topic_error is not None
            work = work or bool(entry["rounds"])
            report.append(entry)
            if fmt == "text" and (entry["rounds"] or not settings.quiet):  # -q: no skips
                out.write(_text(entry, dry_run) + "\n")
    if fmt != "text":
        write_report(fmt, {"now": now, "dryRun": dry_run}, report, {"rounds": "round"})
    return 4 if (dry_run and work) or skipped else 0


def _compact_partition(part: PartitionDir, log_dir: Path, cfg: CleanerConfig, now: int,
                       force: bool, dry_run: bool, max_rounds: int,
                       q: Quarantine | None,
                       checkpoint: Callable[[int], None]) -> dict[str, Any]:
    key = part.key
    ckpt = read_offsets(log_dir / naming.CLEANER).get(key)
    log_start = max(part.segments[0].base_offset,
                    read_offsets(log_dir / naming.LOG_START).get(key, 0))
    hw_cp = read_offsets(log_dir / naming.REPLICATION).get(key)
    entry: dict[str, Any] = {**partition_fields(part), "rounds": []}
    if not dry_run:  # a stopped run's `.deleted` files, which a broker's load deletes
        remove_deleted(part.path, q, older_than_ms=None, log_dir=log_dir,
                       reason=UNFINISHED_DELETION)
    for _ in range(max_rounds):
        # where the dirty range can start: the checkpoint's offset, or the log start
        state, aborted, log_end, records_from = replay(
            part, (log_start,) if ckpt is None else (ckpt, log_start))
        rng = cleanable_range(part, ckpt, log_start, hw_cp, state, now, cfg, log_end)
        entry.setdefault("firstDirtyOffset", rng.first_dirty)
        entry.setdefault("dirtyRatio", round(rng.ratio, 4))
        entry["firstUncleanableOffset"] = rng.first_uncleanable
        if rng.cleanable_bytes == 0 or rng.first_uncleanable <= rng.first_dirty:
            entry.setdefault("skipped", "nothing cleanable (the active segment and open "
                                        "transactions are never cleaned)")
            break
        if not entry["rounds"] and rng.ratio <= cfg.min_cleanable_ratio and not force:
            entry["skipped"] = (f"dirty ratio {rng.ratio:.3f} is not above "
                                f"min.cleanable.dirty.ratio {cfg.min_cleanable_ratio} (--force)")
            break
        res = clean_round(part, rng, cfg, now, state, aborted, q, dry_run=dry_run,
                          records_from=records_from)
        entry["rounds"].append({"endOffset": res.end_offset, "recordsIn": res.records_in,
                                "recordsOut": res.records_out, "bytesIn": res.bytes_in,
                                "bytesOut": res.bytes_out, "groups": res.groups,
                                "mapFull": res.map_full})
        if dry_run:
            break
        checkpoint(res.end_offset)  # the cleaner-offset-checkpoint
        ckpt = res.end_offset
        part = scan_partition(part.path, part.log_dir)
        if not res.map_full or res.end_offset >= rng.first_uncleanable:
            break
    return entry


def _text(e: dict[str, Any], dry: bool) -> str:
    if "dirtyRatio" not in e:
        return f"{e['path']}: skipped: {e['skipped']}"
    head = f"{e['path']}: dirty ratio {e.get('dirtyRatio')}"
    if "skipped" in e and not e["rounds"]:
        return f"{head}; skipped: {e['skipped']}"
    lines = [head]
    for i, r in enumerate(e["rounds"], 1):
        verb = "would keep" if dry else "kept"
        lines.append(f"  round {i}: offsets below {r['endOffset']}: {verb} {r['recordsOut']} of "
                     f"{r['recordsIn']} records, {r['bytesOut']} of {r['bytesIn']} bytes "
                     f"({len(r['groups'])} segment groups)"
                     f"{' (offset map full)' if r['mapFull'] else ''}")
    return "\n".join(lines)
