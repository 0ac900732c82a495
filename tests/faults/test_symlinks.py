"""Nothing outside the log dir, ever: a symlink suite for every mutating command.

Each test plants links in a copy of the sample log dir pointing into an `outside` folder, runs
the command as operators do, and checks that nothing outside changed (bytes, mtimes, no new
entry), that the refusal is exit 8 with one error line naming the link, and, as a refusal
comes before the first change, that the log dir is unchanged too. Before the fix, append,
compact, retain, recover and index-rebuild wrote through such links (see each test).
"""

import os
import stat
from pathlib import Path

import pytest

from kafkalog_cli.errors import EXIT_OPERATIONAL, EXIT_USAGE
from kafkalog_cli.storage.disk import safety
from kafkalog_cli.storage.disk.files import atomic_write
from kafkalog_cli.storage.disk.safety import UnsafePath
from kafkalog_cli.storage.maintenance.writer import PartitionWriter
from tests.cli.run import run

NOW = 1_800_000_000_000
PART = "demo-0"
FIRST = "00000000000000000000"
ROOT_TMPS = ("recovery-point-offset-checkpoint.tmp", "replication-offset-checkpoint.tmp",
             "log-start-offset-checkpoint.tmp", "cleaner-offset-checkpoint.tmp",
             ".kafka_cleanshutdown.tmp")


def tree(d: Path) -> dict[str, tuple]:
    """Every entry under `d`, links not followed: (kind, bytes or link target, mtime)."""
    out: dict[str, tuple] = {}
    for top, dirs, files in os.walk(d):
        for name in dirs + files:
            p = Path(top) / name
            st = p.lstat()
            rel = str(p.relative_to(d))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p), st.st_mtime_ns)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", None, None)  # its entries are compared one by one
            else:
                out[rel] = ("file", p.read_bytes(), st.st_mtime_ns)
    return out


def command(name: str, ld: Path, target: Path) -> tuple[list[object], bytes]:
    """Arguments that make `name` change `target` (the log dir or a partition dir in it)."""
    whole = target == ld
    return {
        "append": (["append", ld, "--topic", "demo", "--partition", "0", "--input-format",
                    "lines", "--clean-shutdown", "--now", NOW], b"a\nb\n"),
        "compact": (["compact", target, "--force", "--now", NOW, *(["--all"] * whole)], b""),
        "retain": (["retain", target, "--log-start-offset", "300", "--now", NOW], b""),
        "recover": (["recover", target, "--full", "--force"], b""),
        "index-rebuild": (["index-rebuild", target], b""),
    }[name]


MUTATING = ("append", "compact", "retain", "recover", "index-rebuild")


@pytest.fixture
def ld(sample: Path) -> Path:
    """The sample with work for every command: demo-0's first .index is gone (recover and
    index-rebuild rewrite it) and the recovery point is empty (recover rewrites it)."""
    (sample / PART / f"{FIRST}.index").unlink()
    (sample / "recovery-point-offset-checkpoint").write_bytes(b"0\n0\n")
    return sample


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "target").write_bytes(b"precious bytes, not kafkalog's\n")
    return d


def refused(cmd: str, ld: Path, target: Path, outside: Path, names: str | tuple[str, ...]):
    """Run `cmd`; it must refuse with one line naming one of `names`, changing nothing."""
    names = (names,) if isinstance(names, str) else names
    before_ld, before_out = tree(ld), tree(outside)
    args, stdin = command(cmd, ld, target)
    r = run(*args, stdin=stdin)
    assert tree(outside) == before_out, "changed outside the log dir"
    assert tree(ld) == before_ld, "changed the log dir before refusing"
    lines = r.err.strip().splitlines()
    assert r.code == EXIT_OPERATIONAL, r.err
    assert len(lines) == 1 and lines[0].startswith("kafkalog: error: "), r.err
    assert "symlink" in lines[0] and any(n in lines[0] for n in names), lines[0]
    return lines[0]


# -- (a) a partition dir that is a symlink to a dir elsewhere ------------------------------

@pytest.mark.parametrize(("cmd", "given"), [
    *((c, "partition") for c in MUTATING if c != "append"), *((c, "logdir") for c in MUTATING)])
def test_a_symlinked_partition_dir_is_refused_before_any_change(ld, outside, cmd, given):
    # before: append wrote into it; compact renamed its files to .deleted there, then stopped
    # half way (exit 8); recover and index-rebuild rewrote its indexes; given the log dir,
    # retain, compact and index-rebuild passed over it in silence (exit 0)
    (ld / PART).rename(outside / PART)
    (ld / PART).symlink_to(outside / PART, target_is_directory=True)
    refused(cmd, ld, ld if given == "logdir" else ld / PART, outside, str(ld / PART))


