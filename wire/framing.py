"""Kafka framing: each request and response is an int32 big-endian size, then that many bytes.

`FrameSplitter` turns a byte stream into frames without doing any I/O: the
caller feeds whatever the socket returned and pulls complete frames out. A
frame may arrive in any number of pieces, and one piece may hold several
frames.

A size that is negative or above the limit (Kafka's
`socket.request.max.bytes` on a broker) raises as soon as its four bytes
arrive, before any of the frame's body is buffered, so a hostile size never
costs memory. After that the stream is unusable: the bytes from the bad size
on are dropped, frames wholly before it can still be taken, and every later
call raises the same error.

Buffering is linear in the bytes fed: data is appended to one bytearray, frames
are consumed by advancing an offset, and the consumed prefix is dropped only
when it is at least half the buffer, so a 100 MiB frame fed in 64 KiB chunks
is never re-copied per chunk.
"""

import struct

from wire.errors import DecodeError, EncodeError

__all__ = [
    "FrameSplitter",
    "FrameTooLarge",
    "InvalidFrameSize",
    "encode_frame",
    "frame_size_prefix",
]

_SIZE = struct.Struct(">i")
_PREFIX_LEN = _SIZE.size

# The largest size an int32 prefix can state.
_INT32_MAX = 2**31 - 1

# Drop the consumed prefix of the buffer once it is at least this long and at
# least half the buffer: each byte is then moved at most about once more.
_COMPACT_MIN = 64 * 1024


class InvalidFrameSize(DecodeError):
    """A frame's size prefix is not acceptable (negative, or see FrameTooLarge)."""

    def __init__(self, size: int, message: str | None = None):
        self.size = size
        super().__init__(message or f"invalid frame size {size}: negative")


class FrameTooLarge(InvalidFrameSize):
    """A frame's size prefix is above the splitter's max_frame_size."""

    def __init__(self, size: int, max_frame_size: int):
        self.max_frame_size = max_frame_size
        super().__init__(
            size, f"frame size {size} is larger than the maximum of {max_frame_size} bytes"
        )


def frame_size_prefix(n: int) -> bytes:
    """The 4-byte prefix of a frame whose body is `n` bytes (for scatter-gather writes)."""
    if not 0 <= n <= _INT32_MAX:
        raise EncodeError(f"frame size {n} is outside 0..{_INT32_MAX}")
    return _SIZE.pack(n)


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    """`payload` with its size prefix, as one bytes object."""
    with memoryview(payload) as view:
        return frame_size_prefix(view.nbytes) + view


class FrameSplitter:
    """Splits a Kafka byte stream into frames (sans-I/O).

    >>> splitter = FrameSplitter(max_frame_size=1024)
    >>> splitter.feed(b"\\x00\\x00\\x00\\x02hi\\x00\\x00")
    >>> splitter.next_frame()
    b'hi'
    >>> splitter.next_frame() is None
    True
    >>> splitter.buffered
    2
    """

    def __init__(self, max_frame_size: int):
        if not 0 <= max_frame_size <= _INT32_MAX:
            raise ValueError(f"max_frame_size {max_frame_size} is outside 0..{_INT32_MAX}")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        # Offset of the next frame's size prefix: everything before it is consumed.
        self._pos = 0
        # Offset of the first size prefix not yet checked; every prefix before it
        # (from _pos on) is within limits.
        self._checked = 0
        self._error: InvalidFrameSize | None = None

    @property
    def buffered(self) -> int:
        """Bytes held: a partial frame and complete frames not yet taken."""
        return len(self._buf) - self._pos

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes from the stream; raises InvalidFrameSize/FrameTooLarge on a bad size."""
        if self._error is not None:
            raise self._error
        self._buf += data
        self._check_sizes()

    def next_frame(self) -> bytearray | None:
        """The next complete frame's body, or None until one is fully buffered.

        The frame is the caller's own mutable copy: a broker patches offsets
        into the record batches of a Produce request in place.

        Raises the stream's InvalidFrameSize/FrameTooLarge once the frames
        before the bad size have been taken.
        """
        buf, pos = self._buf, self._pos
        if len(buf) - pos >= _PREFIX_LEN:
            # Checked by feed: 0 <= size <= max_frame_size.
            (size,) = _SIZE.unpack_from(buf, pos)
            start = pos + _PREFIX_LEN
            end = start + size
            if end <= len(buf):
                with memoryview(buf) as view:
                    frame = bytearray(view[start:end])
                self._consume_to(end)
                return frame
        elif self._error is not None and pos == len(buf):
            raise self._error
        return None

    def _check_sizes(self) -> None:
        buf, limit = self._buf, self.max_frame_size
        at = self._checked
        while at + _PREFIX_LEN <= len(buf):
            (size,) = _SIZE.unpack_from(buf, at)
            if size < 0 or size > limit:
                del buf[at:]
                self._checked = at
                self._error = InvalidFrameSize(size) if size < 0 else FrameTooLarge(size, limit)
                raise self._error
            at += _PREFIX_LEN + size
        self._checked = at

    def _consume_to(self, end: int) -> None:
        buf = self._buf
        if end == len(buf):
            buf.clear()
            self._checked -= end
            self._pos = 0
        elif end >= _COMPACT_MIN and end * 2 >= len(buf):
            del buf[:end]
            self._checked -= end
            self._pos = 0
        else:
            self._pos = end
