"""Mutated segments never give a traceback, a hang, or memory past the cap."""

import contextlib
import resource
import shutil
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.storage.checks.check import CheckOptions, Stats
from kafkalog_cli.storage.checks.findings import Findings
from kafkalog_cli.storage.disk.logdir import open_target
from kafkalog_cli.storage.formats.current import FORMAT
from tests.conftest import FIXTURE
from tests.faults.surgery import mutate, mutation

SOURCES = sorted(FIXTURE.glob("*/*.log"))
ORIGINALS = {p: p.read_bytes() for p in SOURCES}

def exercise(pdir):
    """Everything verify and dump do, in-process; only KafkalogError may come out."""
    f = Findings()
    with contextlib.suppress(KafkalogError):
        FORMAT.check(open_target(pdir), f, CheckOptions(max_decompressed=1 << 20), Stats())
    part = open_target(pdir).partition
    for seg in part.segments:
        for _pos, b in seg.batches(on_damage=lambda d: None, resync=True):
            try:
                for r in b.records(1 << 20):
                    (r.offset, r.key, r.value, r.headers)  # noqa: B018 - touch every field
            except KafkalogError:
                pass
    return f


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(src=st.sampled_from(SOURCES), muts=st.lists(mutation, min_size=1, max_size=4))
def test_mutated_segments_only_ever_give_findings(tmp_path_factory, src, muts):
    pdir = tmp_path_factory.mktemp("fz") / src.parent.name
    pdir.mkdir()
    for sib in src.parent.iterdir():
        shutil.copy(sib, pdir / sib.name)
    mutated = mutate(ORIGINALS[src], muts)
    (pdir / src.name).write_bytes(mutated)
    f = exercise(pdir)
    if mutated != ORIGINALS[src]:
        # a change is either harmless or reported; it never goes unnoticed *and* crashes
        assert isinstance(f.items, list)


def test_a_decompression_bomb_stays_under_the_cap(tmp_path):
    from kafkalog_cli.codec.batch_v2 import encode_batch

    pdir = tmp_path / "ld" / "bomb-0"
    pdir.mkdir(parents=True)
    big = b"\0" * (200 * 1024 * 1024)
    (pdir / "00000000000000000000.log").write_bytes(
        encode_batch([(0, 0, None, big, [])], codec=4))
    del big
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run([sys.executable, '-m', 'kafkalog_cli', 'dump', sys.argv[1], "
        "'--records', '--max-decompressed-bytes', str(8 << 20)], capture_output=True)\n"
        "ru = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(p.returncode, ru, p.stderr.decode().strip().splitlines()[-1])\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(pdir)], capture_output=True, text=True,
                         timeout=120).stdout.split(" ", 2)
    rc, maxrss_kib, last = int(out[0]), int(out[1]), out[2]
    assert rc == 4
    assert "exceeds the cap" in last
    assert maxrss_kib < 150 * 1024, f"peak RSS {maxrss_kib} KiB: the cap did not hold"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2**31


def test_cli_on_garbage_files_never_tracebacks(tmp_path):
    import random

    rng = random.Random(3)
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    for i, size in enumerate((5, 17, 18, 100, 5000)):
        (pdir / f"{i:020d}.log").write_bytes(bytes(rng.randrange(256) for _ in range(size)))
    (pdir / f"{0:020d}.index").write_bytes(b"\x01" * 13)
    (pdir / f"{0:020d}.timeindex").write_bytes(b"\xff" * 25)
    (pdir / f"{0:020d}.snapshot").write_bytes(b"\x00\x01garbage")
    (pdir / "leader-epoch-checkpoint").write_text("zero\n")
    for args in (["verify", pdir], ["dump", pdir, "--records"], ["info", pdir],
                 ["find-by-time", pdir, "-t", "0"], ["dump", pdir / f"{0:020d}.snapshot"],
                 ["dump", pdir / "leader-epoch-checkpoint"]):
        p = subprocess.run([sys.executable, "-m", "kafkalog_cli", *map(str, args)],
                           capture_output=True, timeout=60)
        assert b"Traceback" not in p.stderr, (args, p.stderr)
        assert b"internal error" not in p.stderr, (args, p.stderr)
        assert p.returncode in (0, 4, 8, 16), args
