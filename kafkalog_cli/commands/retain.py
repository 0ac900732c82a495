"""`kafkalog retain`: Kafka's retention for broker-less archives; cron-friendly."""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click
import orjson

from kafkalog_cli.commands import options, parallel
from kafkalog_cli.commands.common import copy_skipped, lock_dirs, partition_fields
from kafkalog_cli.errors import CorruptDataError, LogDirIOError, UsageError
from kafkalog_cli.output.console import settings
from kafkalog_cli.output.render import write_report
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.checkpoints import read_offsets
from kafkalog_cli.storage.disk.logdir import PartitionDir, open_target
from kafkalog_cli.storage.disk.naming import topic_name_error
from kafkalog_cli.storage.maintenance.guard import quarantines
from kafkalog_cli.storage.maintenance.retention import (
    Policy,
    RetentionPlan,
    apply_retention,
    plan_retention,
    remove_deleted,
)

TOPIC_SETTINGS = ("retention.ms", "retention.bytes", "cleanup.policy")


def _topic_config(path: Path | None) -> dict[str, dict[str, Any]]:
    """The per-topic settings of --topic-config, each checked as Kafka's ConfigDef checks it
    (a value may be a JSON number or Kafka's own text form), before anything is read."""
    if path is None:
        return {}
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as e:  # what cannot be opened is operational, as for a PATH
        raise LogDirIOError(f"{path}: cannot read the topic settings: {e.strerror}") from None
    except orjson.JSONDecodeError as e:
        raise UsageError(f"{path}: cannot read the topic settings: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UsageError(f"{path}: expected {{\"topic\": {{\"retention.ms\": N, ...}}, ...}}")
    for topic, settings_ in data.items():
        why = topic_name_error(topic)
        if why is not None:
            raise UsageError(f"{path}: {why}")
        for key, value in settings_.items():
            try:
                if key == "cleanup.policy":
                    settings_[key] = options.cleanup_policy(value)
                elif key in TOPIC_SETTINGS:
                    settings_[key] = options.CONFIGS[key].parse(value)
                else:
                    raise ValueError(f"not a setting retain applies (it takes "
                                     f"{', '.join(TOPIC_SETTINGS)})")
            except ValueError as e:
                raise UsageError(f"{path}: {topic}: {key}: {e}") from None
    return data


@click.command("retain", epilog="Exit codes: 0 done (whether or not anything was deleted), "
               "4 a --dry-run that would delete or roll, a partition was skipped (its topic "
               "name breaks Kafka's rule) or a checkpoint or batch it must read does not "
               "decode (its file and byte on stderr), "
               "8 operational error (e.g. the log dir lock is held), 16 usage error. Silent "
               "unless something happened; --format json always prints a summary."
               + options.NO_LINKS)
@options.local_paths_argument
@click.option("--retention-ms", type=options.CONFIGS["retention.ms"], default=-1,
              show_default=True,
              help="retention.ms (-1: no time retention).")
@click.option("--retention-bytes", type=options.CONFIGS["retention.bytes"], default=-1,
              show_default=True,
              help="retention.bytes per partition (-1: no size retention).")
@click.option("--log-start-offset", type=options.Int64(min=0),
              help="Delete segments entirely below this offset (default: the checkpoint).")
@click.option("--topic-config", type=click.Path(dir_okay=False, path_type=Path),
              help='JSON: {"topic": {"retention.ms": N, "retention.bytes": N, '
                   '"cleanup.policy": "delete|compact|compact,delete"}}; overrides the flags '
                   'per topic; each value is checked as Kafka checks it.')
@click.option("--now", "now_ms", type=options.Time(),
              help="The clock, epoch ms or ISO-8601 (reproducible runs).")
@click.option("--delete-delay", type=options.CONFIGS["file.delete.delay.ms"], default=0,
              show_default=True,
              metavar="MS", help="Keep .deleted files this long; a later run removes them.")
@click.option("--ignore-high-watermark", is_flag=True,
              help="Allow deleting past the high watermark in replication-offset-checkpoint.")
@click.option("--max-future-ms", type=options.Int64(min=0),
              help="Segments whose largest timestamp is more than this far in the future use "
                   "their file mtime instead (a known reason time retention stalls).")
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; change nothing.")
@click.option("--quarantine", "quarantine_dir",
              type=options.LocalPath(file_okay=False, path_type=Path))
@click.option("--no-quarantine", is_flag=True,
              help="Really delete (frees the space; by default deleted segments are moved to "
                   "the quarantine folder).")
@options.format_option()
@options.jobs_option
def command(paths: tuple[str, ...], retention_ms: int, retention_bytes: int,
            log_start_offset: int | None, topic_config: Path | None, now_ms: int | None,
            delete_delay: int, ignore_high_watermark: bool, max_future_ms: int | None,
            dry_run: bool, quarantine_dir: Path | None, no_quarantine: bool, fmt: str,
            jobs: int = 1) -> int:
    """Apply Kafka's retention to log dirs with no broker: log start offset, then
    retention.bytes, then retention.ms, each deleting a prefix of segments and never past
    the high watermark. Takes the log dir lock; idempotent; safe to run from cron.

    \b
    Examples:
      kafkalog retain /archive/kafka --retention-ms 604800000
      kafkalog retain /archive/kafka --retention-bytes 10737418240 --no-quarantine
      kafkalog retain /archive/kafka --topic-config retention.json --format json
      kafkalog retain /archive/kafka/orders-0 --retention-ms 86400000 --dry-run
    """
    if quarantine_dir and no_quarantine:
        raise UsageError("--quarantine and --no-quarantine contradict each other")
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    per_topic = _topic_config(topic_config)
    summary: list[dict[str, Any]] = []
    out = sys.stdout
    with ExitStack() as stack:
        parts = [x for p in paths for x in open_target(p).partitions(linked=True)]
        parts = lock_dirs(parts, stack, dry_run=dry_run, writes=(naming.LOG_START,))
        qs = {} if no_quarantine else quarantines(parts, quarantine_dir)
        skipped = found = False  # found: work for a dry run

        def plan(part: PartitionDir) -> RetentionPlan | None:
            """What retention deletes in a partition (perhaps planned in a worker process:
            commands/parallel.py; it is applied here, in order); None: skipped."""
            if part.topic_error is not None or part.state:  # (see the loop below)
                return None
            log_dir = part.path.parent.resolve()
            cfg = per_topic.get(part.topic, {})
            policy = Policy(cfg.get("retention.ms", retention_ms),
                            cfg.get("retention.bytes", retention_bytes),
                            "delete" not in cfg.get("cleanup.policy", {"delete"}))
            try:
                start = log_start_offset if log_start_offset is not None else \
                    read_offsets(log_dir / naming.LOG_START).get(part.key)
                hw = None if ignore_high_watermark else \
                    read_offsets(log_dir / naming.REPLICATION).get(part.key)
            except CorruptDataError as e:
                raise e  # an unreadable checkpoint: refuse rather than guess
            notes = []
            if hw is None and not ignore_high_watermark:
                notes.append("no high watermark in replication-offset-checkpoint: nothing "
                             "is deleted (pass --ignore-high-watermark for a quiesced copy)")
                hw = -1
            planned = plan_retention(part, policy, now=now, log_start=start,
                                     high_watermark=hw, max_future_ms=max_future_ms)
            planned.notes[:0] = notes if not planned.victims and notes and part.segments else []
            return planned

        for part, retention in zip(parts, parallel.ordered(parts, plan, jobs), strict=True):
            log_dir = part.path.parent.resolve()
            if retention is None:
                if part.state:
                    why = copy_skipped(part, "retention")
                else:  # its log start entry cannot be written
                    skipped = True
                    why = f"{part.topic_error} (rename the dir)"
                summary.append({**partition_fields(part), "skipped": why, "dryRun": dry_run})
                if fmt == "text":
                    out.write(f"skipped {part.path}: {why}\n")
                continue
            q = qs.get(log_dir)
            swept: list[Path] = []
            if not dry_run:
                apply_retention(retention, q, delete_now=delete_delay == 0, log_dir=log_dir)
                swept = remove_deleted(part.path, q, older_than_ms=delete_delay, log_dir=log_dir)
            entry = {**partition_fields(part), "deleted": [v.as_dict() for v in retention.victims],
                     "rolled": retention.roll_at, "logStartOffset": retention.new_log_start,
                     "removedDeletedFiles": [str(p) for p in swept], "notes": retention.notes,
                     "dryRun": dry_run}
            summary.append(entry)
            found = found or bool(retention.victims) or retention.roll_at is not None \
                or retention.new_log_start is not None
            if fmt == "text":
                verb = "would delete" if dry_run else "deleted"
                for v in retention.victims:
                    out.write(f"{verb} {v.segment.log_path} ({v.size} bytes, "
                              f"{v.rule}): {v.reason}\n")
                if retention.roll_at is not None:
                    out.write(f"{'would roll' if dry_run else 'rolled'} a new empty segment at "
                              f"{retention.roll_at} in {part.path}\n")
                for note in [] if settings.quiet else retention.notes:
                    out.write(f"note: {note}\n")
    if fmt != "text":
        write_report(fmt, {"now": now}, summary, {"deleted": "deleted"})
    return 4 if skipped or (dry_run and found) else 0
