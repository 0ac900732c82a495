"""Mutated 0.7 segments never give a traceback, a hang, or an unbounded read."""

import contextlib
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.codec.message_v07 import inner_messages
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.storage.checks.check import CheckOptions, Stats
from kafkalog_cli.storage.checks.findings import Findings
from kafkalog_cli.storage.drills.generate07 import Gen07Spec, generate
from kafkalog_cli.storage.formats.kafka07.check import check_target
from kafkalog_cli.storage.formats.kafka07.layout import find_target
from kafkalog_cli.storage.formats.kafka07.migrate import MigrateOptions, migrate_partition
from kafkalog_cli.storage.formats.kafka07.recovery import apply_plan, plan_partition
from kafkalog_cli.storage.formats.kafka07.scan import iter_entries
from kafkalog_cli.storage.maintenance.quarantine import Quarantine
from tests.cli.run import run
from tests.faults.surgery import mutate, mutation

_SRC = Path(tempfile.mkdtemp(prefix="kafkalog-v07-fuzz-")) / "ld"
generate(_SRC, Gen07Spec(records=60, batch_records=4, codecs=["none", "gzip", "snappy"],
                         segment_bytes=1500, seed=3))
SOURCES = sorted(_SRC.glob("demo-0/*.kafka"))
ORIGINALS = {p: p.read_bytes() for p in SOURCES}


def exercise(pdir: Path, tmp: Path) -> None:
    """Everything the commands do, in-process; only KafkalogError may come out."""
    t = find_target(pdir)
    assert t is not None
    check_target(t, Findings(), CheckOptions(max_decompressed=1 << 20), Stats())
    part = t.partitions[0]
    for seg in part.segments:
        for _pos, m in iter_entries(seg.path, on_damage=lambda d: None, resync=True):
            try:
                for x in inner_messages(m, 1 << 20):
                    bytes(x.payload)
            except KafkalogError:
                pass
    with contextlib.suppress(KafkalogError):
        migrate_partition(part, tmp / "out" / "demo-0", MigrateOptions(), lambda b, n: None)
    for force in (False, True):
        plan = plan_partition(find_target(pdir).partitions[0], full=True, force=force)
        apply_plan(plan, Quarantine(pdir.parent, tmp / "q"), fsync=False)
    # after a forced recovery nothing is left to find in the segments
    f = Findings()
    check_target(find_target(pdir), f, CheckOptions(max_decompressed=1 << 20), Stats())
    assert not [x for x in f.items if x.code.startswith("V07_") and x.code not in (
        "V07_INNER_INVALID", "V07_SEGMENT_NAME_MISMATCH", "V07_UNCLEAN_SHUTDOWN")], f.items


@given(st.sampled_from(range(len(SOURCES))), st.lists(mutation, min_size=1, max_size=4))
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_mutated_segments(tmp_path_factory, which, muts):
    tmp = tmp_path_factory.mktemp("fz")
    pdir = tmp / "ld" / "demo-0"
    shutil.copytree(_SRC / "demo-0", pdir)
    victim = pdir / SOURCES[which].name
    victim.write_bytes(mutate(ORIGINALS[SOURCES[which]], muts))
    exercise(pdir, tmp)


def test_hostile_files_through_the_cli(tmp_path):
    cases = {
        "huge-size": b"\x7f\xff\xff\xff\x01\x00\x00\x00\x00\x00",
        "negative-size": b"\xff\xff\xff\xfe" + bytes(20),
        "garbage": bytes(range(256)) * 40,
        "empty": b"",
        "one-byte": b"\x00",
    }
    for name, data in cases.items():
        pdir = tmp_path / name / "t-0"
        pdir.mkdir(parents=True)
        (pdir / "00000000000000000000.kafka").write_bytes(data)
        for args in (["verify", pdir], ["dump", pdir, "--records"], ["info", pdir],
                     ["recover", pdir, "--dry-run"], ["migrate", pdir, tmp_path / f"o-{name}"]):
            r = run(*args)
            assert "Traceback" not in r.err and "internal error" not in r.err, (name, args, r.err)
            assert r.code in (0, 1, 4), (name, args, r.code, r.err)
