"""Fixtures shared by the broker tests: a real Gregor process on port 0."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# What the side-by-side suite and these tests share (the Spark pipeline's
# checks, the transactional application) is compat_tests/compatlib/.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compat_tests"))

# Every Gregor the tests start (child processes inherit it) refuses to send a
# response dict with a key its schema does not declare (broker/connection.py).
os.environ["GREGOR_STRICT_RESPONSES"] = "1"

from tests.support.gregor import GregorNode


@pytest.fixture
def gregor(tmp_path):
    """A fresh single-node Gregor for one test (SIGTERM at the end)."""
    broker = GregorNode(tmp_path / "data").start()
    yield broker
    broker.stop()


@pytest.fixture
def gregor_factory(tmp_path):
    """Start brokers with custom overrides: gregor_factory(**{"key": value})."""
    started = []

    def start(overrides=None, data_dir=None, **kwargs):
        broker = GregorNode(data_dir or tmp_path / f"data{len(started)}", overrides, **kwargs)
        started.append(broker)
        return broker.start()

    yield start
    for broker in started:
        broker.stop()


@pytest.fixture(scope="module")
def shared_gregor(tmp_path_factory):
    """One Gregor for a whole test module; tests use their own topic names."""
    broker = GregorNode(tmp_path_factory.mktemp("gregor") / "data").start()
    yield broker
    broker.stop()
