"""Run Apache Kafka's own command-line tools (and kcat) against Gregor.

The jars come from tools/kafka_jars.py (`make clients`); this module never
downloads anything itself: a missing java, jar directory or kcat raises
ToolMissing with the command that installs it.

    from tools import kafka_cli
    kafka_cli.run_tool("kafka-topics", "--bootstrap-server", "127.0.0.1:9092", "--list")
    kafka_cli.run_tool("kafka-console-producer", "--bootstrap-server", bs, "--topic", "t",
                       input="a\\nb\\n")
    with kafka_cli.popen_tool("kafka-server", "server.properties") as node: ...
    kafka_cli.run_kcat("-b", bs, "-L")

Every tool runs as `java -Xmx256m -cp '<jars>/*' <MainClass> args...` with
log4j2 configured by tools/log4j2-tools.xml (WARN and above to stderr), so
stdout carries only the tool's own output.

Usable from a shell too:  python3 -m tools.kafka_cli kafka-topics --version
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

try:
    from . import kafka_jars
except ImportError:  # run as a plain script: python3 tools/kafka_cli.py
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import kafka_jars  # type: ignore[no-redef]

KAFKA_VERSION = kafka_jars.KAFKA_VERSION
LOG4J2_CONFIG = kafka_jars.LOG4J2_CONFIG
DEFAULT_HEAP = "256m"
DEFAULT_TIMEOUT = 60.0

# Script name (as in Kafka's bin/) -> main class in Kafka 4.3.1's jars.
# Each class was checked with `unzip -Z1` against kafka-tools-4.3.1.jar and
# kafka_2.13-4.3.1.jar; tests/clients/test_client_tools.py checks them again.
TOOLS: dict[str, str] = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    # No script in bin/: Kafka's system tests run it with kafka-run-class.sh.
    "transactional-message-copier": "org.apache.kafka.tools.TransactionalMessageCopier",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",  # kafka.tools.* before 4.x
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-e2e-latency": "org.apache.kafka.tools.EndToEndLatency",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    # A real Apache Kafka KRaft node: format its log dir, then run kafka.Kafka.
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-server": "kafka.Kafka",
}

# Tools that run for long: no C1-only JIT flag, a bigger heap.
_SERVERS = {"kafka.Kafka"}
_SERVER_HEAP = "512m"

# The JVM as Kafka's own bin/ scripts start it (as_shipped=True): kafka-run-class.sh's
# default KAFKA_JVM_PERFORMANCE_OPTS, and the heaps of kafka-server-start.sh and of the
# perf-test scripts (256M from kafka-run-class.sh for the rest). The flags above are
# tuned for quick tests; benchmarks compare against Kafka as its users run it.
SHIPPED_JVM_OPTS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
)
SHIPPED_HEAP: dict[str, tuple[str, ...]] = {
    "kafka.Kafka": ("-Xmx1G", "-Xms1G"),
    "org.apache.kafka.tools.ProducerPerformance": ("-Xmx512M",),
    "org.apache.kafka.tools.ConsumerPerformance": ("-Xmx512M",),
}


class ToolMissing(RuntimeError):
    """A declared client dependency is not installed (run `make clients`)."""


def java_available() -> bool:
    return shutil.which("java") is not None


def kcat_available() -> bool:
    return shutil.which("kcat") is not None


def jars_available() -> bool:
    return kafka_jars.installed()


def jars_dir() -> Path:
    return kafka_jars.jars_dir()


def classpath() -> str:
    return kafka_jars.classpath()


def main_class(name: str) -> str:
    """Map a tool name (`kafka-topics`, `kafka-topics.sh`) or a main class to the class."""
    key = name.removesuffix(".sh")
    if key in TOOLS:
        return TOOLS[key]
    if "." in name and not name.endswith(".sh"):
        return name  # already a fully-qualified class name
    raise KeyError(f"unknown Kafka tool {name!r}; known: {', '.join(sorted(TOOLS))}")


def check_installed() -> None:
    """Raise ToolMissing unless java and the Kafka jars are present."""
    if not java_available():
        raise ToolMissing(
            "`java` is not on PATH: run `make clients` (tools/install_debian.sh installs "
            "default-jre-headless)"
        )
    if not jars_available():
        raise ToolMissing(
            f"Apache Kafka {KAFKA_VERSION} jars are not in {jars_dir()}: run `make clients` "
            "(python3 tools/kafka_jars.py)"
        )


def java_command(
    name: str,
    *args: str,
    heap: str | None = None,
    jvm_args: Sequence[str] = (),
    log4j2_config: str | os.PathLike[str] | None = None,
    as_shipped: bool = False,
) -> list[str]:
    """The argv that runs tool `name` (see TOOLS) with `args`; as_shipped: Kafka's JVM flags."""
    cls = main_class(name)
    java = shutil.which("java") or "java"
    server = cls in _SERVERS
    if as_shipped:
        heap_args = (f"-Xmx{heap}",) if heap else SHIPPED_HEAP.get(cls, ("-Xmx256M",))
        cmd = [java, *heap_args, *SHIPPED_JVM_OPTS, "-Djava.awt.headless=true"]
    else:
        cmd = [
            java,
            f"-Xmx{heap or (_SERVER_HEAP if server else DEFAULT_HEAP)}",
            "-XX:+UseSerialGC",
            "-Djava.awt.headless=true",
        ]
        if not server:
            cmd.append("-XX:TieredStopAtLevel=1")  # short-lived: start fast
    cmd.append(f"-Dlog4j2.configurationFile={log4j2_config or LOG4J2_CONFIG}")
    cmd += [*jvm_args, "-cp", classpath(), cls, *map(str, args)]
    return cmd


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(os.environ)
    # Options a developer's shell may carry for a real Kafka install would change behaviour.
    for var in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "KAFKA_OPTS", "KAFKA_HEAP_OPTS"):
        merged.pop(var, None)
    if env:
        merged.update(env)
    return merged


