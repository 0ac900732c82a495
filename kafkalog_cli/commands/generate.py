"""`kafkalog generate`: deterministic, seeded log dirs for CI fixtures and drills."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from kafkalog_cli.codec.compression import NAMES
from kafkalog_cli.codec.layout import INT32_MAX, V2_HEADER_SIZE
from kafkalog_cli.commands import options
from kafkalog_cli.errors import UsageError
from kafkalog_cli.output.console import note
from kafkalog_cli.storage.disk.lock import LogDirLock
from kafkalog_cli.storage.drills.generate import PRESETS
from kafkalog_cli.storage.formats import formats


@click.command("generate")
@click.argument("out", type=options.LocalPath(path_type=Path))
@click.option("--preset", type=click.Choice(sorted(PRESETS)), help="A named recipe (fixtures).")
@click.option("--topic", "topics", multiple=True, type=options.TopicName(), default=["demo"],
              show_default=True)
@click.option("--partitions", type=options.Int32(min=1), default=1, show_default=True)
@click.option("--records", type=options.Int64(min=0), default=1000, show_default=True,
              help="Records per partition.")
@click.option("--batch-records", type=options.Int32(min=1), default=20, show_default=True)
@click.option("--value-bytes", type=options.Int32(min=0), default=100, show_default=True)
@click.option("--keys", type=options.Int32(min=0), default=50, show_default=True,
              help="Key cardinality (0: null keys).")
@click.option("--tombstones", type=options.Double(0, 1), default=0.05, show_default=True)
@click.option("--codec", "codecs", multiple=True, type=click.Choice(NAMES), default=["none"],
              show_default=True, help="Codecs, cycled per batch (repeatable).")
@click.option("--magic", type=options.Int8(min=0, max=2), default=2, show_default=True)
@click.option("--transactions", is_flag=True, help="Transactional batches with commits and aborts.")
@click.option("--idempotent", is_flag=True, help="Idempotent producer fields on data batches.")
@click.option("--jitter-ms", type=options.Int64(min=0), default=0,
              help="Randomise CreateTime by up to this much (non-monotonic timestamps).")
@click.option("--segment-bytes", type=options.CONFIGS["segment.bytes"], default=16384,
              show_default=True)
@click.option("--seed", type=options.Int64(), default=1, show_default=True)
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
@click.option("--damage", "damages", multiple=True,
              type=click.Choice(list(dict.fromkeys(k for f in formats()[::-1]
                                                   for k in f.damage_kinds))),
              help="Damage the result for repair drills (repeatable); what was done is "
                   "printed on stderr.")
@click.option("--format", "layout", type=click.Choice([f.name for f in formats()[::-1]]),
              default="current", show_default=True,
              help="0.7 writes Kafka 0.7 partitions (.kafka segments, byte offsets; "
                   "--damage then takes " + ", ".join(formats()[0].damage_kinds) + ").")
def command(out: Path, preset: str | None, topics: tuple[str, ...], partitions: int,
            records: int, batch_records: int, value_bytes: int, keys: int, tombstones: float,
            codecs: tuple[str, ...], magic: int, transactions: bool, idempotent: bool,
            jitter_ms: int, segment_bytes: int, seed: int, force: bool,
            damages: tuple[str, ...], layout: str) -> int:
    """Write a deterministic log dir: the same options always give the same bytes.

    \b
    Examples:
      kafkalog generate /tmp/ld --topic orders --partitions 3 --codec lz4 --transactions
      kafkalog generate fixtures/sample --preset sample --force
      kafkalog generate /tmp/legacy --magic 0 --codec gzip --records 500
      kafkalog generate /tmp/drill --damage torn-tail --damage swap-leftover
    """
    per_batch = min(batch_records, max(records, 1)) * (value_bytes + _RECORD_OVERHEAD)
    if per_batch > INT32_MAX - V2_HEADER_SIZE:  # a batch's length field is an INT32
        raise UsageError(f"--value-bytes {value_bytes} x --batch-records {batch_records}: a "
                         f"batch would hold about {per_batch} bytes, more than its length "
                         f"field takes ({INT32_MAX}); lower one of them")
    if out.exists() or out.is_symlink():
        if not force:
            raise UsageError(f"{out} exists; pass --force to replace it")
        _remove(out)
    fmt = next(f for f in formats() if f.name == layout)
    try:
        for line in fmt.generate(out, preset=preset, damages=damages, topics=topics,
                                 partitions=partitions, records=records,
                                 batch_records=batch_records, value_bytes=value_bytes,
                                 keys=keys, tombstones=tombstones, codecs=codecs, magic=magic,
                                 transactions=transactions, idempotent=idempotent,
                                 jitter_ms=jitter_ms, segment_bytes=segment_bytes, seed=seed):
            note(line)
    except BaseException:
        # OUT is this run's own (it did not exist, or --force removed it): no half-written
        # dir left behind, so a rerun needs no --force
        if out.is_dir() and not out.is_symlink():
            shutil.rmtree(out, ignore_errors=True)
        raise
    return 0


_RECORD_OVERHEAD = 64  # a record's bytes besides its value, at most (key, varints, header)


def _remove(out: Path) -> None:
    """OUT gone, for --force: a link or a file itself (never what a link points to); a dir
    only while its .lock is ours, so a running broker's log dir is refused (LockHeld)."""
    if out.is_symlink() or not out.is_dir():
        out.unlink()
        return
    with LogDirLock(out):
        shutil.rmtree(out)
