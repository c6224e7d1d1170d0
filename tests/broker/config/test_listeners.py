"""listeners, advertised.listeners and listener.security.protocol.map: parsed
endpoints and Kafka's checks."""

import pytest

from broker.config.keys import ConfigError
from broker.config.listeners import Endpoint
from tests.broker.config.support import props


@pytest.mark.parametrize(
    ("listeners", "message"),
    [
        ("localhost:9092", "Unable to parse localhost:9092 to a broker endpoint"),
        ("FOO://localhost:9092", "No security protocol defined for listener FOO"),
        (
            "PLAINTEXT://localhost:9092,PLAINTEXT://localhost:9093",
            "Each listener must have a different name",
        ),
        ("PLAINTEXT://localhost:99999", "port 99999"),
        ("", "Configuration 'listeners' must not be empty"),
    ],
)
def test_bad_listener_is_a_config_error_naming_listeners(listeners, message):
    with pytest.raises(ConfigError, match="listeners") as info:
        props(f"listeners={listeners}")
    assert message in str(info.value)
    assert info.value.key == "listeners"


def test_listener_ports_must_differ_but_port_zero_may_repeat():
    text = "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT\n"
    with pytest.raises(ConfigError, match="Each listener must have a different port"):
        props(text + "listeners=PLAINTEXT://localhost:9092,EXTERNAL://localhost:9092")
    c = props(text + "listeners=PLAINTEXT://localhost:0,external://:0")
    assert c.listeners == [Endpoint("PLAINTEXT", "localhost", 0), Endpoint("EXTERNAL", "", 0)]


def test_an_ipv4_and_an_ipv6_listener_may_share_a_port():
    text = "listener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT,C:PLAINTEXT\n"
    c = props(text + "listeners=A://127.0.0.1:9092,B://[::1]:9092")
    assert [lst.port for lst in c.listeners] == [9092, 9092]
    with pytest.raises(ConfigError, match="different port"):
        props(text + "listeners=A://127.0.0.1:9092,B://[::1]:9092,C://10.0.0.1:9092")


def test_listeners_parse_ipv6_and_named_listeners():
    c = props(
        "listeners=CLIENT://[::1]:9092,REPLICATION://127.0.0.1:9094,CONTROLLER://:9093\n"
        "listener.security.protocol.map=CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        "controller.listener.names=CONTROLLER\n"
        "inter.broker.listener.name=REPLICATION\n"
        "process.roles=broker,controller\n"
        "controller.quorum.voters=1@localhost:9093\n"
    )
    assert c.listeners == [
        Endpoint("CLIENT", "::1", 9092),
        Endpoint("REPLICATION", "127.0.0.1", 9094),
    ]
    assert [lst.name for lst in c.all_listeners] == ["CLIENT", "REPLICATION", "CONTROLLER"]
    assert str(c.listeners[0]) == "CLIENT://[::1]:9092"
    assert c.inter_broker_listener_name == "REPLICATION"
    assert c.process_roles == ["broker", "controller"]


def test_bad_advertised_listeners_are_config_errors():
    with pytest.raises(ConfigError, match="nonroutable meta-address 0.0.0.0") as info:
        props("advertised.listeners=PLAINTEXT://0.0.0.0:9092")
    assert info.value.key == "advertised.listeners"
    with pytest.raises(ConfigError, match="listener EXTERNAL is not in listeners"):
        props("advertised.listeners=EXTERNAL://host:9092")


def test_bad_security_protocol_map_is_a_config_error():
    with pytest.raises(ConfigError, match="Invalid security protocol `FOO`"):
        props("listener.security.protocol.map=PLAINTEXT:FOO")
    with pytest.raises(ConfigError, match="listener.security.protocol.map"):
        props("listener.security.protocol.map=PLAINTEXT")


def test_a_tls_listener_without_a_keystore_is_a_config_error():
    with pytest.raises(ConfigError, match="An SSL listener needs a keystore") as info:
        props("listeners=SSL://localhost:9093")
    assert info.value.key == "ssl.keystore.location"