def run_tool(
    name: str,
    *args: str,
    input: str | bytes | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check: bool = False,
    heap: str | None = None,
    jvm_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    text: bool = True,
    as_shipped: bool = False,
) -> subprocess.CompletedProcess:
    """Run a Kafka CLI tool to completion; stdout and stderr are captured.

    `input` is fed to stdin (stdin is /dev/null otherwise, so a console producer
    without input ends at once). On timeout the JVM is killed and
    subprocess.TimeoutExpired is raised (its .output/.stderr hold what was printed).
    With check=True a non-zero exit raises subprocess.CalledProcessError.
    """
    check_installed()
    if isinstance(input, str) and not text:
        input = input.encode()
    elif isinstance(input, bytes) and text:
        input = input.decode()
    cmd = java_command(name, *args, heap=heap, jvm_args=jvm_args, as_shipped=as_shipped)
    return subprocess.run(
        cmd,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=text,
        timeout=timeout,
        check=check,
        env=_env(env),
        cwd=cwd,
    )


def popen_tool(
    name: str,
    *args: str,
    heap: str | None = None,
    jvm_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    as_shipped: bool = False,
    **popen_kwargs,
) -> subprocess.Popen:
    """Start a long-running tool (console consumer, kafka.Kafka node) without waiting.

    Defaults: stdin=/dev/null, stdout and stderr piped, text mode; override with
    popen_kwargs. The caller must terminate/wait the process (use it as a context
    manager, and call stop()).
    """
    check_installed()
    popen_kwargs.setdefault("stdin", subprocess.DEVNULL)
    popen_kwargs.setdefault("stdout", subprocess.PIPE)
    popen_kwargs.setdefault("stderr", subprocess.PIPE)
    popen_kwargs.setdefault("text", True)
    cmd = java_command(name, *args, heap=heap, jvm_args=jvm_args, as_shipped=as_shipped)
    return subprocess.Popen(cmd, env=_env(env), cwd=cwd, **popen_kwargs)


def stop(proc: subprocess.Popen, timeout: float = 15.0) -> int:
    """SIGTERM a process from popen_tool, then SIGKILL after `timeout`; return its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def run_kcat(
    *args: str,
    input: str | bytes | None = None,
    timeout: float = 30.0,
    check: bool = False,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """Run kcat (librdkafka's CLI, Debian package `kcat`) with captured output."""
    kcat = shutil.which("kcat")
    if kcat is None:
        raise ToolMissing("`kcat` is not on PATH: run `make clients` (tools/install_debian.sh)")
    if isinstance(input, str) and not text:
        input = input.encode()
    elif isinstance(input, bytes) and text:
        input = input.decode()
    return subprocess.run(
        [kcat, *map(str, args)],
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=text,
        timeout=timeout,
        check=check,
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m tools.kafka_cli <tool|main.Class|kcat> [args...]")
        print("tools: " + " ".join(sorted(TOOLS)))
        return 0
    name, *rest = argv
    try:
        if name == "kcat":
            kcat = shutil.which("kcat")
            if kcat is None:
                raise ToolMissing("`kcat` is not on PATH: run `make clients`")
            return subprocess.call([kcat, *rest])
        check_installed()
        return subprocess.call(java_command(name, *rest), env=_env(None))
    except (ToolMissing, KeyError) as exc:
        print(f"kafka_cli: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
