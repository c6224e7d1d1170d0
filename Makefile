# Gregor: `make run` starts a broker, `make test` installs everything and runs every test.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
GREGOR_PACKAGES := broker wire logstore coordinator
FUZZ_SECONDS ?= 60
# The broker `make pipeline` talks to: `make run`'s by default.
BOOTSTRAP ?= localhost:9092

.PHONY: install run cluster chaos test unit compat fuzz lint bench bench-smoke readme clean clients pipeline

# Gregor's own modules compiled to bytecode, as pip does when it installs a
# package (an editable install does not): otherwise a shell with
# PYTHONDONTWRITEBYTECODE set compiles them at every start (0.15 of 0.37 s).
install: $(STAMP)
	@$(PY) -m compileall -q $(GREGOR_PACKAGES)

# Rebuilt when the package definition or its C walk changes; pip's cache keeps
# a second run fast.
$(STAMP): pyproject.toml setup.py wire/records/_walk.c
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

run: install
	$(VENV)/bin/gregor serve

# ZooKeeper and three brokers on loopback (9092-9094), data under ./data/cluster;
# prints the bootstrap list and the brokers' pids. Ctrl-C stops it.
cluster: install clients
	$(PY) tools/cluster.py

# Non-Python clients for tests: kcat (and java/mvn if missing) from Debian,
# Apache Kafka's jars from Maven Central into .cache/maven/ (stamped: ~0.1 s when done),
# Go 1.26 for the franz-go clients from the Go module proxy when the machine's is older,
# Spark's Kafka connector and its dependencies from Maven Central (stamped like Kafka's).
clients:
	tools/install_debian.sh
	$(PYTHON) tools/kafka_jars.py
	$(PYTHON) tools/go_toolchain.py
	$(PYTHON) tools/spark_jars.py

# The Spark pipeline against a running broker (`make run` in another terminal, or
# BOOTSTRAP=host:port): purchases in, per-minute stats out to Kafka and Parquet
# (spark-output/), a replay, and the final table.
pipeline: install
	$(PYTHON) tools/spark_jars.py -q >/dev/null
	$(PY) -m spark pipeline --bootstrap-servers $(BOOTSTRAP)

# The linters and the type checker (a few seconds, so they fail first), the
# unit and integration tests, then the compatibility suite against Apache
# Kafka and Gregor side by side, then every benchmark workload tiny on both
# brokers, then a short fuzz run.
test: install lint clients
	$(PY) -m pytest
	$(PY) compat_tests/run.py
	$(MAKE) --no-print-directory bench-smoke
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=30

# Starts Apache Kafka and Gregor, runs compat_tests/ against each, writes
# compat_tests/REPORT.md; fails when Gregor differs from Kafka.
compat: install clients
	$(PY) compat_tests/run.py

# The cluster chaos run at length (make test runs CHAOS_ROUNDS=5, each failure once):
# kills, pauses, a ZooKeeper restart, a leader cut off the network and healed, under
# confluent-kafka's and Kafka's VerifiableProducer writers, then the Jepsen-style
# checks; prints the verdict for each writer. CHAOS_FAILURES=isolate-leader picks one.
CHAOS_ROUNDS ?= 20
chaos: install clients
	CHAOS_ROUNDS=$(CHAOS_ROUNDS) $(PY) -m pytest tests/cluster/test_chaos.py -q -s -p no:cacheprovider

# Every fast test of every package: all but those marked slow (clusters, Spark,
# broker restarts, retention waits...), in under a minute. make test runs them all.
unit: install
	$(PY) -m pytest -m "not slow" -q

# Coverage-guided fuzzing of wire's decoders, bounded in time.
fuzz: install
	@mkdir -p fuzz-artifacts/corpus
	$(PY) fuzz/fuzz_wire.py -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=fuzz-artifacts/ fuzz-artifacts/corpus

# ruff on everything; mypy on wire, logstore, coordinator and broker
# ([tool.mypy] in pyproject.toml; incremental, cached in .mypy_cache/).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Gregor beside Apache Kafka: every workload, three rounds, brokers alternating
# (about 45 minutes; writes bench/results/<date>-<commit>.json|.md|.png), then
# three brokers of each replicating (bench/cluster.py, about 10 minutes).
# BENCH_ARGS="--scale 0.1 --rounds 1" for a quick partial run.
bench: install clients
	$(PY) bench/run.py $(BENCH_ARGS)
	$(PY) bench/cluster.py
	$(PY) bench/processes.py
	$(PY) bench/group_rebalance.py
	$(PY) bench/spark_pipeline.py
	$(PY) bench/wire_codec.py
	$(PY) bench/produce_path.py

# Every workload tiny on both brokers at once, so the benchmark never rots: checks
# that each gave its figures, never their values (under a minute), then the
# three-broker replication benchmark tiny on each (about a minute), Gregor as
# one and two processes of a cluster, tiny, and the in-process produce path.
bench-smoke: install clients
	$(PY) bench/run.py --smoke --parallel
	$(PY) bench/cluster.py --smoke
	$(PY) bench/processes.py --smoke
	$(PY) bench/produce_path.py --smoke

# Regenerates the generated sections of README.md from the code.
readme: install
	$(PY) -m wire.tables --update-readme README.md
	$(PY) -m broker.tables --update-readme README.md

clean:
	rm -rf $(VENV) fuzz-artifacts .pytest_cache .hypothesis .mypy_cache
