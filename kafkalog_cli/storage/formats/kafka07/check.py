"""verify for Kafka 0.7 partitions: every finding, with a stable code and the fixing command.

Checks, per partition (what 0.7's Log/LogManager/FileMessageSet would trip over, and more):
  1. the dir name splits as `<topic>-<partition>` (Utils.getTopicPartition), else an error
  2. it holds no 0.8+ files beside the `.kafka` segments (mixed: reported, not guessed)
  3. segment names parse as a Long (0.7 crashes on others) and are 20 digits wide
  4. each segment starts where the previous one ends (Log.validateSegments)
  5. every entry of every segment: size, magic, CRC, entries past the end of the file,
     torn or zeroed tails, each at its byte position (scanner in v07.py, with resync so
     damage mid-file does not hide what follows)
  6. unless shallow: compressed payloads decompress into valid inner messages
Per log dir: 0.8+ partition dirs beside 0.7 ones (mixed), subdirs that are no partition,
files 0.7 does not write, and a missing clean-shutdown marker (0.7 then recovers the
newest segment of every partition at start-up).
"""

from __future__ import annotations

from pathlib import Path

from kafkalog_cli.codec.message_v07 import inner_messages
from kafkalog_cli.codec.model import Damage
from kafkalog_cli.errors import CorruptDataError
from kafkalog_cli.storage.checks.check import CheckOptions, Stats
from kafkalog_cli.storage.checks.findings import ERROR, INFO, WARNING, Findings
from kafkalog_cli.storage.formats.kafka07.layout import (
    CLEAN_SHUTDOWN,
    LOCK,
    NAME_WIDTH,
    Partition07,
    Segment07,
    Target07,
    parse_partition_dir,
)
from kafkalog_cli.storage.formats.kafka07.scan import iter_entries
from kafkalog_cli.storage.maintenance.floor import recover_command

DAMAGE_CODES = {"torn-tail": "V07_TORN_TAIL", "size-past-end": "V07_SIZE_PAST_END",
                "bad-size": "V07_BAD_SIZE", "zero-tail": "V07_ZERO_TAIL",
                "bad-magic": "V07_BAD_MAGIC", "crc-mismatch": "V07_CRC_MISMATCH",
                "entry-too-big": "V07_ENTRY_TOO_BIG", "unsearched": "V07_UNSEARCHED"}


def check_target(t: Target07, f: Findings, opts: CheckOptions, stats: Stats) -> None:
    if t.kind == "logdir":
        _check_log_dir(t, f)
    for part in t.partitions:
        check_partition(part, f, opts, stats, single_file=t.kind == "file")


def _check_log_dir(t: Target07, f: Findings) -> None:
    for d in t.modern_dirs:
        f.add(ERROR, "V07_MIXED_LOG_DIR", d, None,
              "0.8+ partition dir in a log dir of Kafka 0.7 partitions: neither broker reads "
              "the other's format; kafkalog does not guess which one is current",
              fix=f"kafkalog migrate the 0.7 partitions, or move {d.name} out")
    for name in t.bad_dirs:
        if parse_partition_dir(name) is not None:
            f.add(WARNING, "V07_EMPTY_PARTITION", t.path / name, None,
                  "partition dir without segments (0.7 would start it with an empty segment "
                  "at offset 0)")
        else:
            f.add(ERROR, "V07_BAD_DIR", t.path / name, None,
                  "a directory in a 0.7 log dir whose name is not <topic>-<partition> (0.7 "
                  "loads every subdir as a partition and fails on it)")
    for name in t.root_files:
        if name not in (CLEAN_SHUTDOWN, LOCK):
            f.add(WARNING, "UNKNOWN_FILE", t.path / name, None,
                  "not a file Kafka 0.7 writes in a log dir")
    if CLEAN_SHUTDOWN not in t.root_files:
        f.add(INFO, "V07_UNCLEAN_SHUTDOWN", t.path, None,
              f"no {CLEAN_SHUTDOWN}: a 0.7 broker would recover the newest segment of each "
              "partition at start-up")


