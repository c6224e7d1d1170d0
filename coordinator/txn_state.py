"""The states of a transactional id, as Kafka's TransactionState names them.

The code is what `__transaction_state` stores (TransactionStatus), the name
what DescribeTransactions and ListTransactions show. A state can be entered
only from the states listed in `_PREVIOUS` (Kafka's validPreviousStates).
"""

from __future__ import annotations

import enum


class TxnState(enum.Enum):
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    def __init__(self, code: int, display: str):
        self.code = code
        self.display = display

    @classmethod
    def from_code(cls, code: int) -> TxnState:
        for state in cls:
            if state.code == code:
                return state
        raise ValueError(f"unknown transaction state {code}")

    @classmethod
    def from_display(cls, name: str) -> TxnState | None:
        for state in cls:
            if state.display == name:
                return state
        return None

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    def may_follow(self, previous: TxnState) -> bool:
        return previous in _PREVIOUS[self]


S = TxnState
_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT,
                                S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}  # fmt: skip
