"""The compiled record writers of `dump` (text and jsonl) against the pure path, byte for
byte, on the Kafka-written corpora: 3.9 and 4.x KRaft brokers (every codec, transactions,
headers, internal topics), Kafka 2.8 (magic 1 next to v2) and 0.9 (magic 0, the pure path:
the writers must leave it alone). The text itself is judged against kafka-dump-log in
test_conformance_dump4.py; tests/cli/test_dump_fast_writers.py has the rest."""
from __future__ import annotations

import sys

import pytest
from kafka2_corpus import ensure_kafka2_corpus

from tests.cli.test_dump_fast_writers import assert_same

pytestmark = pytest.mark.conformance

VARIANTS = [["--print-data"], ["--print-data", "--decode", "none", "--payload", "base64"],
            ["--format", "jsonl", "--payload", "hex"]]
IDS = ["text", "text-decode-none-base64", "jsonl-hex"]


@pytest.mark.parametrize("extra", VARIANTS, ids=IDS)
def test_kraft_corpus(kafka_corpus, extra):
    out = assert_same(kafka_corpus.log_dir, *extra)
    assert out.count(b"\n") > 1000  # records were written


@pytest.mark.parametrize("extra", VARIANTS, ids=IDS)
def test_kafka2_and_legacy_corpora(kafka_reference, legacy_corpus, extra):
    kafka2 = ensure_kafka2_corpus(log=lambda msg: print(msg, file=sys.stderr))
    assert_same([kafka2.log_dir, legacy_corpus.log_dir], *extra)
