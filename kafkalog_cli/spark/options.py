"""Reader options of the `kafkalog` Spark data source, parsed once, without Spark.

Names follow Spark's Kafka source (structured-streaming-kafka-integration) where they fit:

  subscribe            topic1,topic2                  at most one of subscribe,
  subscribePattern     regex (whole-name match)       subscribePattern and assign;
  assign               {"t":[0,1]}                    none means every topic
  startingOffsets      earliest | latest | {"t":{"0":23,"1":-2}}   (-2 earliest, -1 latest)
  endingOffsets        latest | {"t":{"0":50}}                     (exclusive, as in Spark)
  startingTimestamp / endingTimestamp                 epoch ms for every partition
  startingOffsetsByTimestamp / endingOffsetsByTimestamp   {"t":{"0":1700000000000}}
  includeHeaders       false                          adds the `headers` column
  isolation.level      read_uncommitted | read_committed (also as kafka.isolation.level)
  minPartitions        split big segments at offset-index entries to reach this many
and kafkalog's own: verifyCrc (true), failOnDataLoss (true), includeControl (false),
mode (records | batches | check), and for mode=check shallow (false) and
maxDecompressedBytes.

Precedence as in Spark: startingTimestamp > startingOffsetsByTimestamp > startingOffsets
(and the same for the ending side). A time bound becomes, per partition, the first offset
whose timestamp is at or after it (ListOffsets); where there is none, the bound is the log
end, so a starting bound past every record reads nothing from that partition (Spark's
`startingOffsetsByTimestampStrategy=latest`). Partitions an offsets JSON does not name
read from the earliest / to the latest offset.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.codec.layout import INT32_MAX, INT64_MAX

EARLIEST = -2
LATEST = -1
MODES = ("records", "batches", "check")

# every option the source understands, lower-cased (Spark hands them over case-insensitively)
KNOWN = frozenset({
    "path", "paths", "subscribe", "subscribepattern", "assign", "startingoffsets",
    "endingoffsets", "startingtimestamp", "endingtimestamp", "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp", "includeheaders", "isolation.level", "kafka.isolation.level",
    "minpartitions", "verifycrc", "failondataloss", "includecontrol", "mode", "shallow",
    "maxdecompressedbytes",
})

PerPartition = dict[tuple[str, int], int]


class OptionError(ValueError):
    """An option value the source cannot use; the message names the option."""


@dataclass(frozen=True)
class OffsetSpec:
    """One side of the read range: a default plus per-partition values (offsets or times)."""

    default: int = EARLIEST  # EARLIEST / LATEST, or an epoch-ms time when by_time
    by_time: bool = False
    per_partition: PerPartition = field(default_factory=dict)
    per_partition_by_time: bool = False

    def for_partition(self, topic: str, partition: int) -> tuple[int, bool]:
        """(value, value is a timestamp) for one partition."""
        if self.by_time:
            return self.default, True
        v = self.per_partition.get((topic, partition))
        if v is not None:
            return v, self.per_partition_by_time
        return self.default, False


@dataclass(frozen=True)
class ReadOptions:
    paths: tuple[str, ...]
    topics: frozenset[str] | None = None
    pattern: str | None = None
    assign: frozenset[tuple[str, int]] | None = None
    starting: OffsetSpec = OffsetSpec(EARLIEST)
    ending: OffsetSpec = OffsetSpec(LATEST)
    include_headers: bool = False
    read_committed: bool = False
    min_partitions: int | None = None
    verify_crc: bool = True
    fail_on_data_loss: bool = True
    include_control: bool = False
    mode: str = "records"
    shallow: bool = False
    max_decompressed: int | None = None

    def wants(self, topic: str, partition: int) -> bool:
        if self.topics is not None and topic not in self.topics:
            return False
        if self.pattern is not None and re.fullmatch(self.pattern, topic) is None:
            return False
        return self.assign is None or (topic, partition) in self.assign


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    v = opts.get(name.lower())
    if v is None:
        return default
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name}: expected true or false, got {v!r}")


_ASCII_INT = re.compile(r"[+-]?[0-9]{1,30}")  # int() also takes '٣' and '1_000'


def _int(name: str, v: Any, lo: int, hi: int = INT64_MAX) -> int:
    """An integer in [lo, hi] (offsets and times are INT64, partitions INT32), in ASCII
    digits, from the option's text or a JSON number."""
    text = str(v).strip()
    if isinstance(v, bool) or not _ASCII_INT.fullmatch(text):
        raise OptionError(f"option {name}: expected an integer in [{lo}, {hi}], got {v!r}")
    n = int(text)
    if not lo <= n <= hi:
        raise OptionError(f"option {name}: {n} is out of range [{lo}, {hi}]")
    return n


