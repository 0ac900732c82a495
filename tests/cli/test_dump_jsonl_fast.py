"""The compiled JSON Lines writer gives byte-for-byte what the pure path (orjson) gives."""

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.codec.batch_v2 import encode_batch
from tests.conftest import CORPUS, FIXTURE


def dump(path, *extra, pure: bool) -> bytes:
    env = dict(os.environ)
    if pure:
        env["KAFKALOG_PURE"] = "1"
    else:
        env.pop("KAFKALOG_PURE", None)
    p = subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump", str(path), "--records",
                        "--format", "jsonl", *extra], capture_output=True, env=env)
    assert p.returncode in (0, 4), p.stderr
    return p.stdout


def test_extension_path_is_taken():
    if os.environ.get("KAFKALOG_NO_EXT"):
        pytest.skip("extension deliberately disabled")
    from kafkalog_cli.commands.dump import jsonl_writer

    assert jsonl_writer("utf8") is not None


@pytest.mark.parametrize("payload", ["utf8", "base64", "hex"])
def test_fixture_and_filters(payload):
    for extra in ([], ["--from-offset", "100", "--to-offset", "400"], ["--key", "key-00007"],
                  ["--no-batches"]):
        args = ["--payload", payload, *extra]
        assert dump(FIXTURE, *args, pure=False) == dump(FIXTURE, *args, pure=True)


@pytest.mark.parametrize("name", ["nomanazeem-kraft", "volodymyrzee-zk", "seanorth-zk-snappy",
                                  "william0423-zk-2.4"])
def test_corpus(name):
    assert dump(CORPUS / name, pure=False) == dump(CORPUS / name, pure=True)


nasty = st.one_of(st.none(), st.binary(max_size=40),
                  st.text(max_size=20).map(lambda s: s.encode("utf-8", "surrogatepass")),
                  st.sampled_from([b'"\\\n\t\x00\x1f\x7f', b"\xc3\xa9\xff\xe2\x82",
                                   "\u2028\U0001F600".encode()]))
header = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=10)))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(recs=st.lists(st.tuples(nasty, nasty, st.lists(header, max_size=3),
                               st.integers(-(2**40), 2**40)), min_size=1, max_size=8),
       payload=st.sampled_from(["utf8", "base64", "hex"]), topic=st.text(min_size=1, max_size=6))
def test_random_batches(tmp_path_factory, recs, payload, topic):
    if "-" in topic or "/" in topic or "." in topic or "\x00" in topic or not topic.isprintable():
        topic = "t"
    pdir = tmp_path_factory.mktemp("j") / f"{topic}-3"
    pdir.mkdir()
    data = encode_batch([(10 + i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(recs)],
                        base_sequence=5, producer_id=1, producer_epoch=0)
    (pdir / "00000000000000000000.log").write_bytes(data)
    assert dump(pdir, "--payload", payload, pure=False) == dump(pdir, "--payload", payload,
                                                                 pure=True)
