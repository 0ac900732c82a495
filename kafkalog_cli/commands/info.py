"""`kafkalog info`: topics, partitions, offsets, checkpoints, sizes, time ranges, state."""

from __future__ import annotations

import sys
from typing import Any

import click
import orjson

from kafkalog_cli.commands import options, v07
from kafkalog_cli.output.console import ESCAPE, human_time
from kafkalog_cli.output.render import json_bytes
from kafkalog_cli.storage import naming
from kafkalog_cli.storage.logdir import open_target
from kafkalog_cli.storage.overview import lock_state, partition_info


def _ts(ms: int | None) -> str:
    return human_time(ms)


@click.command("info", epilog="Exit codes: 0 done, 8 operational error, 16 usage error.")
@options.paths_argument
@options.format_option(default="auto", choices=("table", "text", "json"))
def command(paths: tuple[str, ...], fmt: str) -> int:
    """A one-screen overview of log dirs: partitions, offsets, checkpoints, sizes, time ranges,
    codecs, clean-shutdown and lock state, leftover files.

    \b
    Examples:
      kafkalog info /var/lib/kafka
      kafkalog info /var/lib/kafka/orders-0 --format json
    """
    if (t07 := v07.targets(paths)) is not None:  # Kafka 0.7 partitions
        return v07.info(t07, fmt)
    report: list[dict[str, Any]] = []
    for p in paths:
        t = open_target(p)
        dirs = t.log_dirs or [None]
        for ld in dirs:
            parts = ld.partitions if ld is not None else t.partitions()
            entry: dict[str, Any] = {"path": str(ld.path if ld else t.path)}
            if ld is not None:
                entry["cleanShutdown"] = naming.CLEAN_SHUTDOWN in ld.root_files
                entry["lock"] = lock_state(ld)
                entry["unknownFiles"] = ld.unknown + [d + "/" for d in ld.bad_dirs]
            entry["partitions"] = [partition_info(x).as_dict() for x in parts]
            report.append(entry)
    out = sys.stdout.buffer
    if fmt == "json":
        out.write(json_bytes(report, option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    from tabulate import tabulate

    for entry in report:
        head = entry["path"]
        if "lock" in entry:
            head += (f"  clean shutdown: {'yes' if entry['cleanShutdown'] else 'no'}"
                     f"  lock: {entry['lock']}")
        lines = [head]
        rows = [[f"{x['topic']}-{x['partition']}", x["segments"], x["start_offset"],
                 x["end_offset"], x["recovery_point"], x["high_watermark"], x["bytes"],
                 _ts(x["first_timestamp"]), _ts(x["max_timestamp"]),
                 ",".join(x["codecs"]) or "-", ",".join(x["leftovers"]) or "-"]
                for x in entry["partitions"] if fmt == "table" or x["records_batches"]]
        lines.append(tabulate(rows, headers=["partition", "segs", "start", "end", "recovery",
                                             "hw", "bytes", "first ts", "max ts", "codecs",
                                             "leftovers"],
                              tablefmt="simple" if fmt == "table" else "plain"))
        if entry.get("unknownFiles"):
            lines.append("unknown: " + ", ".join(entry["unknownFiles"]))
        out.write(("\n".join(lines) + "\n\n").encode("utf-8", ESCAPE))
    return 0