def _json(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise OptionError(f"option {name}: not valid JSON ({e})") from None


def _per_partition(name: str, text: str, lo: int) -> PerPartition:
    """{"topic": {"0": value, ...}, ...} -> {(topic, 0): value}."""
    obj = _json(name, text)
    if not isinstance(obj, dict):
        raise OptionError(f"option {name}: expected {{\"topic\": {{\"partition\": value}}}}")
    out: PerPartition = {}
    for topic, parts in obj.items():
        if not isinstance(parts, dict):
            raise OptionError(f"option {name}: topic {topic!r} must map partitions to values")
        for p, v in parts.items():
            out[(str(topic), _int(name, p, 0, INT32_MAX))] = _int(name, v, lo)
    return out


def _side(opts: Mapping[str, str], side: str, default: int) -> OffsetSpec:
    """startingOffsets/startingTimestamp/startingOffsetsByTimestamp (or ending*)."""
    ts = opts.get(f"{side}timestamp")
    if ts is not None:
        return OffsetSpec(_int(f"{side}Timestamp", ts, 0), by_time=True)
    by_ts = opts.get(f"{side}offsetsbytimestamp")
    if by_ts is not None:
        return OffsetSpec(default, per_partition=_per_partition(
            f"{side}OffsetsByTimestamp", by_ts, 0), per_partition_by_time=True)
    off = opts.get(f"{side}offsets")
    if off is None:
        return OffsetSpec(default)
    s = off.strip()
    if s.lower() == "earliest":
        return OffsetSpec(EARLIEST)
    if s.lower() == "latest":
        return OffsetSpec(LATEST)
    return OffsetSpec(default, per_partition=_per_partition(f"{side}Offsets", s, LATEST - 1))


def _paths(opts: Mapping[str, str]) -> tuple[str, ...]:
    if opts.get("paths"):
        raw = _json("paths", opts["paths"])
        paths = tuple(str(p) for p in (raw if isinstance(raw, list) else [raw]))
    elif opts.get("path"):
        paths = (opts["path"],)
    else:
        paths = ()
    if not paths:
        raise OptionError("no path: use spark.read.format('kafkalog').load(PATH_OR_GLOB)")
    return paths


def parse(options: Mapping[str, str]) -> ReadOptions:
    """Validate and parse the options Spark passes (keys in any case)."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    unknown = sorted(k for k in opts if k not in KNOWN and not k.startswith("kafka."))
    if unknown:
        raise OptionError(f"unknown option(s): {', '.join(unknown)}")
    given = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
    if len(given) > 1:
        raise OptionError("use only one of subscribe, subscribePattern and assign")
    topics = pattern = assign = None
    if opts.get("subscribe"):
        topics = frozenset(t.strip() for t in opts["subscribe"].split(",") if t.strip())
    if opts.get("subscribepattern"):
        pattern = opts["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as e:
            raise OptionError(f"option subscribePattern: {e}") from None
    if opts.get("assign"):
        obj = _json("assign", opts["assign"])
        if not isinstance(obj, dict) or not all(isinstance(v, list) for v in obj.values()):
            raise OptionError('option assign: expected {"topic": [0, 1], ...}')
        assign = frozenset((str(t), _int("assign", p, 0, INT32_MAX))
                           for t, ps in obj.items() for p in ps)
    level = opts.get("isolation.level", opts.get("kafka.isolation.level", "read_uncommitted"))
    if level not in ("read_uncommitted", "read_committed"):
        raise OptionError(f"option isolation.level: expected read_uncommitted or read_committed, "
                          f"got {level!r}")
    mode = opts.get("mode", "records").lower()
    if mode not in MODES:
        raise OptionError(f"option mode: expected one of {', '.join(MODES)}, got {mode!r}")
    mp = opts.get("minpartitions")
    md = opts.get("maxdecompressedbytes")
    return ReadOptions(
        paths=_paths(opts), topics=topics, pattern=pattern, assign=assign,
        starting=_side(opts, "starting", EARLIEST), ending=_side(opts, "ending", LATEST),
        include_headers=_bool(opts, "includeHeaders", False),
        read_committed=level == "read_committed",
        min_partitions=None if mp is None else _int("minPartitions", mp, 1, INT32_MAX),
        verify_crc=_bool(opts, "verifyCrc", True),
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        include_control=_bool(opts, "includeControl", False), mode=mode,
        shallow=_bool(opts, "shallow", False),
        max_decompressed=None if md is None else _int("maxDecompressedBytes", md, 1, INT32_MAX))
