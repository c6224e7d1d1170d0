# Gregor: `make run` starts a broker, `make test` installs everything and runs every test.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
FUZZ_SECONDS ?= 60

.PHONY: install run test unit compat fuzz lint bench bench-smoke readme clean clients

install: $(STAMP)

# Rebuilt when the package definition or its C walk changes; pip's cache keeps
# a second run fast.
$(STAMP): pyproject.toml setup.py wire/records/_walk.c
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

run: install
	$(VENV)/bin/gregor serve

# Non-Python clients for tests: kcat (and java/mvn if missing) from Debian,
# Apache Kafka's jars from Maven Central into .cache/maven/ (stamped: ~0.1 s when done),
# Go 1.26 for the franz-go clients from the Go module proxy when the machine's is older.
clients:
	tools/install_debian.sh
	$(PYTHON) tools/kafka_jars.py
	$(PYTHON) tools/go_toolchain.py

# Unit and integration tests, then the compatibility suite against Apache
# Kafka and Gregor side by side, then every benchmark workload tiny on both
# brokers, then a short fuzz run.
test: install clients
	$(PY) -m pytest
	$(PY) compat_tests/run.py
	$(MAKE) --no-print-directory bench-smoke
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=30

# Starts Apache Kafka and Gregor, runs compat_tests/ against each, writes
# compat_tests/REPORT.md; fails when Gregor differs from Kafka.
compat: install clients
	$(PY) compat_tests/run.py

unit: install
	$(PY) -m pytest tests/wire -q

# Coverage-guided fuzzing of wire's decoders, bounded in time.
fuzz: install
	@mkdir -p fuzz-artifacts/corpus
	$(PY) fuzz/fuzz_wire.py -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=fuzz-artifacts/ fuzz-artifacts/corpus

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Gregor beside Apache Kafka: every workload, three rounds, brokers alternating
# (about 45 minutes); writes bench/results/<date>-<commit>.json|.md|.png.
# BENCH_ARGS="--scale 0.1 --rounds 1" for a quick partial run.
bench: install clients
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/group_rebalance.py
	$(PY) bench/wire_codec.py

# Every workload tiny on both brokers at once, so the benchmark never rots: checks
# that each gave its figures, never their values (under a minute).
bench-smoke: install clients
	$(PY) bench/run.py --smoke --parallel

# Regenerates the generated sections of README.md from the code.
readme: install
	$(PY) -m wire.tables --update-readme README.md
	$(PY) -m broker.tables --update-readme README.md

clean:
	rm -rf $(VENV) fuzz-artifacts .pytest_cache .hypothesis
