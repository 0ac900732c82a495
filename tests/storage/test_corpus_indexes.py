"""index-rebuild against the broker's own indexes in the shared corpus.

Where the broker used the default index.interval.bytes and wrote one append per batch, the
rebuild is byte-identical. Every other segment must differ for a reason that can be seen
in the files themselves:
  magic0    Kafka 0.9 indexed a compressed wrapper by its first inner offset, and indexed
            multi-message produce requests once per request
  rec-ts    brokers before KAFKA-16310 (3.8) put the offset of the record holding the max
            timestamp in the time index, not the batch's last offset
  appends   entries spaced per broker append or restarted after a broker restart
            (bytesSinceLastIndexEntry starts at 0 for a reopened segment); a valid index
            that simply is not the recovery algorithm's
"""

from kafkalog_cli.storage.disk.index import OffsetIndex, TimeIndex
from kafkalog_cli.storage.disk.logdir import open_target
from kafkalog_cli.storage.maintenance.rebuild import rebuild_segment
from tests.conftest import CORPUS


def classify(seg) -> str | None:
    r = rebuild_segment(seg)
    oi, ti, _tx = r.index_bytes()
    broker_oi = seg.path(".index").read_bytes()
    broker_ti = seg.path(".timeindex").read_bytes() if seg.has_timeindex else None
    if broker_oi == oi and (broker_ti is None or broker_ti == ti):
        return None
    batches = [(p, b) for p, b in seg.batches()]
    if any(b.magic == 0 for _p, b in batches):
        return "magic0"
    lasts = {b.last_offset for _p, b in batches}
    if broker_ti is not None and any(
            o not in lasts
            for _t, o in TimeIndex.read(seg.path(".timeindex"), seg.base_offset).entries):
        return "rec-ts"
    starts = {p for p, _b in batches}
    entries = OffsetIndex.read(seg.path(".index"), seg.base_offset).entries
    assert all(p in starts for _o, p in entries), f"{seg.log_path}: broker index off batch starts"
    return "appends"


def test_rebuild_matches_the_broker_or_the_difference_is_explained():
    same, why = [], {}
    for ld in open_target(CORPUS).log_dirs:
        for part in ld.partitions:
            for seg in part.segments:
                if seg.has_index and seg.size:
                    reason = classify(seg)
                    if reason is None:
                        same.append(seg.log_path)
                    else:
                        why.setdefault(reason, []).append(seg.log_path)
    assert len(same) >= 30
    assert set(why) <= {"magic0", "rec-ts", "appends"}
    # the 0.9 broker's compressed and multi-message topics, and two pre-3.8 brokers
    assert {p.parent.parent.name for p in why.get("magic0", [])} == {"kafka-0.9-legacy"}
    assert {p.parent.parent.name for p in why.get("rec-ts", [])} <= {"aryanjadon-zk",
                                                                      "william0423-zk-2.4"}
