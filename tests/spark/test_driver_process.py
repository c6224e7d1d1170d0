"""The pipeline's own entry point (`python -m spark`), as separate driver processes
against Gregor: the whole pipeline end to end, and a streaming driver killed with
SIGKILL mid-stream whose successor, from the same checkpoint, writes every window
once."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from compatlib import spark_pipeline as checks
from compatlib.common import unique, wait_until

from spark import producer, purchases, stats, topics

REPO = Path(__file__).resolve().parents[2]


def spark_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "spark", *args]


@pytest.mark.slow
def test_make_pipeline_command(bootstrap, tmp_path):
    """What `make pipeline` runs, on a few minutes of purchases sent at once."""
    result = subprocess.run(
        spark_command(
            "pipeline",
            "--bootstrap-servers", bootstrap,
            "--topic", unique("purchases"),
            "--stats-topic", unique("purchase-stats"),
            "--output-dir", str(tmp_path),
            "--rate", "2", "--duration", "180", "--speedup", "0",
        ),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "the same" in output and "produced 360/360 purchases" in output, output
    # Three windows closed (the first one partial, from late purchases), three countries.
    assert "check: 9 rows in Parquet, 9 computed" in output, output
    assert "replay by offsets: 9 records" in output, output


@pytest.mark.slow
def test_driver_killed_mid_stream_restarts_each_window_once(spark, bootstrap, tmp_path):
    topic, stats_topic = unique("purchases"), unique("purchase-stats")
    first = list(purchases.generate(seed=41, rate=2, duration=180, start_ms=checks.START_MS))
    second = list(
        purchases.generate(seed=42, rate=2, duration=180, start_ms=checks.START_MS + 180_000)
    )
    topics.ensure_topics(bootstrap, [topic, stats_topic])
    producer.produce(bootstrap, topic, first)
    output_dir = tmp_path / "out"
    log_path = tmp_path / "driver.log"
    with open(log_path, "w") as log:
        driver = subprocess.Popen(
            spark_command(
                "stream",
                "--bootstrap-servers", bootstrap,
                "--topic", topic,
                "--stats-topic", stats_topic,
                "--output-dir", str(output_dir),
                "--trigger-seconds", "0.5",
            ),
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # the Python driver and its JVM: one group to kill
        )  # fmt: skip
    sending = None
    try:
        wait_until(
            lambda: (
                driver.poll() is None
                and len(stats.read_table(spark, output_dir)) == len(checks.closed(first))
            ),
            timeout=120,
            message=f"for the first windows; driver log:\n{log_path.read_text()[-3000:]}",
        )
        offsets_log = output_dir / "checkpoints" / "parquet" / "offsets"
        planned = len(list(offsets_log.iterdir()))
        # Three seconds of sending while the driver runs; result() re-raises a failure.
        sending = concurrent.futures.ThreadPoolExecutor(max_workers=1).submit(
            producer.produce, bootstrap, topic, second, per_second=120
        )
        # Two more batches planned: the driver is reading the second purchases.
        wait_until(
            lambda: len(list(offsets_log.iterdir())) >= planned + 2,
            timeout=60,
            message=f"for the driver to plan batches; log:\n{log_path.read_text()[-3000:]}",
        )
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(30)
        if sending is not None:
            sending.result(60)
    assert driver.returncode == -signal.SIGKILL

    restarted = stats.start(
        stats.window_stats(stats.purchase_events(spark, bootstrap, topic)),
        bootstrap=bootstrap,
        stats_topic=stats_topic,
        output_dir=output_dir,
        available_now=True,
    )
    restarted.await_termination(checks.DEADLINE)
    expected = checks.closed(first + second)
    checks.assert_each_window_once(stats.read_table(spark, output_dir), expected)
    checks.assert_each_window_at_least_once(checks.read_topic(bootstrap, stats_topic), expected)
