"""Purchase events of a donut shop in Canada, the USA and South Africa, from a seeded generator.

    for purchase in generate(seed=7, rate=12, duration=600, start_ms=...):
        purchase.key, purchase.to_json()

A million purchases a day is about 12 a second. `rate` is purchases per second of
event time and `duration` seconds of event time; the same arguments give the same
purchases, so a run can be checked against a plain-Python computation of what it
should produce (spark/reference.py). Each event's time may fall up to
`max_lateness` seconds before its turn, as a till that reports a little late
would: the stream then sees events out of order, which its watermark allows for.

The JSON of one event (the value of a record in topic `purchases`, keyed by country):

    {"order_id": "3f2c...", "country": "CA", "customer_id": 4711,
     "amount": 11.34, "event_time": "2026-11-23T12:00:00.250Z"}

`amount` is in the country's own currency, with two decimals.
"""

from __future__ import annotations

import datetime
import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

# country -> (share of purchases, price of one donut in its currency)
COUNTRIES: dict[str, tuple[float, Decimal]] = {
    "CA": (0.30, Decimal("1.89")),
    "US": (0.55, Decimal("1.49")),
    "ZA": (0.15, Decimal("18.50")),
}
MAX_DONUTS = 12

# The events' JSON schema as Spark reads it: amounts are exact decimals, so sums in
# Spark and in Python agree to the cent.
SPARK_SCHEMA_DDL = (
    "order_id STRING, country STRING, customer_id BIGINT, "
    "amount DECIMAL(10,2), event_time TIMESTAMP"
)


@dataclass(frozen=True)
class Purchase:
    order_id: str
    country: str
    customer_id: int
    amount: Decimal
    event_time_ms: int

    @property
    def key(self) -> bytes:
        return self.country.encode()

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "order_id": self.order_id,
                "country": self.country,
                "customer_id": self.customer_id,
                # A two-decimal amount's shortest float repr is its decimal text.
                "amount": float(self.amount),
                "event_time": iso_utc(self.event_time_ms),
            },
            separators=(",", ":"),
        ).encode()


def iso_utc(ms: int) -> str:
    """2026-11-23T12:00:00.250Z"""
    moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def generate(
    *,
    seed: int,
    rate: float,
    duration: float,
    start_ms: int,
    max_lateness: float = 5.0,
) -> Iterator[Purchase]:
    """round(rate * duration) purchases, the i-th due at start + i / rate seconds."""
    if rate <= 0 or duration < 0:
        raise ValueError("rate must be positive and duration not negative")
    rng = random.Random(seed)
    countries = list(COUNTRIES)
    weights = [COUNTRIES[c][0] for c in countries]
    for i in range(round(rate * duration)):
        due_ms = start_ms + int(i * 1000 / rate)
        country = rng.choices(countries, weights)[0]
        donuts = rng.randint(1, MAX_DONUTS)
        lateness_ms = int(rng.uniform(0, max_lateness) * 1000)
        yield Purchase(
            order_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            country=country,
            customer_id=rng.randrange(1, 100_000),
            amount=donuts * COUNTRIES[country][1],
            event_time_ms=due_ms - lateness_ms,
        )
