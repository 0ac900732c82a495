"""`kafkalog retain`: Kafka's retention for broker-less archives; cron-friendly."""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click
import orjson

from kafkalog_cli.commands import options
from kafkalog_cli.commands.common import lock_dirs
from kafkalog_cli.errors import CorruptDataError, UsageError
from kafkalog_cli.output.render import json_bytes
from kafkalog_cli.storage import naming
from kafkalog_cli.storage.checkpoints import read_offsets
from kafkalog_cli.storage.logdir import open_target
from kafkalog_cli.storage.quarantine import Quarantine
from kafkalog_cli.storage.retention import Policy, apply_retention, plan_retention, remove_deleted


def _topic_config(path: Path | None) -> dict[str, dict[str, Any]]:
    if path is None:
        return {}
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as e:
        raise UsageError(f"{path}: cannot read the topic settings: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UsageError(f"{path}: expected {{\"topic\": {{\"retention.ms\": N, ...}}, ...}}")
    return data


@click.command("retain", epilog="Exit codes: 0 done (whether or not anything was deleted), "
               "4 a checkpoint or batch it must read does not decode (its file and byte on "
               "stderr), 8 operational error (e.g. the log dir lock is held), 16 usage error. "
               "Silent unless something happened; --format json always prints a summary.")
@options.paths_argument
@click.option("--retention-ms", type=int, default=-1, show_default=True,
              help="retention.ms (-1: no time retention).")
@click.option("--retention-bytes", type=int, default=-1, show_default=True,
              help="retention.bytes per partition (-1: no size retention).")
@click.option("--log-start-offset", type=click.IntRange(0),
              help="Delete segments entirely below this offset (default: the checkpoint).")
@click.option("--topic-config", type=click.Path(dir_okay=False, path_type=Path),
              help='JSON: {"topic": {"retention.ms": N, "retention.bytes": N, '
                   '"cleanup.policy": "delete|compact"}}; overrides the flags per topic.')
@click.option("--now", "now_ms", type=int, help="The clock, epoch ms (reproducible runs).")
@click.option("--delete-delay", type=click.IntRange(0), default=0, show_default=True,
              metavar="MS", help="Keep .deleted files this long; a later run removes them.")
@click.option("--ignore-high-watermark", is_flag=True,
              help="Allow deleting past the high watermark in replication-offset-checkpoint.")
@click.option("--max-future-ms", type=click.IntRange(0),
              help="Segments whose largest timestamp is more than this far in the future use "
                   "their file mtime instead (a known reason time retention stalls).")
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; change nothing.")
@click.option("--quarantine", "quarantine_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--no-quarantine", is_flag=True,
              help="Really delete (frees the space; by default deleted segments are moved to "
                   "the quarantine folder).")
@options.format_option(default="text", choices=("text", "json"))
def command(paths: tuple[str, ...], retention_ms: int, retention_bytes: int,
            log_start_offset: int | None, topic_config: Path | None, now_ms: int | None,
            delete_delay: int, ignore_high_watermark: bool, max_future_ms: int | None,
            dry_run: bool, quarantine_dir: Path | None, no_quarantine: bool, fmt: str) -> int:
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
        parts = [x for p in paths for x in open_target(p).partitions()]
        parts = lock_dirs(parts, stack, dry_run=dry_run)
        quarantines: dict[Path, Quarantine | None] = {}
        for part in parts:
            log_dir = part.path.parent.resolve()
            q = quarantines.setdefault(log_dir, None if no_quarantine else
                                       Quarantine(log_dir, quarantine_dir))
            cfg = per_topic.get(part.topic, {})
            policy = Policy(int(cfg.get("retention.ms", retention_ms)),
                            int(cfg.get("retention.bytes", retention_bytes)),
                            cfg.get("cleanup.policy", "delete") == "compact")
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
            plan = plan_retention(part, policy, now=now, log_start=start,
                                  high_watermark=hw, max_future_ms=max_future_ms)
            plan.notes[:0] = notes if not plan.victims and notes and part.segments else []
            swept: list[Path] = []
            if not dry_run:
                apply_retention(plan, q, delete_now=delete_delay == 0, log_dir=log_dir)
                swept = remove_deleted(part.path, q, older_than_ms=delete_delay, log_dir=log_dir)
            entry = {"partition": str(part.path), "deleted": [v.as_dict() for v in plan.victims],
                     "rolled": plan.roll_at, "logStartOffset": plan.new_log_start,
                     "removedDeletedFiles": [str(p) for p in swept], "notes": plan.notes,
                     "dryRun": dry_run}
            summary.append(entry)
            if fmt == "text":
                verb = "would delete" if dry_run else "deleted"
                for v in plan.victims:
                    out.write(f"{verb} {v.segment.log_path} ({v.size} bytes, "
                              f"{v.rule}): {v.reason}\n")
                if plan.roll_at is not None:
                    out.write(f"{'would roll' if dry_run else 'rolled'} a new empty segment at "
                              f"{plan.roll_at} in {part.path}\n")
                for note in plan.notes:
                    out.write(f"note: {note}\n")
    if fmt == "json":
        out.write(json_bytes({"now": now, "partitions": summary},
                             option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0
