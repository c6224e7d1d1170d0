"""A local SparkSession for the pipeline: loopback only, the Kafka connector on its
classpath, and Spark's own log in a file instead of the terminal.

    spark = local_session("purchases", log_dir=Path("spark-output/logs"))

The JVM starts once per process (Spark keeps one active session); its log4j2
output goes to `<log_dir>/spark.log`, WARN and above, so that a test or the
command line prints only what it means to and can show that file when
something fails.
"""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

from spark import connector

LOG_FILE = "spark.log"

# log4j2 for Spark's JVM: one file, WARN and above. The Kafka clients inside the
# connector log every (re)connection at INFO; those stay out too.
_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss.SSS}} %p %c{{1}}: %m%n%ex
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
"""


def log4j2_config(log_dir: Path) -> Path:
    """Write the log4j2 configuration that sends Spark's log to log_dir/spark.log."""
    log_dir.mkdir(parents=True, exist_ok=True)
    config = log_dir / "log4j2.properties"
    config.write_text(_LOG4J2.format(path=log_dir / LOG_FILE))
    return config


def local_session(
    app_name: str,
    *,
    log_dir: Path,
    scratch_dir: Path | None = None,
    master: str = "local[2]",
    use_packages: bool = False,
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """A SparkSession in this process, bound to 127.0.0.1, with the Kafka connector.

    use_packages=False hands Spark the jars resolved into .cache/ (`spark.jars`);
    True lets Spark resolve the connector itself (`spark.jars.packages`, which needs
    Maven Central). scratch_dir, when given, holds Spark's local files (shuffle
    blocks, the jars it copies for its executors) instead of /tmp: a driver that
    is killed leaves them behind. Raises connector.ConnectorUnavailable when
    PySpark or the jars are missing.
    """
    settings = {
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # Small jobs on a small machine: Spark's default of 200 shuffle (and so state
        # store) partitions would cost more than the work itself.
        "spark.sql.shuffle.partitions": "2",
        # Windows print, and land in Parquet and JSON, in UTC whatever the machine's zone.
        "spark.sql.session.timeZone": "UTC",
    }
    if use_packages:
        connector.pyspark_jars_dir()  # checks the PySpark version against the connector's
        settings["spark.jars.packages"] = connector.packages_coordinate()
    else:
        settings["spark.jars"] = ",".join(str(p) for p in connector.connector_jars())
    java_options = [f"-Dlog4j2.configurationFile={log4j2_config(Path(log_dir))}"]
    if scratch_dir is not None:
        settings["spark.local.dir"] = str(scratch_dir)
        java_options.append(f"-Djava.io.tmpdir={scratch_dir}")
    settings["spark.driver.extraJavaOptions"] = " ".join(java_options)
    # Spark picks the machine's outward address for itself unless told; everything
    # here is on loopback (the driver's RPC and block manager bind to 127.0.0.1).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