def test_a_dry_run_reports_the_refusal_too(ld, outside):
    (ld / PART).rename(outside / PART)
    (ld / PART).symlink_to(outside / PART, target_is_directory=True)
    r = run("compact", ld, "--all", "--force", "--dry-run")
    assert r.code == EXIT_OPERATIONAL and str(ld / PART) in r.err


# -- (b) checkpoint .tmp links -------------------------------------------------------------

@pytest.mark.parametrize("cmd", ["append", "compact", "retain", "recover"])
def test_root_checkpoint_tmp_links_are_refused(ld, outside, cmd):
    # before: retain, compact, append and recover wrote their checkpoint into the target
    for name in ROOT_TMPS:
        (ld / name).symlink_to(outside / "target")
    refused(cmd, ld, ld, outside, tuple(str(ld / n) for n in ROOT_TMPS))


def test_index_rebuild_writes_no_root_file_and_leaves_their_links_alone(ld, outside):
    for name in ROOT_TMPS:
        (ld / name).symlink_to(outside / "target")
    before = tree(outside)
    r = run("index-rebuild", ld)
    assert r.code == 1, r.err  # the missing .index was rebuilt
    assert (ld / PART / f"{FIRST}.index").is_file()
    assert tree(outside) == before
    assert all((ld / n).is_symlink() for n in ROOT_TMPS)


# -- (b, d) links among a partition's files, under the temp names writers use --------------

@pytest.mark.parametrize(("cmd", "name"), [
    ("append", "leader-epoch-checkpoint.tmp"),        # before: append wrote through it
    ("append", "00000000000000000610.snapshot.tmp"),  # the snapshot at the new log end
    ("compact", f"{FIRST}.log.cleaned"),
    ("compact", "leader-epoch-checkpoint.tmp"),
    ("retain", f"{FIRST}.log.deleted"),
    ("recover", f"{FIRST}.index.tmp"),                # before: recover wrote through it
    ("index-rebuild", f"{FIRST}.index.tmp"),          # before: index-rebuild wrote through it
])
def test_a_partition_holding_a_link_is_refused(ld, outside, cmd, name):
    (ld / PART / name).symlink_to(outside / "target")
    refused(cmd, ld, ld / PART if cmd != "append" else ld, outside, str(ld / PART / name))


# -- (c) a dangling .lock ------------------------------------------------------------------

@pytest.mark.parametrize("cmd", MUTATING)
def test_a_dangling_lock_link_is_refused_and_its_target_never_created(ld, outside, cmd):
    # before: every one of them created the link's target (the lock file) outside
    (ld / ".lock").unlink()
    (ld / ".lock").symlink_to(outside / "lock")
    refused(cmd, ld, ld, outside, ".lock")
    assert not (outside / "lock").exists()


# -- the quarantine: outside by design, but never through the log dir ----------------------

def test_a_quarantine_reached_through_a_link_in_the_log_dir_is_refused(ld, outside):
    (ld / PART / "00000000000000000100.index").write_bytes(b"")  # an orphan recover removes
    (outside / "q").mkdir()
    (ld / "q").symlink_to(outside / "q", target_is_directory=True)
    before_ld, before_out = tree(ld), tree(outside)
    r = run("recover", ld, "--quarantine", ld / "q")
    assert tree(outside) == before_out  # before: the orphan was moved into outside/q
    assert tree(ld) == before_ld
    assert r.code == EXIT_USAGE, r.err
    assert len(r.err.strip().splitlines()) == 1 and "inside the log dir" in r.err


# -- migrate: OUT is the log dir it makes ----------------------------------------------------

@pytest.fixture
def source(tmp_path: Path) -> Path:
    src = tmp_path / "src07"
    r = run("generate", src, "--format", "0.7", "--records", "60", "--batch-records", "6")
    assert r.code == 0, r.err
    return src


def test_migrate_refuses_a_staging_link_in_out(source, tmp_path, outside):
    # before: the .moving list found through the link moved OUT's entries into the outside
    # folder (as if undoing a crashed run)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep").write_bytes(b"an operator's file")
    (outside / ".moving").write_bytes(b"keep\n")
    (out / ".kafkalog-migrating").symlink_to(outside, target_is_directory=True)
    _migrate_refused(source, out, tmp_path, outside, str(out / ".kafkalog-migrating"))


def test_migrate_refuses_a_staging_link_beside_out(source, tmp_path, outside):
    out = tmp_path / "out"
    (tmp_path / ".out.kafkalog-migrating").symlink_to(outside, target_is_directory=True)
    _migrate_refused(source, out, tmp_path, outside, ".out.kafkalog-migrating")


