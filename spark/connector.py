"""Spark's Kafka connector: the jars handed to Spark (`spark.jars`) or its Maven coordinate.

The connector is Apache Spark's own `spark-sql-kafka-0-10_2.13`, resolved with
its dependencies from Maven Central by tools/spark_jars.py into .cache/maven/
(`make clients` does it). Spark takes it one of two ways:

    spark.jars      = connector_jars()        # the resolved cache, no network at run time
    spark.jars.packages = packages_coordinate()  # Spark's own resolver (needs Maven Central)

Of the resolved jars, those the installed PySpark already ships (Scala, Hadoop's
client, slf4j, the compression codecs, ...) are left out: Spark's copy is the one
on the classpath anyway, and a second, older one beside it would only be
shadowed, or worse, be picked by an executor's class loader.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

_TOOLS = Path(__file__).resolve().parent.parent / "tools"


class ConnectorUnavailable(RuntimeError):
    """PySpark or the connector's jars cannot be had; the message says how to get them."""


def _spark_jars_tool():
    """tools/spark_jars.py, loaded by path: spark/ is used from a checkout, and tools/
    is not an installed package."""
    if "spark_jars" in sys.modules:
        return sys.modules["spark_jars"]
    if str(_TOOLS) not in sys.path:
        sys.path.insert(0, str(_TOOLS))  # spark_jars imports its sibling kafka_jars
    spec = importlib.util.spec_from_file_location("spark_jars", _TOOLS / "spark_jars.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["spark_jars"] = module
    spec.loader.exec_module(module)
    return module


spark_jars = _spark_jars_tool()
SPARK_VERSION = spark_jars.SPARK_VERSION


def packages_coordinate() -> str:
    """`org.apache.spark:spark-sql-kafka-0-10_2.13:<version>` for --packages."""
    return spark_jars.packages_coordinate()


def pyspark_jars_dir() -> Path:
    """The jars of the installed PySpark (its SPARK_HOME/jars); checks the version pair."""
    try:
        import pyspark
    except ImportError as exc:
        raise ConnectorUnavailable(
            f"PySpark is not installed ({exc}): run `make install` "
            f"(pyproject.toml's test extras pin pyspark=={SPARK_VERSION})"
        ) from exc
    if pyspark.__version__ != SPARK_VERSION:
        raise ConnectorUnavailable(
            f"PySpark {pyspark.__version__} is installed but the connector is "
            f"{packages_coordinate()}: the two must be the same Spark release "
            "(pyproject.toml and tools/spark_jars.py pin them together)"
        )
    return Path(pyspark.__file__).resolve().parent / "jars"


def _ships(spark_jar_names: list[str], artifact: str) -> bool:
    """Whether Spark's jars hold `artifact` at some version (`<artifactId>-<version>.jar`)."""
    pattern = re.compile(re.escape(artifact) + r"-\d[^/]*\.jar")
    return any(pattern.fullmatch(name) for name in spark_jar_names)


def connector_jars(*, resolve: bool = True) -> list[Path]:
    """The connector's jars that Spark does not ship, for `spark.jars`.

    With resolve=True a missing or stale cache is resolved now (Maven, Maven
    Central); without it, ConnectorUnavailable says to run `make clients`.
    """
    if not spark_jars.installed():
        if not resolve:
            raise ConnectorUnavailable(
                f"{packages_coordinate()} is not resolved in {spark_jars.jars_dir()}: "
                "run `make clients` (python3 tools/spark_jars.py)"
            )
        try:
            spark_jars.ensure_jars()
        except spark_jars.SparkJarsError as exc:
            raise ConnectorUnavailable(f"cannot resolve {packages_coordinate()}: {exc}") from exc
    spark_jar_names = [p.name for p in pyspark_jars_dir().glob("*.jar")]
    return [
        path
        for _group, artifact, _version, path in spark_jars.artifacts()
        if not _ships(spark_jar_names, artifact)
    ]
