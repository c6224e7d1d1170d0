"""MirrorMaker 2 between Gregor and Apache Kafka 4.3.1, both ways: what a user
migrating onto Gregor (or off it) runs. The records arrive in order and a
group's committed offset is checkpointed and translated on the other side
(compatlib.ecosystem.mirror_and_translate, which the side-by-side suite runs
with both aliases on one broker)."""

from __future__ import annotations

import pytest
from compatlib.ecosystem import mirror_and_translate

from tests.support.topics import create_topic, unique_name
from tools import kafka_cli
from tools.run_kafka import KafkaNode

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def kafka():
    kafka_cli.check_installed()  # Apache Kafka's jars, or a loud failure
    with KafkaNode() as node:
        yield node


@pytest.mark.parametrize("direction", ["gregor->kafka", "kafka->gregor"])
def test_mirror_maker_2_between_gregor_and_apache_kafka(direction, kafka, gregor, tmp_path):
    source, target = (
        (gregor.bootstrap, kafka.bootstrap)
        if direction == "gregor->kafka"
        else (kafka.bootstrap, gregor.bootstrap)
    )
    topic = create_topic(source, unique_name("mm2"), partitions=1)
    mirror_and_translate(source, target, topic, tmp_path)
