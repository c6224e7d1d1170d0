"""Named deadlines, like the coordinator runtime's timer in Kafka.

Scheduling a key replaces that key's previous deadline; cancelling forgets it.
A heap with lazy deletion keeps `next_deadline` cheap with one timer per
member.

A tick takes the timers due when it starts (`take_due`) and fires them in
deadline order, each only if it is still live (`claim`): a timer that an
earlier callback of the same tick cancelled or rescheduled does not fire, and
one scheduled during the tick waits for the next tick even if already due, so
a zero timeout cannot spin inside one tick.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable

Entry = tuple[int, int, Hashable]  # (deadline, sequence, key)


class Timers:
    def __init__(self) -> None:
        self._heap: list[Entry] = []
        self._live: dict[Hashable, tuple[int, int]] = {}  # key -> (deadline, seq)
        self._seq = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int) -> None:
        seq = next(self._seq)
        self._live[key] = (deadline_ms, seq)
        heapq.heappush(self._heap, (deadline_ms, seq, key))

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def __len__(self) -> int:
        return len(self._live)

    def keys(self) -> list[Hashable]:
        return list(self._live)

    def next_deadline(self) -> int | None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            if self._live.get(key) == (deadline, seq):
                return deadline
            heapq.heappop(heap)
        return None

    def take_due(self, now_ms: int) -> list[Entry]:
        """The live timers due at `now_ms`, earliest first (still live until claimed)."""
        heap = self._heap
        due = []
        while heap and heap[0][0] <= now_ms:
            deadline, seq, key = heapq.heappop(heap)
            if self._live.get(key) == (deadline, seq):
                due.append((deadline, seq, key))
        return due

    def claim(self, entry: Entry) -> bool:
        """True (and forget the timer) if `entry` is still the key's live timer."""
        deadline, seq, key = entry
        if self._live.get(key) != (deadline, seq):
            return False
        del self._live[key]
        return True

    def restore(self, entries: list[Entry]) -> None:
        """Put back taken entries that were neither claimed nor replaced."""
        for entry in entries:
            deadline, seq, key = entry
            if self._live.get(key) == (deadline, seq):
                heapq.heappush(self._heap, entry)
