"""What the foreign suites share: where they are cached, how they fail to be had,
and the ids of their rows."""

from __future__ import annotations

from .. import REPO
from ..verdicts import PREFIX, SUITE_ROW

__all__ = ["CACHE", "PREFIX", "SUITE_ROW", "SuiteUnavailable", "log"]

# Downloads and builds, git-ignored, so that a second run starts at once.
CACHE = REPO / ".cache" / "realsuites"


class SuiteUnavailable(RuntimeError):
    """A suite could not be obtained or built."""


def log(msg: str) -> None:
    print(f"real suites: {msg}", flush=True)
