"""Run in a subprocess: replace the first two segments of a partition by one segment holding
only their even offsets (a stand-in for a cleaner), through replace.py's protocol."""

import sys
from pathlib import Path

from kafkalog_cli.codec.batch_v2 import encode_batch
from kafkalog_cli.storage.disk import naming
from kafkalog_cli.storage.disk.logdir import scan_partition
from kafkalog_cli.storage.disk.segment import Segment
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from kafkalog_cli.storage.maintenance.rebuild import rebuild_segment
from kafkalog_cli.storage.maintenance.replace import replace_segments


def main(pdir: Path) -> None:
    part = scan_partition(pdir)
    old = part.segments[:2]
    base = old[0].base_offset
    out = bytearray()
    for seg in old:
        for _pos, b in seg.batches():
            if b.is_control or b.is_transactional:
                out += bytes(b.data)
                continue
            keep = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records()
                    if r.offset % 2 == 0]
            out += encode_batch(keep, base_offset=b.base_offset,
                                last_offset_delta=b.last_offset_delta, codec=b.compression,
                                max_timestamp=b.max_timestamp, empty_ok=True) \
                if keep else encode_batch([], base_offset=b.base_offset,
                                          last_offset_delta=b.last_offset_delta,
                                          max_timestamp=b.max_timestamp)
    cleaned = pdir / naming.segment_file_name(base, naming.LOG, naming.CLEANED)
    cleaned.write_bytes(bytes(out))
    tmp = Segment(pdir, base, has_log=True, temp=naming.CLEANED)
    oi, ti, _tx = rebuild_segment(tmp).index_bytes()
    (pdir / naming.segment_file_name(base, naming.INDEX, naming.CLEANED)).write_bytes(oi)
    (pdir / naming.segment_file_name(base, naming.TIMEINDEX, naming.CLEANED)).write_bytes(ti)
    replace_segments(pdir, [base], [s.base_offset for s in old], Quarantine(pdir.parent))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
