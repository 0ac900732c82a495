"""`kafkalog recover`: a broker's start-up recovery, offline, explained, losing nothing."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from kafkalog_cli.commands import options, parallel
from kafkalog_cli.errors import UsageError, repair_exit
from kafkalog_cli.output.console import progress, settings, warn
from kafkalog_cli.output.render import write_report
from kafkalog_cli.storage.formats import open_targets
from kafkalog_cli.storage.maintenance.rebuild import DEFAULT_INDEX_INTERVAL
from kafkalog_cli.storage.maintenance.recover_run import RecoverOptions

# csv and tables: a row for each
LISTS = {"actions": "action", "problems": "problem", "left": "left"}


def _text(rows: list[dict[str, Any]], problems: list[dict[str, Any]],
          left: list[dict[str, Any]], dry: bool) -> str:
    lines = []
    for r in rows:
        what = r["action"]
        extra = ""
        if "positions" in r:
            extra += f" bytes {r['positions'][0]}..{r['positions'][1]}"
        if r.get("offsets"):
            extra += f" offsets {r['offsets'][0]}..{r['offsets'][1]}"
        if r.get("records") is not None:
            extra += f" ({r['records']} records)"
        if r.get("splitAt"):
            extra += " at offsets " + ", ".join(map(str, r["splitAt"]))
        if "to" in r:
            extra += f" -> {r['to']}"
        lines.append(f"{'would ' if dry else ''}{what:<13} {r['file']}{extra}: {r['reason']}")
    for p in problems:
        at = f":{p['position']}" if p["position"] is not None else ""
        lines.append(f"problem       {p['file']}{at}: {p['message']}")
    for x in left:
        at = f":{x['position']}" if x["position"] is not None else ""
        fix = f"fix: {x['fix']}" if x["fix"] else "no kafkalog command fixes this"
        lines.append(f"left          {x['file']}{at}: {x['code']}: {x['message']}; {fix}")
    return "\n".join(lines)




@click.command("recover", epilog="Exit codes (fsck): 0 nothing to do, 1 repaired, 4 problems "
               "left (verify would still report errors), or --dry-run found work, "
               "8 operational error (e.g. lock held), 16 usage." + options.NO_LINKS)
@options.local_paths_argument
@click.option("--full", is_flag=True,
              help="Validate every segment, not just from the recovery point.")
@click.option("--force", is_flag=True,
              help="Also truncate where valid data follows the damage (as a broker would).")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option("--quarantine", "quarantine_dir",
              type=options.LocalPath(file_okay=False, path_type=Path),
              help="Where removed files and cut bytes go (default: "
                   "<log dir>/../.kafkalog-quarantine/<log dir name>/<UTC time>/).")
@click.option("--no-quarantine", is_flag=True, help="Delete instead of quarantining.")
@click.option("--index-interval-bytes", type=options.CONFIGS["index.interval.bytes"],
              default=DEFAULT_INDEX_INTERVAL, show_default=True)
@click.option("--segment-index-bytes", type=options.CONFIGS["segment.index.bytes"],
              help="The topics' segment.index.bytes: a segment whose recovery would overflow "
                   "indexes of this size is cut where the broker should have rolled it "
                   "(default: the size a killed broker preallocated the last segment's indexes "
                   "to, else 10485760).")
@options.format_option()
@options.jobs_option
def command(paths: tuple[str, ...], full: bool, force: bool, dry_run: bool,
            quarantine_dir: Path | None, no_quarantine: bool, index_interval_bytes: int,
            segment_index_bytes: int | None, fmt: str, jobs: int = 1) -> int:
    """Do offline, and explain, what a broker does at start-up after an unclean shutdown:
    finish or undo interrupted replacements (.cleaned/.swap/.deleted), drop orphan indexes,
    validate segments from the recovery point, cut a torn or corrupt tail (or one whose
    records do not decode, or whose offsets go backwards), rebuild indexes, remove the
    producer snapshots the broker's load deletes (stray ones, past the log end, at or below
    the log start), rebuild producer snapshots and the leader-epoch checkpoint that do not
    parse, rewrite a log dir's unreadable checkpoints and move the recovery point to the
    log end. Every removed file, cut byte and rewritten file goes to a quarantine folder
    first, with a manifest.

    Then it verifies what it leaves: whatever `kafkalog verify` would still report as an
    error is listed as `left`, with the command that fixes it (often this one with --full
    or --force), and the exit code has 4 in it (5 when it also changed something: the codes
    are OR-ed). Running it twice changes nothing the second time.

    \b
    Examples:
      kafkalog recover /var/lib/kafka --dry-run
      kafkalog recover /var/lib/kafka/orders-0 --full
      kafkalog recover /var/lib/kafka --quarantine /mnt/spare/quarantine
    """
    if quarantine_dir and no_quarantine:
        raise UsageError("--quarantine and --no-quarantine contradict each other")
    o = RecoverOptions(full, force, dry_run, quarantine_dir, no_quarantine,
                       index_interval_bytes, segment_index_bytes, warn,
                       parallel.mapper(jobs, finish_started=True))
    targets = open_targets(paths)
    with ExitStack() as stack:
        done = targets[0].format.recover(targets, o, stack,
                                         lambda total: progress(total, "recover"))
    report, root_report = done.partitions, done.log_dirs
    out = sys.stdout
    if fmt != "text":
        write_report(fmt, {"dryRun": dry_run}, report, LISTS, log_dirs=root_report)
    else:
        for r in [*report, *root_report]:
            if r["actions"] or r.get("problems") or r["left"]:
                out.write(_text(r["actions"], r.get("problems", []), r["left"], dry_run) + "\n")
        if not (done.changed or done.problems or done.left) and not settings.quiet:
            out.write("nothing to do\n")
    return repair_exit(done.changed, bool(done.problems or done.left), dry_run)
