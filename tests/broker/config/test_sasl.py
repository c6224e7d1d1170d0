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


def test_brokers_log_in_to_each_other_with_the_inter_broker_mechanism():
    cluster = {
        "zookeeper.connect": "127.0.0.1:2181",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
    }
    # Kafka's default inter-broker mechanism (GSSAPI) is not enabled here.
    with pytest.raises(ConfigError, match="must be included in sasl.enabled.mechanisms"):
        sasl_config(**cluster)
    # PLAIN_JAAS names the broker's own user (username, password options).
    config = sasl_config(**cluster, **{"sasl.mechanism.inter.broker.protocol": "PLAIN"})
    login = config.inter_broker_login
    assert login is not None
    assert (login.mechanism, login.username, login.password) == ("PLAIN", "admin", "admin-secret")
    scram_without_user = {
        **cluster,
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
    }
    with pytest.raises(ConfigError, match="give listener.name.sasl_plaintext.scram-sha-512"):
        sasl_config(**scram_without_user)
    # A PLAINTEXT inter-broker listener (the first one, by default) needs no login,
    # and neither does a single node.
    assert sasl_config(**{"zookeeper.connect": "127.0.0.1:2181"}).inter_broker_login is None
    only_sasl = sasl_config(listeners="SASL_PLAINTEXT://127.0.0.1:0")
    assert only_sasl.listener_sasl("SASL_PLAINTEXT") is not None
    assert only_sasl.inter_broker_login is None