def test_migrate_refuses_out_as_a_dangling_link(source, tmp_path, outside):
    out = tmp_path / "out"
    out.symlink_to(outside / "new", target_is_directory=True)
    _migrate_refused(source, out, tmp_path, outside, str(out))
    assert not (outside / "new").exists()


def _migrate_refused(source, out, tmp_path, outside, name):
    before_here = {k: v for k, v in tree(tmp_path).items() if not k.startswith("outside")}
    before_out = tree(outside)
    r = run("migrate", source, out)
    assert tree(outside) == before_out
    assert {k: v for k, v in tree(tmp_path).items() if not k.startswith("outside")} == \
        before_here
    lines = r.err.strip().splitlines()
    assert r.code == EXIT_OPERATIONAL and len(lines) == 1 and name in lines[0], r.err


def test_migrate_into_a_link_to_an_empty_dir_fills_that_dir(source, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "out").symlink_to(real, target_is_directory=True)
    r = run("migrate", source, tmp_path / "out")
    assert r.code == 0, r.err
    assert run("verify", real).code == 0


# -- the helper itself: what holds even when a link appears after the commands' checks -----

def test_atomic_write_removes_a_stale_tmp_link_and_never_writes_its_target(tmp_path, outside):
    ld = tmp_path / "ld"
    ld.mkdir()
    (ld / "cp.tmp").symlink_to(outside / "target")
    before = tree(outside)
    atomic_write(ld / "cp", b"0\n0\n", root=ld, fsync=False)
    assert (ld / "cp").read_bytes() == b"0\n0\n" and not (ld / "cp.tmp").exists()
    assert tree(outside) == before


@pytest.mark.parametrize("mode", ["append", "update", "existing", "replace"])
def test_open_file_never_follows_a_link(tmp_path, outside, mode, monkeypatch):
    ld = tmp_path / "ld"
    ld.mkdir()
    (ld / "x.log").symlink_to(outside / "target")
    before = tree(outside)
    with pytest.raises(UnsafePath, match="is a symlink"):
        safety.open_file(ld / "x.log", ld, mode)
    # a link planted between the check and the open: O_NOFOLLOW still refuses it
    monkeypatch.setattr(safety, "ensure_mutable", lambda path, root: None)
    with pytest.raises(UnsafePath, match="is a symlink"):
        safety.open_file(ld / "x.log", ld, mode)
    assert tree(outside) == before


def test_every_change_in_a_dir_that_resolves_outside_is_refused(tmp_path, outside):
    ld = tmp_path / "ld"
    ld.mkdir()
    (outside / "t-0").mkdir()
    (outside / "t-0" / "a").write_bytes(b"a")
    (ld / "t-0").symlink_to(outside / "t-0", target_is_directory=True)
    before = tree(outside)
    p = ld / "t-0"
    for change in (lambda: atomic_write(p / "b", b"b", root=ld, fsync=False),
                   lambda: safety.open_file(p / "b", ld, "temp"),
                   lambda: safety.rename(p / "a", p / "c", ld),
                   lambda: safety.unlink(p / "a", ld),
                   lambda: safety.mkdir(p / "d", ld),
                   lambda: PartitionWriter(p, "t", 0).open()):
        with pytest.raises(UnsafePath):
            change()
    assert tree(outside) == before


def test_a_symlinked_kafka_07_partition_dir_is_refused(tmp_path, outside):
    # before: recover cut the torn tail of the 0.7 segment behind the link
    ld = tmp_path / "ld07"
    r = run("generate", ld, "--format", "0.7", "--records", "60", "--partitions", "2",
            "--damage", "torn-tail")
    assert r.code == 0, r.err
    (ld / PART).rename(outside / PART)
    (ld / PART).symlink_to(outside / PART, target_is_directory=True)
    before_ld, before_out = tree(ld), tree(outside)
    for target in (ld / PART, ld):
        r = run("recover", target)
        assert tree(outside) == before_out and tree(ld) == before_ld
        lines = r.err.strip().splitlines()
        assert r.code == EXIT_OPERATIONAL and len(lines) == 1, r.err
        assert str(ld / PART) in lines[0] and "symlink" in lines[0]


def test_a_log_dir_given_through_a_link_is_changed_as_usual(sample, tmp_path):
    """The operator's own link to the log dir is its path, not a link inside it."""
    link = tmp_path / "via-link"
    link.symlink_to(sample, target_is_directory=True)
    r = run("append", link, "--topic", "demo", "--partition", "1", "--input-format", "lines",
            stdin=b"x\n")
    assert r.code == 0, r.err
    r = run("compact", link / "demo-1", "--force", "--now", NOW)
    assert r.code == 0, r.err
    assert run("verify", sample).code == 0
