"""`kafkalog index-rebuild`: recompute indexes exactly as Kafka's LogSegment.recover writes them."""

from __future__ import annotations

import functools
from contextlib import ExitStack
from typing import Any

import click

from kafkalog_cli.commands import options, parallel
from kafkalog_cli.commands.common import lock_dirs, partition_bytes, partitions_of, runs, ticked
from kafkalog_cli.errors import repair_exit
from kafkalog_cli.output.console import progress, settings, warn
from kafkalog_cli.output.render import make_renderer
from kafkalog_cli.storage.checks.check import CheckOptions, Stats, check_partition
from kafkalog_cli.storage.checks.findings import ERROR, Findings
from kafkalog_cli.storage.disk.logdir import PartitionDir, scan_partition
from kafkalog_cli.storage.maintenance.floor import recover_command
from kafkalog_cli.storage.maintenance.rebuild import DEFAULT_INDEX_BYTES, DEFAULT_INDEX_INTERVAL
from kafkalog_cli.storage.maintenance.reindex import reindex_partition


def _recover_fix(part: PartitionDir) -> str:
    """The command verify names for the partition's damaged log (with the options it needs)."""
    f = Findings()
    check_partition(scan_partition(part.path, part.log_dir), f, CheckOptions(), Stats())
    return next((x.fix for x in f.items if x.severity == ERROR and x.fix
                 and x.fix.startswith("kafkalog recover")), recover_command(part.path))


def _text(row: dict[str, Any]) -> str:
    verb = ("would rewrite" if row["dryRun"] else "rewrote") if row["changed"] else "unchanged"
    was = "absent" if row["bytesBefore"] is None else f"{row['bytesBefore']} bytes"
    return (f"{verb:<13} {row['file']} ({row['entries']} entries, {row['bytesAfter']} bytes; "
            f"was {was})")


@click.command("index-rebuild", epilog="Exit codes: 0 indexes already right, 1 rewritten, "
               "4 --dry-run found indexes to rewrite, or a log has damage (indexes cover its "
               "valid prefix; run `kafkalog recover`), "
               "8 operational error (e.g. the log dir lock is held), 16 usage error."
               + options.NO_LINKS)
@options.local_paths_argument
@click.option("--index-interval-bytes", type=options.CONFIGS["index.interval.bytes"],
              default=DEFAULT_INDEX_INTERVAL, show_default=True,
              help="The topic's index.interval.bytes.")
@click.option("--segment-index-bytes", type=options.CONFIGS["segment.index.bytes"],
              default=DEFAULT_INDEX_BYTES, show_default=True,
              help="The topic's segment.index.bytes (caps entries).")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@options.format_option()
@options.jobs_option
def command(paths: tuple[str, ...], index_interval_bytes: int, segment_index_bytes: int,
            dry_run: bool, fmt: str, jobs: int = 1) -> int:
    """Rebuild .index, .timeindex and .txnindex from the .log files, byte for byte as Kafka's
    recovery writes them. The .log files are never changed (that is `recover`'s job).

    PATH is a segment file (only that segment), a partition dir or a log dir.

    \b
    Examples:
      kafkalog index-rebuild /var/lib/kafka/orders-0
      kafkalog index-rebuild orders-0/00000000000000368769.log --dry-run
      kafkalog index-rebuild /var/lib/kafka --index-interval-bytes 8192
    """
    out = make_renderer(fmt, _text)
    # -q: people reading text or a table see what changed, not each index left as it was
    terse = settings.quiet and fmt in ("text", "table")
    changed = damaged = 0
    targets = partitions_of(paths)

    def one(part: PartitionDir, bases: set[int] | None) -> tuple[int, int]:
        """Reindex a partition (perhaps in a worker: commands/parallel.py); the indexes it
        changed and the damaged logs it found."""
        changed = damaged = 0
        fix = None
        for c in reindex_partition(part, bases=bases, interval=index_interval_bytes,
                                   index_bytes=segment_index_bytes, dry_run=dry_run):
            changed += c.changed
            if c.damage and c.kind == "index":
                damaged += 1
                fix = fix or _recover_fix(part)
                warn(f"{c.damage}; indexes cover the valid prefix only (fix: {fix})")
            if terse and not c.changed:
                continue
            out.row({"topic": part.topic, "partition": part.partition,
                     "segment": str(c.segment), "file": str(c.file), "index": c.kind,
                     "entries": c.entries, "bytesBefore": c.before,
                     "bytesAfter": c.after, "changed": c.changed, "dryRun": dry_run})
        return changed, damaged

    with ExitStack() as stack:
        fresh = {p.path: p for p in lock_dirs([p for _t, parts, _b in targets for p in parts],
                                              stack, dry_run=dry_run)}
        targets = [(t, [fresh[p.path] for p in parts], b) for t, parts, b in targets]
        bar = stack.enter_context(progress(
            partition_bytes([p for _t, parts, _b in targets for p in parts]), "index-rebuild"))
        # whole partitions named one by one (a glob) are one set of -j items; a partition
        # named twice is rebuilt twice, one after the other, as without -j
        for run in runs([(parts, bases) for _t, parts, bases in targets],
                        lambda x: x[1] is None):
            parts = [p for ps, _b in run for p in ps]
            sets = [parts] if len({p.path for p in parts}) == len(parts) else \
                [ps for ps, _b in run]
            for ps in sets:
                for c, d in parallel.ordered(ps, functools.partial(one, bases=run[0][1]), jobs,
                                             renderer=out, done=ticked(bar), small=True,
                                             finish_started=True, by_records=False):
                    changed, damaged = changed + c, damaged + d
    out.close()
    return repair_exit(bool(changed), bool(damaged), dry_run)
