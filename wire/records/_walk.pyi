# The C extension built from _walk.c (optional: records.py falls back to
# _walk_records, the same walk in Python). Its signature, for the type checker.
from typing_extensions import Buffer

def walk_records(section: Buffer, count: int, base_timestamp: int, /) -> tuple[str | None, int]: ...
