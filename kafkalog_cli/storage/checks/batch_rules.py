"""What makes one batch of a segment sound, decided in one place: verify reports every fault
a batch has, and recover cuts the log at the first batch with any, so the two always agree
on where a log stops being good.

Header rules (no decompression):
  LOG_CRC_MISMATCH        the stored CRC is not the computed one (Kafka's ensureValid)
  LOG_BATCH_INVALID       negative lastOffsetDelta
  LOG_OFFSET_ORDER        the batch does not start after the previous batch's last offset
  SEGMENT_BASE_MISMATCH   a segment's first batch starts below the base offset in its name
  SEGMENT_OVERLAP         a segment's base offset is not above the previous segment's last
                          (a property of the segment: verify's check_partition reports it)
  LOG_OFFSET_OVERFLOW     the last offset does not fit relative to the base (KAFKA-6264)
Record rules (deep):
  LOG_RECORDS_INVALID, LOG_RECORD_OFFSET_ORDER, LOG_RECORD_OFFSET_RANGE,
  LOG_INNER_CRC_MISMATCH, LOG_CONTROL_INVALID
  LOG_RECORDS_OVER_CAP    (a warning, never cut) the records inflate past the cap
A broker's LogSegment.recover checks only the CRC, the size and the offset range (and the
control record of a transaction marker, through producer state); the others are stricter,
because a consumer fails on such a batch just the same.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from kafkalog_cli.codec import compression
from kafkalog_cli.codec.batch_v2 import RecordBatch
from kafkalog_cli.codec.control import parse_control
from kafkalog_cli.codec.entry import Batch
from kafkalog_cli.codec.layout import INT32_MAX
from kafkalog_cli.codec.message_v01 import LegacyBatch
from kafkalog_cli.errors import CorruptDataError, DecompressionLimit

# A batch that inflates past --max-decompressed-bytes: kafkalog's own memory guard, not
# damage (a broker's recovery reads only the CRC and the headers; a consumer inflates it).
# verify warns that its records went unchecked; recover keeps it.
OVER_CAP = "LOG_RECORDS_OVER_CAP"


@dataclass(frozen=True, slots=True)
class Fault:
    code: str
    message: str
    expected: object = None
    found: object = None


def first_offset(b: Batch) -> int:
    """The batch's first offset as far as the header tells: a compressed v0/v1 wrapper
    carries only its last inner offset."""
    if b.magic == 2 or b.compression == compression.NONE:
        return b.base_offset
    return b.last_offset


def header_faults(b: Batch, base: int, prev_last: int | None, first_in_segment: bool
                  ) -> list[Fault]:
    """`prev_last` is the largest offset before this batch (in this or an earlier segment)."""
    out = []
    stored, actual = b.crc, b.compute_crc()
    if stored != actual:
        out.append(Fault("LOG_CRC_MISMATCH",
                         f"batch CRC mismatch ({'CRC-32C' if b.magic == 2 else 'CRC-32'}); its "
                         "length field is not trusted either", actual, stored))
    if isinstance(b, RecordBatch) and b.last_offset_delta < 0:
        out.append(Fault("LOG_BATCH_INVALID", f"negative lastOffsetDelta {b.last_offset_delta}"))
    first = first_offset(b)
    if prev_last is not None and first <= prev_last:
        out.append(Fault("LOG_OFFSET_ORDER", f"batch starts at offset {first}, not after the "
                         f"previous last offset {prev_last}", f"> {prev_last}", first))
    if first_in_segment and first < base:
        out.append(Fault("SEGMENT_BASE_MISMATCH", f"first batch starts at offset {first}, below "
                         f"the segment base offset {base} in the file name", f">= {base}", first))
    if not 0 <= b.last_offset - base <= INT32_MAX:
        out.append(Fault("LOG_OFFSET_OVERFLOW", f"last offset {b.last_offset} is not "
                         f"representable relative to base {base} (KAFKA-6264 overflow)"))
    return out


def record_faults(b: Batch, max_decompressed: int) -> tuple[list[Fault], int]:
    """Faults of the records inside, and how many records decoded. Records are read one at
    a time (a batch may claim millions of them); past an order fault they are only counted."""
    try:
        recs = b.records(max_decompressed)
    except DecompressionLimit as e:  # our cap, not damage: Kafka and consumers read it
        return [Fault(OVER_CAP, f"records not checked: {e.reason}")], 0
    except CorruptDataError as e:
        return [Fault("LOG_RECORDS_INVALID", f"records do not decode: {e.reason}")], 0
    out = []
    first = prev = None
    n = 0
    ordered = True
    control = b.is_control
    for r in recs:
        n += 1
        if not ordered:
            continue
        if prev is None:
            first = r.offset
        elif r.offset <= prev:
            out.append(Fault("LOG_RECORD_OFFSET_ORDER",
                             f"record offset {r.offset} does not increase within the batch"))
            ordered = False
            continue
        prev = r.offset
        if control:
            try:
                parse_control(r.key, r.value)
            except CorruptDataError as e:
                out.append(Fault("LOG_CONTROL_INVALID",
                                 f"control record at offset {r.offset}: {e.reason}"))
    if not ordered:
        return out, n
    # first and prev: the first and last record's offsets (None: no records)
    if first is not None and prev is not None and b.magic == 2 and (
            first < b.base_offset or prev > b.last_offset):
        out.append(Fault("LOG_RECORD_OFFSET_RANGE",
                         f"record offsets {first}..{prev} fall outside the batch's "
                         f"{b.base_offset}..{b.last_offset}"))
    if isinstance(b, LegacyBatch):
        with contextlib.suppress(CorruptDataError):  # decoded above, so it does not fail
            out += [Fault("LOG_INNER_CRC_MISMATCH", f"inner message at offset {off} of a "
                          "compressed wrapper fails its CRC-32") for off in b.inner_crc_failures()]
    return out, n


@dataclass
class BatchRules:
    """The rules recover applies while it walks a partition's segments in order; carries
    the largest offset seen so far across segments."""

    deep: bool = True
    max_decompressed: int = compression.DEFAULT_MAX_DECOMPRESSED
    prev_last: int | None = None

    def fault(self, b: Batch, base: int, first_in_segment: bool) -> Fault | None:
        """The first fault of `b`, or None (then `b` counts as the previous batch)."""
        faults = header_faults(b, base, self.prev_last, first_in_segment)
        if first_in_segment and self.prev_last is not None and base <= self.prev_last:
            faults.append(Fault("SEGMENT_OVERLAP", f"segment base offset {base} is not above "
                                f"the previous segment's last offset {self.prev_last}"))
        if not faults and self.deep:  # over the cap is no reason to cut (OVER_CAP)
            faults = [f for f in record_faults(b, self.max_decompressed)[0]
                      if f.code != OVER_CAP]
        if faults:
            return faults[0]
        self.prev_last = b.last_offset if self.prev_last is None else max(self.prev_last,
                                                                           b.last_offset)
        return None
