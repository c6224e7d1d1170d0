"""The states of a transactional id, as Kafka's TransactionState names them.

The code is what `__transaction_state` stores (TransactionStatus), the name
what DescribeTransactions and ListTransactions show. PrepareEpochFence and
Dead are Kafka's in-memory states (never in the log); they are named so that
any record decodes.
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
