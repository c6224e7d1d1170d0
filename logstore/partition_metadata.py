"""`partition.metadata`: the topic id of the partition in a log directory.

    version: 0
    topic_id: <the 16 uuid bytes, base64url without padding>

(no trailing newline, exactly as Kafka's PartitionMetadataFileFormatter). A
topic id is a `uuid.UUID`; the all-zero id is not a valid topic id.
"""

from __future__ import annotations

import base64
import os
import uuid

from logstore.errors import CorruptFileError
from logstore.files import PARTITION_METADATA, write_atomically

VERSION = 0
ZERO_UUID = uuid.UUID(int=0)


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: url-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def topic_id_from_string(text: str) -> uuid.UUID:
    if len(text) != 22:
        raise ValueError(f"topic id {text!r} is not 22 base64url characters")
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16 or topic_id_to_string(uuid.UUID(bytes=raw)) != text:
        raise ValueError(f"topic id {text!r} is not a base64url uuid")
    return uuid.UUID(bytes=raw)


def format_partition_metadata(topic_id: uuid.UUID) -> bytes:
    return f"version: {VERSION}\ntopic_id: {topic_id_to_string(topic_id)}".encode("ascii")


def read_partition_metadata(log_dir: str) -> uuid.UUID | None:
    """The topic id stored in `<log_dir>/partition.metadata`, None if absent."""
    path = os.path.join(log_dir, PARTITION_METADATA)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise CorruptFileError(path, "not UTF-8 text") from None
    if len(lines) < 2:
        raise CorruptFileError(path, "expected a version line and a topic_id line")
    version = lines[0].split()
    if len(version) != 2 or version[0] != "version:" or not version[1].lstrip("-").isdigit():
        raise CorruptFileError(path, f"malformed line {lines[0]!r}")
    if int(version[1]) != VERSION:
        raise CorruptFileError(path, f"unrecognized version {version[1]}")
    topic = lines[1].split()
    if len(topic) != 2 or topic[0] != "topic_id:":
        raise CorruptFileError(path, f"malformed line {lines[1]!r}")
    try:
        topic_id = topic_id_from_string(topic[1])
    except ValueError as e:
        raise CorruptFileError(path, str(e)) from None
    if topic_id == ZERO_UUID:
        raise CorruptFileError(path, "the zero uuid is not a topic id")
    return topic_id


def write_partition_metadata(log_dir: str, topic_id: uuid.UUID, *, fsync: bool = True) -> None:
    if topic_id == ZERO_UUID:
        raise ValueError("the zero uuid is not a topic id")
    write_atomically(
        os.path.join(log_dir, PARTITION_METADATA), format_partition_metadata(topic_id), fsync=fsync
    )
