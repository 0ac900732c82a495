"""info lists the same partitions in a pipe as on a terminal, empty ones too, with the log
start offset a broker would load; find-by-time prints the query and ListOffsets's answer
(offset, timestamp, leader epoch) under their own names."""

import json
import shutil

from tests.cli.run import run
from tests.conftest import CORPUS


def test_info_shows_every_partition_in_a_pipe_as_in_a_table(tmp_path):
    ld = tmp_path / "ld"
    shutil.copytree(CORPUS / "metaras-zk", ld)
    text = run("info", ld)  # a pipe: text
    table = run("info", ld, "--format", "table")
    assert text.code == table.code == 0
    names = sorted(p.name for p in ld.iterdir() if p.is_dir())
    shown = [ln.split()[0] for ln in text.text.splitlines()[2:] if ln.strip()]
    assert sorted(shown) == names  # the empty __consumer_offsets partitions too (was 4 of 51)
    rows = json.loads(run("info", ld, "--format", "json").out)[0]["partitions"]
    assert sorted(f"{r['topic']}-{r['partition']}" for r in rows) == names
    in_table = {ln.split()[1] + "-" + ln.split()[2] for ln in table.text.splitlines()
                if ln.startswith("partition ")}
    assert sorted(in_table) == names


def test_info_shows_the_log_start_of_a_partition_retention_emptied(sample):
    r = run("retain", sample, "--retention-ms", "1", "--ignore-high-watermark",
            "--no-quarantine")
    assert r.code == 0, r.err
    parts = {f"{p['topic']}-{p['partition']}": p
             for p in json.loads(run("info", sample, "--format", "json").out)[0]["partitions"]}
    demo = parts["demo-0"]
    assert (demo["batches"], demo["firstOffset"]) == (0, None)  # nothing left on disk
    assert demo["logStartOffset"] == demo["logEndOffset"] == 608
    line = next(ln for ln in run("info", sample).text.splitlines() if ln.startswith("demo-0 "))
    assert line.split()[2:4] == ["608", "608"]  # start, end: never empty or None
    # an older checkpoint entry: the first segment's base offset wins, as in LogLoader
    (sample / "log-start-offset-checkpoint").write_text("0\n1\ndemo 1 300\n")
    demo1 = json.loads(run("info", sample / "demo-1", "--format", "json").out)[0]
    assert demo1["kind"] == "partitionDir" and demo1["partitions"][0]["logStartOffset"] == 608


def test_info_log_start_is_the_checkpoint_when_past_the_first_segment(sample):
    (sample / "log-start-offset-checkpoint").write_text("0\n1\ndemo 0 300\n")
    parts = json.loads(run("info", sample, "--format", "json").out)[0]["partitions"]
    demo = next(p for p in parts if (p["topic"], p["partition"]) == ("demo", 0))
    assert (demo["logStartOffset"], demo["firstOffset"]) == (300, 0)


def test_info_on_a_segment_file_is_that_segment(sample):
    r = run("info", sample / "demo-0" / "00000000000000000243.log", "--format", "json")
    (entry,) = json.loads(r.out)
    (p,) = entry["partitions"]
    assert entry["kind"] == "segmentFile" and (p["segments"], p["firstOffset"],
                                               p["logEndOffset"]) == (1, 243, 506)


def test_find_by_time_prints_the_query_and_the_found_record(sample):
    rows = json.loads(run("find-by-time", sample / "demo-0", "-t", "1700000002001",
                          "--format", "json").out)
    assert rows == [{"topic": "demo", "partition": 0, "query": "timestamp",
                     "targetTimestamp": 1700000002001, "offset": 200,
                     "timestamp": 1700000002010, "leaderEpoch": 0}]
    text = run("find-by-time", sample / "demo-0", "-t", "1700000002001", "--utc").text
    assert text == ("demo-0 1700000002001 (2023-11-14T22:13:22.001Z): offset 200 timestamp "
                    "1700000002010 (2023-11-14T22:13:22.010Z) leaderEpoch 0\n")
    for query in ("earliest", "latest", "max-timestamp"):
        r = run("find-by-time", sample / "demo-0", "-t", query)
        assert r.code == 0 and "None" not in r.text and r.text.startswith(f"demo-0 {query}: ")
    (row,) = json.loads(run("find-by-time", sample / "demo-0", "-t", "max-timestamp",
                            "--format", "json").out)
    assert (row["query"], row["targetTimestamp"], row["offset"], row["timestamp"]) == \
        ("max-timestamp", None, 607, 1700000006080)


def test_find_by_time_leader_epochs_as_list_offsets(tmp_path):
    ld = tmp_path / "ld"
    for epoch, value in ((3, "a"), (5, "b")):
        r = run("append", ld, "--create", "--topic", "t", "--partition", "0", "--leader-epoch",
                epoch,
                "--now", 1000 * epoch, stdin=f'{{"value": "{value}"}}\n'.encode())
        assert r.code == 0, r.err
    (ld / "t-0" / "leader-epoch-checkpoint").write_text("0\n2\n3 0\n5 1\n")

    def ask(t):
        (row,) = json.loads(run("find-by-time", ld, "-t", t, "--format", "json").out)
        return row["offset"], row["timestamp"], row["leaderEpoch"]
    assert ask("earliest") == (0, None, 3)  # epochForOffset(log start)
    assert ask("latest") == (2, None, 5)  # the latest epoch
    assert ask("4000") == (1, 5000, 5)  # the found batch's partitionLeaderEpoch
    assert ask("1000") == (0, 3000, 3)  # the first record at or after it
    assert ask("6000") == (None, None, None)
