"""The broker's and the topics' configuration, as Apache Kafka names and checks it.

    config = BrokerConfig.load("server.properties", ["log.dirs=/data", "node.id=2"])
    config.listeners                               # [Endpoint("PLAINTEXT", "localhost", 9092)]
    TopicConfig(config, {"retention.ms": "60000"}).retention_ms

One job per module:
    keys         what a key is: type, default, validator, parsing and printing values
    broker_keys  the broker keys Gregor knows, and the Kafka keys it accepts and ignores
    properties   Java's Properties format (server.properties) and --override arguments
    listeners    listener endpoints and the listener security protocol map
    describe     how DescribeConfigs reports a value: source and synonyms
    broker       BrokerConfig: static, --override and dynamic layers, typed access
    topic        the topic keys and TopicConfig: a topic's overrides over the broker's
"""

from broker.config.broker import BrokerConfig
from broker.config.describe import ConfigSource
from broker.config.keys import ConfigError
from broker.config.listeners import Endpoint
from broker.config.topic import TopicConfig

__all__ = ["BrokerConfig", "ConfigError", "ConfigSource", "Endpoint", "TopicConfig"]