def check_partition(part: Partition07, f: Findings, opts: CheckOptions, stats: Stats, *,
                    single_file: bool = False) -> None:
    stats.partitions += 1
    pdir = part.path
    if part.name is None:
        f.add(ERROR, "V07_BAD_DIR_NAME", pdir, None,
              "partition dir name is not <topic>-<partition> (0.7 splits it at the last '-' and "
              "needs an int after it)")
    if part.mixed:
        f.add(ERROR, "V07_MIXED_DIR", pdir, None,
              "holds both Kafka 0.7 .kafka segments and 0.8+ files ("
              + ", ".join(part.modern_files[:5]) + ("…" if len(part.modern_files) > 5 else "")
              + "); kafkalog checks the .kafka segments only and does not guess which is current",
              fix="move one of the two sets of files out")
    if not single_file:
        for name in part.bad_names:
            f.add(ERROR, "V07_BAD_SEGMENT_NAME", pdir / name, None,
                  "a .kafka file whose name is not a number: 0.7 fails to load the partition")
        for name in part.odd_names:
            f.add(WARNING, "V07_SEGMENT_NAME_WIDTH", pdir / name, None,
                  f"segment name is not {NAME_WIDTH} digits wide (0.7 reads it, but writes "
                  f"{NAME_WIDTH} digits)")
        for name in part.unknown:
            f.add(WARNING, "UNKNOWN_FILE", pdir / name, None,
                  "not a file Kafka 0.7 writes in a partition dir")
    prev: Segment07 | None = None
    start = len(f.items)
    placeholder = recover_command(pdir)
    first_bad: tuple[int, int] | None = None  # (segment index, entries after the damage)
    later_entries = 0
    for i, seg in enumerate(part.segments):
        if prev is not None and prev.end != seg.start:
            what = "a gap after" if seg.start > prev.end else "an overlap with"
            f.add(ERROR, "V07_SEGMENT_NAME_MISMATCH", seg.path, None,
                  f"segment name leaves {what} {prev.path.name} (start {prev.start} + size "
                  f"{prev.size}); 0.7 refuses to load the partition (Log.validateSegments)",
                  expected=prev.end, found=seg.start)
        stats.segments += 1
        bad, after, entries = _check_segment(seg, f, opts, stats, placeholder)
        if first_bad is None and bad is not None:
            first_bad = (i, after)
        elif first_bad is not None:
            later_entries += entries
        prev = seg
    if first_bad is not None:
        # recover reads only the newest segment unless --full, and cuts at the first damage,
        # which needs --force when whole entries follow it (v07_recovery.py)
        i, after = first_bad
        full = single_file or i < len(part.segments) - 1
        f.refix(start, placeholder, recover_command(pdir, full=full,
                                                    force=bool(after or later_entries)))


def _check_segment(seg: Segment07, f: Findings, opts: CheckOptions, stats: Stats,
                   fix: str) -> tuple[int | None, int, int]:
    """(position of the first damage or undecodable entry, whole entries after it, whole
    entries in all)."""
    path = seg.path
    bad: list[int] = []

    def on_damage(d: Damage) -> None:
        bad.append(d.position)
        f.add(ERROR, DAMAGE_CODES.get(d.code, "V07_DAMAGE"), path, d.position,
              f"{d.reason} (offset {seg.start + d.position}; {d.size} bytes affected)", fix=fix)

    entries = after = 0
    for pos, msg in iter_entries(path, on_damage=on_damage, resync=True):
        entries += 1
        if bad and pos > bad[0]:
            after += 1
        stats.batches += 1
        stats.bytes += msg.entry_size
        if opts.shallow:
            continue
        try:
            stats.records += sum(1 for _ in inner_messages(msg, opts.max_decompressed))
        except CorruptDataError as e:
            bad.append(pos)
            f.add(ERROR, "V07_INNER_INVALID", path, pos,
                  f"compressed message at offset {seg.start + pos} does not decode: {e.reason}",
                  fix=fix)
    return (bad[0] if bad else None), after, entries


def target_problems(t: Target07) -> list[tuple[Path, str]]:
    """Reasons not to touch a target at all (mixed dirs): (path, message)."""
    out = [(d, "0.8+ partition dir in a log dir of 0.7 partitions (mixed); name the 0.7 "
               "partition dirs one by one") for d in t.modern_dirs]
    for part in t.partitions:
        if part.mixed:
            out.append((part.path, "holds both Kafka 0.7 .kafka segments and 0.8+ files ("
                        + ", ".join(part.modern_files[:3]) + "); kafkalog does not guess which "
                        "is current: move one set out"))
    return out
