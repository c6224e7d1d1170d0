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

A frame of `DIRECT_MIN` bytes or more that did not arrive whole can instead be
read straight into the bytearray it becomes (`receive_buffer`, `received`):
each byte is then copied once, by the read, instead of three times (into the
read's own bytes, into the buffer, out into the frame), which across 1,000
partitions was a tenth of a Produce's time. Its bytearray is allocated at its
full size when that starts, as Kafka allocates a request's buffer when its
size arrives.
"""

import struct

from wire.errors import DecodeError, EncodeError

__all__ = [
    "DIRECT_MIN",
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

# Frames at least this large that did not arrive whole are read straight into
# their own bytearray (see the module's docstring); smaller ones are copied,
# which costs less than the calls a direct read takes.
DIRECT_MIN = 64 * 1024


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
    bytearray(b'hi')
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
        # The frame being read straight into its own bytearray, and how many
        # of its bytes have come; every byte in _buf comes after it.
        self._frame: bytearray | None = None
        self._filled = 0

    @property
    def buffered(self) -> int:
        """Bytes held: a partial frame and complete frames not yet taken."""
        held = len(self._buf) - self._pos
        if self._frame is not None:
            held += _PREFIX_LEN + self._filled
        return held

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes from the stream; raises InvalidFrameSize/FrameTooLarge on a bad size."""
        if self._error is not None:
            raise self._error
        frame = self._frame
        if frame is not None and self._filled < len(frame):
            # Fed while a frame was being read directly: its bytes go to it.
            with memoryview(data) as view, view.cast("B") as octets:
                taken = min(len(frame) - self._filled, len(octets))
                frame[self._filled : self._filled + taken] = octets[:taken]
                self._filled += taken
                if taken == len(octets):
                    return
                self._buf += octets[taken:]
        else:
            self._buf += data
        self._check_sizes()

    def receive_buffer(self) -> memoryview | None:
        """A writable view of exactly the bytes still missing from a frame of
        `DIRECT_MIN` bytes or more that has begun to arrive, for the caller to
        read the stream into (then `received`); None when there is none (then
        `feed` what is read). The view must be released before the frame is
        taken. Never a view past the frame: what follows it is fed as usual."""
        frame = self._frame
        if frame is None:
            buf, pos = self._buf, self._pos
            held = len(buf) - pos
            if held < _PREFIX_LEN or self._error is not None:
                return None
            # Checked by feed: 0 <= size <= max_frame_size.
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < DIRECT_MIN or held >= _PREFIX_LEN + size:
                return None
            # A partial frame is the last thing buffered: it moves to its own
            # bytearray, and the buffer is empty until the frame is complete.
            frame = bytearray(size)
            body = held - _PREFIX_LEN
            with memoryview(buf) as view:
                frame[:body] = view[pos + _PREFIX_LEN :]
            buf.clear()
            self._pos = self._checked = 0
            self._frame, self._filled = frame, body
        elif self._filled == len(frame):
            return None  # complete: next_frame takes it
        return memoryview(frame)[self._filled :]

    def received(self, n: int) -> None:
        """`n` bytes were read into the view `receive_buffer` gave."""
        frame = self._frame
        if frame is None or not 0 <= n <= len(frame) - self._filled:
            raise ValueError(f"{n} bytes received into no frame or past its end")
        self._filled += n

    def next_frame(self) -> bytearray | None:
        """The next complete frame's body, or None until one is fully buffered.

        The frame is the caller's own mutable copy: a broker patches offsets
        into the record batches of a Produce request in place.

        Raises the stream's InvalidFrameSize/FrameTooLarge once the frames
        before the bad size have been taken.
        """
        frame = self._frame
        if frame is not None:
            if self._filled < len(frame):
                return None
            self._frame = None
            return frame
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
