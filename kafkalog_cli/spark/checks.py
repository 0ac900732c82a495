"""mode=check: `kafkalog verify`'s partition checks (storage.check.check_partition) in Spark
tasks, one row per partition dir: its log end offset, counters and every finding.

The log-dir-level checks (checkpoints against log end offsets, stray files) need all of a
log dir's partitions at once, so `verify --engine spark` runs them on the driver from these
rows (jobs.verify).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

import pyarrow as pa

from kafkalog_cli.codec.compression import DEFAULT_MAX_DECOMPRESSED
from kafkalog_cli.spark.plan import CheckGroup
from kafkalog_cli.storage.checks.check import CheckOptions, Stats, check_partition
from kafkalog_cli.storage.checks.findings import Findings
from kafkalog_cli.storage.disk import fs
from kafkalog_cli.storage.disk.logdir import parent_log_dir, scan_partition

STAT_FIELDS = ("partitions", "segments", "batches", "records", "bytes")
FINDING_FIELDS = ("severity", "code", "file", "position", "message", "expected", "found", "fix")


def read_checks(group: CheckGroup, schema: pa.Schema, *, shallow: bool,
                max_decompressed: int | None) -> Iterator[pa.RecordBatch]:
    opts = CheckOptions(shallow=shallow,
                        max_decompressed=max_decompressed or DEFAULT_MAX_DECOMPRESSED)
    for path in group.partition_dirs:
        part = scan_partition(fs.as_path(path), parent_log_dir(fs.as_path(path)))
        f, stats = Findings(), Stats()
        leo = check_partition(part, f, opts, stats)
        counters = asdict(stats)
        row = {"partitionDir": path, "topic": part.topic, "partition": part.partition,
               "logEndOffset": leo, **{k: counters[k] for k in STAT_FIELDS},
               "findings": [{k: getattr(x, k) for k in FINDING_FIELDS} for x in f.items]}
        yield pa.RecordBatch.from_arrays([pa.array([row[fl.name]], fl.type) for fl in schema],
                                         schema=schema)
