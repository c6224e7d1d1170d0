"""The byte streams the codecs read from and write to.

`Reader` walks a memoryview without copying: `read(n)` returns a slice of the
input, so a Produce request's record batches stay views of the frame they
arrived in. Every read checks the bytes that remain first, so a length or count
read from hostile input can never make the decoder allocate or loop past the
end of its input.

`Writer` collects output in a bytearray, except for large or opaque payloads
(`add_payload`), which it keeps as separate parts, so a transport can send
them with scatter-gather writes or `os.sendfile` instead of copying them.
"""

from __future__ import annotations

from wire.errors import DecodeError, EncodeError

# Payloads at least this large are kept as their own part rather than copied.
_INLINE_LIMIT = 8192


class Reader:
    """A bounds-checked cursor over a buffer, compatible with construct's streams."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, data, pos: int = 0, end: int | None = None):
        buf = data if isinstance(data, memoryview) else memoryview(data)
        if buf.ndim != 1 or buf.itemsize != 1:
            buf = buf.cast("B")
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def read(self, n: int) -> memoryview:
        p = self.pos
        e = p + n
        if n < 0 or e > self.end:
            raise DecodeError(f"need {n} bytes at position {p}, {self.end - p} remain")
        self.pos = e
        return self.buf[p:e]

    def sub(self, n: int) -> Reader:
        """A reader over the next n bytes; this reader skips past them."""
        p = self.pos
        e = p + n
        if n < 0 or e > self.end:
            raise DecodeError(f"need {n} bytes at position {p}, {self.end - p} remain")
        self.pos = e
        return Reader(self.buf, p, e)

    # construct's stream interface
    def tell(self) -> int:
        return self.pos

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence == 1:
            pos += self.pos
        elif whence == 2:
            pos += self.end
        if not 0 <= pos <= self.end:
            raise DecodeError(f"seek to {pos} outside 0..{self.end}")
        self.pos = pos
        return pos


class Writer:
    """Accumulates encoded output; large payloads stay as separate parts."""

    __slots__ = ("buf", "_parts", "_size")

    def __init__(self):
        self.buf = bytearray()
        self._parts: list = []
        self._size = 0  # bytes in self._parts

    def write(self, data) -> int:
        self.buf += data
        return len(data)

    def add_payload(self, payload) -> None:
        """Append `payload` without copying it when it is large or opaque.

        A payload is any bytes-like object, or an object with `__len__` that
        the transport knows how to send (a file range, for instance).
        """
        n = len(payload)
        if n < _INLINE_LIMIT:
            try:
                self.buf += payload
                return
            except TypeError:
                pass  # not bytes-like: keep it as its own part
        if self.buf:
            self._parts.append(bytes(self.buf))
            self._size += len(self.buf)
            self.buf = bytearray()
        self._parts.append(payload)
        self._size += n

    def __len__(self) -> int:
        return self._size + len(self.buf)

    def parts(self) -> list:
        """The output as a list of parts, in order, without copying payloads."""
        if self.buf:
            return [*self._parts, bytes(self.buf)]
        return list(self._parts)

    def getvalue(self) -> bytes:
        """The output as one bytes object (payloads must be bytes-like)."""
        if not self._parts:
            return bytes(self.buf)
        try:
            return b"".join([*self._parts, self.buf])
        except TypeError as e:
            raise EncodeError("output holds a payload that is not bytes-like") from e
