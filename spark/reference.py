"""What the streaming job (spark/stats.py) must write, computed in plain Python.

The job counts purchases and sums revenue per country and per one-minute
event-time window, and writes a window once Spark's watermark (the largest event
time seen, less the allowed lateness) has passed the window's end. Given every
purchase it read, the rows it has written are therefore those of `window_stats`
whose window ends at or before `watermark_ms(...)`; the windows after that are
still open in its state.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from spark.purchases import Purchase


@dataclass(frozen=True, order=True)
class WindowStat:
    window_start_ms: int
    country: str
    window_end_ms: int
    purchases: int
    revenue: Decimal

    @classmethod
    def from_json(cls, value: bytes | str) -> WindowStat:
        """A row as the job writes it to Kafka (spark/stats.py's JSON value)."""
        row = json.loads(value, parse_float=Decimal)
        return cls(
            _epoch_ms(row["window_start"]),
            row["country"],
            _epoch_ms(row["window_end"]),
            int(row["purchases"]),
            Decimal(row["revenue"]),
        )


def _epoch_ms(iso: str) -> int:
    moment = datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return int(moment.timestamp() * 1000)


def window_stats(purchases: Iterable[Purchase], window_ms: int) -> list[WindowStat]:
    """Purchases and revenue per (tumbling event-time window, country), sorted."""
    totals: dict[tuple[int, str], tuple[int, Decimal]] = {}
    for p in purchases:
        start = p.event_time_ms - p.event_time_ms % window_ms
        count, revenue = totals.get((start, p.country), (0, Decimal(0)))
        totals[(start, p.country)] = (count + 1, revenue + p.amount)
    return sorted(
        WindowStat(start, country, start + window_ms, count, revenue)
        for (start, country), (count, revenue) in totals.items()
    )


def watermark_ms(purchases: Iterable[Purchase], delay_ms: int) -> int:
    """Spark's event-time watermark once it has read these purchases."""
    return max(p.event_time_ms for p in purchases) - delay_ms


def closed_window_stats(
    purchases: list[Purchase], window_ms: int, delay_ms: int
) -> list[WindowStat]:
    """The rows an append-mode job has written after reading these purchases."""
    watermark = watermark_ms(purchases, delay_ms)
    return [s for s in window_stats(purchases, window_ms) if s.window_end_ms <= watermark]
