"""Config values printed as Kafka prints them."""

from broker.config.keys import java_double_string


def test_java_double_strings():
    assert [java_double_string(v) for v in (0.5, 1.0, 0.0, 1e7, 1.7976931348623157e308, 1e-4)] == [
        "0.5",
        "1.0",
        "0.0",
        "1.0E7",
        "1.7976931348623157E308",
        "1.0E-4",
    ]
