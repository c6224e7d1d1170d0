"""The connector's jars and PySpark are the same Spark release, and Spark's own jars
are not handed to it twice (no JVM needed)."""

from __future__ import annotations

import re
from pathlib import Path

from spark import connector

REPO = Path(__file__).resolve().parents[2]


def test_pyspark_is_the_connectors_release():
    import pyspark

    assert pyspark.__version__ == connector.SPARK_VERSION
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(rf'"pyspark=={re.escape(connector.SPARK_VERSION)}"', pyproject)


def test_spark_jars_are_the_connector_and_what_spark_lacks():
    jars = connector.connector_jars(resolve=False)
    names = sorted(re.sub(r"-[\d.]+\.jar$", "", p.name) for p in jars)
    assert names == [
        "commons-pool2",
        "kafka-clients",
        "spark-sql-kafka-0-10_2.13",
        "spark-token-provider-kafka-0-10_2.13",
    ]
    assert all(p.is_file() for p in jars)
    shipped = {p.name for p in connector.pyspark_jars_dir().glob("*.jar")}
    assert "slf4j-api" in " ".join(shipped) and not shipped & {p.name for p in jars}


def test_packages_coordinate():
    assert connector.packages_coordinate() == (
        f"org.apache.spark:spark-sql-kafka-0-10_2.13:{connector.SPARK_VERSION}"
    )
