"""server.properties in Java's Properties syntax, and --override arguments."""

import pytest

from broker.config.broker import BrokerConfig
from broker.config.describe import ConfigSource
from broker.config.keys import ConfigError
from broker.config.listeners import Endpoint
from broker.config.properties import parse_properties
from tests.broker.config.support import HOUR

SERVER_PROPERTIES = r"""
# A comment
! another comment
   # an indented comment \
num.partitions = 4
log.dirs=/var/lib/gregor/a,\
         /var/lib/gregor/b
listeners:PLAINTEXT://0.0.0.0:9093
broker.rack    rack\u002d1
advertised.listeners=PLAINTEXT://kafka.example.com:9093
log.retention.hours=24
log.cleanup.policy=compact,\
    delete
"""


def test_properties_file_with_comments_continuations_and_escapes(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(SERVER_PROPERTIES)
    c = BrokerConfig.load(path)
    assert c.num_partitions == 4
    assert c.log_dirs == ["/var/lib/gregor/a", "/var/lib/gregor/b"]
    assert c.listeners == [Endpoint("PLAINTEXT", "0.0.0.0", 9093)]
    assert c.rack == "rack-1"
    assert c.advertised_listeners == [Endpoint("PLAINTEXT", "kafka.example.com", 9093)]
    assert c.log_retention_ms == 24 * HOUR
    assert c.log_cleanup_policy == ["compact", "delete"]
    assert c.source("num.partitions") == ConfigSource.STATIC_BROKER_CONFIG


def test_java_properties_syntax():
    # Checked line by line against java.util.Properties.load.
    text = "\n".join(
        [
            "a=1",
            "b: 2",
            "c 3",
            "d\t=\t4  ",
            "e=",
            "f",
            r"g\ key=with\=equals\:colon",
            r"h=tab\there",
            r"i=odd\\",
            "j=x",
            "j=last wins",
            r"k=\a\b",
            "  ! not a value",
            r"l=continued \\",
            "m=2",
            "n==double",
            "o \\",
            "  = split key",
        ]
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4  ",
        "e": "",
        "f": "",
        "g key": "with=equals:colon",
        "h": "tab\there",
        "i": "odd\\",
        "j": "last wins",
        "k": "ab",
        "l": "continued \\",
        "m": "2",
        "n": "=double",
        "o": "split key",
    }


def test_comment_lines_do_not_continue_and_crlf_is_a_line_end():
    assert parse_properties("# comment \\\na=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}


def test_malformed_unicode_escape_is_a_config_error():
    with pytest.raises(ConfigError, match="Malformed"):
        parse_properties(r"a=\u12")


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="Cannot read configuration file"):
        BrokerConfig.load(tmp_path / "nope.properties")


def test_overrides_win_over_the_file(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=4\nlog.retention.hours=24\n")
    c = BrokerConfig.load(path, ["num.partitions=8", "log.retention.ms=1000", "broker.rack=a=b"])
    assert c.num_partitions == 8
    assert c.log_retention_ms == 1000
    assert c.rack == "a=b"  # split at the first '='
    assert c.source("num.partitions") == ConfigSource.STATIC_BROKER_CONFIG


def test_override_without_equals_is_a_config_error():
    with pytest.raises(ConfigError, match="num.partitions"):
        BrokerConfig.load(None, ["num.partitions"])


def test_overrides_may_be_a_mapping_of_python_values():
    c = BrokerConfig(
        {"num.partitions": 3, "auto.create.topics.enable": False, "log.dirs": ["/a", "/b"]}
    )
    assert c.num_partitions == 3
    assert c.auto_create_topics_enable is False
    assert c.log_dirs == ["/a", "/b"]
