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
    master: str = "local[2]",
    use_packages: bool = False,
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """A SparkSession in this process, bound to 127.0.0.1, with the Kafka connector.

    use_packages=False hands Spark the jars resolved into .cache/ (`spark.jars`);
    True lets Spark resolve the connector itself (`spark.jars.packages`, which needs
    Maven Central). Raises connector.ConnectorUnavailable when PySpark or the
    jars are missing.
    """
    if use_packages:
        connector.pyspark_jars_dir()  # checks the PySpark version against the connector's
        jar_conf = {"spark.jars.packages": connector.packages_coordinate()}
    else:
        jar_conf = {"spark.jars": ",".join(str(p) for p in connector.connector_jars())}
    log_config = log4j2_config(Path(log_dir))
    # Spark picks the machine's outward address for itself unless told; everything
    # here is on loopback (the driver's RPC and block manager bind below).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log_config}")
        # Small jobs on a small machine: Spark's default of 200 shuffle (and so state
        # store) partitions would cost more than the work itself.
        .config("spark.sql.shuffle.partitions", "2")
        # Windows print, and land in Parquet and JSON, in UTC whatever the machine's zone.
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in {**jar_conf, **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
