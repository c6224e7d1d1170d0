"""SASL_PLAINTEXT listeners: their mechanisms and PLAIN users, read as Kafka reads them."""

import pytest

from broker.config import BrokerConfig
from broker.config.keys import ConfigError

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a\\"b";'
)


def sasl_config(**extra) -> BrokerConfig:
    return BrokerConfig(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            **extra,
        }
    )


def test_a_sasl_listener_gets_its_mechanisms_and_plain_users():
    config = sasl_config()
    sasl = config.listener_sasl("SASL_PLAINTEXT")
    assert sasl is not None
    assert sasl.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert sasl.plain_users == {"admin": "admin-secret", "alice": 'a"b'}
    assert sasl.max_receive_size == 524288
    assert config.listener_sasl("PLAINTEXT") is None
    # The listener keys it acted on are not reported as ignored.
    assert not any("listener.name" in w for w in config.warnings())


def test_a_listener_prefixed_mechanism_list_wins():
    config = sasl_config(
        **{"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-256"}
    )
    sasl = config.listener_sasl("SASL_PLAINTEXT")
    assert sasl is not None and sasl.mechanisms == ("SCRAM-SHA-256",)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        # Kafka's default mechanism needs Kerberos, which Gregor does not serve.
        ({"sasl.enabled.mechanisms": None}, "SASL mechanism GSSAPI of listener SASL_PLAINTEXT"),
        ({"sasl.enabled.mechanisms": "OAUTHBEARER"}, "is not supported by Gregor"),
        ({"sasl.enabled.mechanisms": ""}, "enables no SASL mechanism"),
        (
            {"listener.name.sasl_plaintext.plain.sasl.jaas.config": None},
            "set listener.name.sasl_plaintext.plain.sasl.jaas.config",
        ),
        (
            {"listener.name.sasl_plaintext.plain.sasl.jaas.config": "PlainLoginModule user_a=b;"},
            "control flag not specified",
        ),
        (
            {"listener.name.sasl_plaintext.plain.sasl.jaas.config": 'M required user_a="b"'},
            "';' expected",
        ),
    ],
)
def test_a_sasl_listener_gregor_cannot_serve_is_refused_at_start(settings, message):
    with pytest.raises(ConfigError) as info:
        sasl_config(**settings)
    assert message in str(info.value)


def test_brokers_of_a_cluster_replicate_over_plaintext_only():
    with pytest.raises(ConfigError, match="replicate over a PLAINTEXT listener only"):
        sasl_config(
            **{
                "zookeeper.connect": "127.0.0.1:2181",
                "inter.broker.listener.name": "SASL_PLAINTEXT",
            }
        )
    # The first listener is the inter-broker one by default: a SASL one after
    # it is fine, and so is a single node with only a SASL listener.
    sasl_config(**{"zookeeper.connect": "127.0.0.1:2181"})
    only_sasl = sasl_config(listeners="SASL_PLAINTEXT://127.0.0.1:0")
    assert only_sasl.listener_sasl("SASL_PLAINTEXT") is not None
