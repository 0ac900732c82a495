"""`kafkalog generate`: deterministic, seeded log dirs for CI fixtures and drills."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from kafkalog_cli.codec.compression import NAMES
from kafkalog_cli.commands import options, v07
from kafkalog_cli.errors import UsageError
from kafkalog_cli.output.console import note
from kafkalog_cli.storage.disk.logdir import open_target
from kafkalog_cli.storage.drills.damage import KINDS, apply_damage
from kafkalog_cli.storage.drills.generate import GenSpec, generate

# The fixture `make demo` and the tests use: every codec, headers, nulls, tombstones,
# transactions with commits and aborts, an idempotent producer, legacy magic 0 and 1.
PRESETS: dict[str, list[tuple[str, GenSpec]]] = {
    "sample": [
        ("demo", GenSpec(topics=["demo"], partitions=2, records=600, codecs=list(NAMES),
                         transactions=True, idempotent=True, seed=11)),
        ("legacy", GenSpec(topics=["legacy-v0"], records=200, magic=0, keys=20,
                           codecs=["none", "gzip", "snappy", "lz4"], headers=False, seed=12)),
        ("legacy", GenSpec(topics=["legacy-v1"], records=200, magic=1, keys=20,
                           codecs=["none", "gzip", "snappy", "lz4"], headers=False, seed=13)),
        ("logappend", GenSpec(topics=["appendtime"], records=100, log_append_time=True,
                              codecs=["none", "zstd"], seed=14)),
    ],
}


@click.command("generate")
@click.argument("out", type=click.Path(path_type=Path))
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
@click.option("--damage", "damages", multiple=True, type=click.Choice(v07.damage_kinds(KINDS)),
              help="Damage the result for repair drills (repeatable); what was done is "
                   "printed on stderr.")
@v07.generate_options
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
    if out.exists():
        if not force:
            raise UsageError(f"{out} exists; pass --force to replace it")
        shutil.rmtree(out)
    if layout != "current" or not set(damages) <= set(KINDS):  # Kafka 0.7 partitions
        return v07.generate(out, layout=layout, damage=damages, preset=preset, topics=topics,
                            partitions=partitions, records=records, batch_records=batch_records,
                            value_bytes=value_bytes, codecs=codecs, magic=magic,
                            segment_bytes=segment_bytes, seed=seed)
    if preset:
        for _name, spec in PRESETS[preset]:
            generate(out, spec)
    else:
        spec = GenSpec(topics=list(topics), partitions=partitions, records=records,
                       batch_records=batch_records, value_bytes=value_bytes, keys=keys,
                       tombstone_ratio=tombstones, codecs=list(codecs), magic=magic,
                       transactions=transactions, idempotent=idempotent, jitter_ms=jitter_ms,
                       segment_bytes=segment_bytes, seed=seed)
        generate(out, spec)
    if damages:
        parts = open_target(out).partitions()
        for i, kind in enumerate(damages):
            note(f"damage {kind}: " + apply_damage(parts[i % len(parts)], kind, seed + i))
    note(f"wrote {out}")
    return 0
