"""Which producer snapshots a broker's load deletes, so that verify reports and recover
removes the same files.

After recovering the segments, LogLoader.load calls, in this order:
  1. ProducerStateManager.removeStraySnapshots(segment base offsets): a snapshot at an
     offset that is no segment's base offset is stray; every stray one goes but the
     largest, and that one goes too unless it lies above the largest base offset (the
     snapshot a clean shutdown writes at the log end)
  2. UnifiedLog.rebuildProducerState -> ProducerStateManager.truncateAndReload(log start,
     log end): of those left, every one at an offset > log end or <= log start goes
The order matters: the largest stray is picked before step 2 drops what lies past the log
end, so a stray past the end still makes every smaller stray go (with one at the log end
and one past it, both go).

The broker's recovery of unflushed segments writes snapshots at their ends first (the log
end's too), which can only make more of the stray ones go; this rule takes the files as
they are, so what it names the broker deletes either way.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

STRAY = "stray"
PAST_END = "past the log end"
AT_OR_BELOW_START = "at or below the log start"


def snapshots_the_load_deletes(snapshots: Iterable[int], bases: Collection[int],
                               log_start: int, log_end: int) -> dict[int, str]:
    """Offset -> why (STRAY, PAST_END, AT_OR_BELOW_START) for each snapshot the load
    deletes, given the segments' base offsets once recovered, the log start offset
    (checkpoints.log_start_offset) and the log end offset. A log start past the log end
    is verify's LOG_START_PAST_END: the broker then deletes every segment and snapshot
    (LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd), which is not modelled here; only
    the snapshots past the log end are named then."""
    offsets = sorted(set(snapshots))
    if log_start > log_end:
        return {off: PAST_END for off in offsets if off > log_end}
    doomed: dict[int, str] = {}
    strays = [off for off in offsets if off not in bases]
    keep = strays[-1] if strays and (not bases or strays[-1] > max(bases)) else None
    for off in strays:
        if off != keep:
            doomed[off] = STRAY
    for off in offsets:
        if off in doomed:
            continue
        if off > log_end:
            doomed[off] = PAST_END
        elif off <= log_start:
            doomed[off] = AT_OR_BELOW_START
    return doomed
