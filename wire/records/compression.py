"""Compression codecs of record batch v2, with bounded decompression.

Codec ids are the low three bits of the batch attributes: 0 none, 1 gzip,
2 snappy, 3 lz4, 4 zstd. The formats are the ones Kafka's Java client writes:

- gzip: RFC 1952 members (Java's GZIPOutputStream); several members are read
  one after another.
- snappy: the xerial block framing of Java's SnappyOutputStream -- the magic
  b"\\x82SNAPPY\\x00", int32 version and compat (both 1), then blocks of an
  int32 length and one raw snappy block of at most 32 KiB of input. Input
  without the magic is read as a single raw snappy block (as SnappyInputStream
  and librdkafka do). Written framed, like Java.
- lz4: the LZ4 frame format with independent blocks (Java's
  KafkaLZ4BlockOutputStream and librdkafka); written with 64 KiB blocks and no
  checksums beyond the header checksum, byte for byte the frame Java writes.
- zstd: zstd frames (several frames and skippable frames are read).

`decompress` never produces more than `max_size` bytes and never allocates
much more than the output it is allowed to produce: before decoding it walks
the frame structure (snappy length preambles, lz4 and zstd block headers) to
get an upper bound of the output, and the decoder writes into a buffer of
min(bound, max_size + 1) bytes, so a decompression bomb stops at the limit.
gzip has no such structure; the gzip trailer's size is used as a hint and the
stdlib's streaming `zlib` (with `max_length`) settles anything the hint does
not cover. Every failure -- garbage, truncation, a checksum, too much output --
is a `DecodeError`.

The codecs themselves are cramjam's (Rust: flate2, snap, lz4, zstd), plus the
standard library's zlib for writing gzip and for the careful gzip path. LZ4
frames of independent blocks are read block by block, their header and
block xxHash32 checksums checked with `xxhash`; a single zstd frame is
decoded in one call by `zstandard`. Anything else goes to cramjam's decoders,
which also give every error.
"""

from __future__ import annotations

import struct
import threading
import zlib
from typing import Any

import cramjam
import xxhash
import zstandard

from wire.errors import DecodeError, EncodeError

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

# Kafka's defaults: gzip Deflater.DEFAULT_COMPRESSION (6), zstd 3.
GZIP_DEFAULT_LEVEL = 6
ZSTD_DEFAULT_LEVEL = 3

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024

LZ4_BLOCK_SIZE = 64 * 1024
# Magic, FLG 0x60 (version 1, independent blocks, no checksums, no content
# size), BD 0x40 (64 KiB blocks), header checksum (xxh32(FLG BD) >> 8 & 0xFF).
LZ4_FRAME_HEADER = b"\x04\x22\x4d\x18\x60\x40\x82"
LZ4_END_MARK = b"\x00\x00\x00\x00"

_LZ4_MAGIC = 0x184D2204
_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE_MASK = 0xFFFFFFF0
_LZ4_SKIPPABLE = 0x184D2A50  # also zstd's skippable frame magic range
_LZ4_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_ZSTD_BLOCK_MAX = 128 << 10
# The most output a format can make from n input bytes, so that a size a
# header merely claims never decides an allocation. Snappy: a 3-byte copy
# element writes at most 64 bytes. Deflate: at most 258 bytes per 2 bits.
_SNAPPY_MAX_RATIO = 22
_DEFLATE_MAX_RATIO = 1032

_U32LE = struct.Struct("<I")
_I32BE = struct.Struct(">i")


def _check_codec(codec: int, exc: type[Exception]) -> None:
    if codec not in CODEC_NAMES:
        raise exc(f"unknown compression codec {codec}")


# -- compress ----------------------------------------------------------------


def compress(codec: int, data, level: int | None = None) -> bytes:
    """Compress `data` (any bytes-like) with codec `codec`, as Kafka's Java
    client frames it. `level` is the codec's level (gzip 1-9, lz4 1-12 selects
    the high-compression mode, zstd -7..22); None picks Kafka's default.
    Snappy has no level. Raises EncodeError for an unknown codec or level."""
    _check_codec(codec, EncodeError)
    try:
        view = memoryview(data).cast("B")
    except TypeError as e:
        raise EncodeError(f"cannot compress {type(data).__name__}: not a byte buffer") from e
    try:
        if codec == NONE:
            return bytes(view)
        if codec == GZIP:
            lvl = GZIP_DEFAULT_LEVEL if level is None else level
            if not 0 <= lvl <= 9:
                raise EncodeError(f"gzip level {lvl} is outside 0..9")
            return zlib.compress(view, lvl, 31)
        if codec == SNAPPY:
            return _snappy_xerial_compress(view)
        if codec == LZ4:
            return _lz4_frame_compress(view, level)
        lvl = ZSTD_DEFAULT_LEVEL if level is None else level
        if not -7 <= lvl <= 22:
            raise EncodeError(f"zstd level {lvl} is outside -7..22")
        return bytes(cramjam.zstd.compress(view, level=lvl))
    except EncodeError:
        raise
    except Exception as e:  # cramjam.CompressionError, TypeError for a bad level
        raise EncodeError(f"{CODEC_NAMES[codec]} compression failed: {e}") from e


def _snappy_xerial_compress(view: memoryview) -> bytes:
    parts = [XERIAL_HEADER]
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK_SIZE]))
        parts.append(_I32BE.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _lz4_frame_compress(view: memoryview, level: int | None) -> bytes:
    kwargs: dict[str, Any]
    if level is None:
        kwargs = {}
    elif 1 <= level <= 12:
        kwargs = {"mode": "high_compression", "compression": level}
    else:
        raise EncodeError(f"lz4 level {level} is outside 1..12")
    parts = [LZ4_FRAME_HEADER]
    for start in range(0, len(view), LZ4_BLOCK_SIZE):
        chunk = view[start : start + LZ4_BLOCK_SIZE]
        block = cramjam.lz4.compress_block(chunk, store_size=False, **kwargs)
        if len(block) < len(chunk):
            parts.append(_U32LE.pack(len(block)))
            parts.append(bytes(block))
        else:  # incompressible: stored, flagged by the high bit
            parts.append(_U32LE.pack(len(chunk) | 0x80000000))
            parts.append(bytes(chunk))
    parts.append(LZ4_END_MARK)
    return b"".join(parts)


# -- decompress --------------------------------------------------------------


def decompress(codec: int, data, max_size: int) -> bytes:
    """Decompress `data` written with codec `codec`.

    Raises DecodeError for an unknown codec, input that is not a valid stream
    of that codec, or output larger than `max_size` bytes (found without
    producing much more than `max_size` bytes)."""
    out = decompress_buffer(codec, data, max_size)
    return out if type(out) is bytes else bytes(out)


def decompress_buffer(codec: int, data, max_size: int, *, reuse_buffer: bool = False):
    """As `decompress`, but returns whatever buffer the decoder filled (bytes,
    or a memoryview of a bytearray) to save a copy; for parsing in place.
    `reuse_buffer`: see `decompress_scratch`."""
    _check_codec(codec, DecodeError)
    if max_size < 0:
        raise ValueError("max_size must not be negative")
    try:
        view = memoryview(data).cast("B")
    except TypeError as e:
        raise DecodeError(f"cannot read compressed data from {type(data).__name__}") from e
    if codec == NONE:
        if len(view) > max_size:
            raise _too_big(NONE, max_size)
        return view
    if codec == GZIP:
        return _gzip_decompress(view, max_size)
    if codec == SNAPPY:
        return _snappy_decompress(view, max_size)
    if codec == LZ4:
        bound, frames = _lz4_frames(view)
        size = min(bound, max_size + 1)
        lz4_out = _scratch_buffer(size) if reuse_buffer else bytearray(size)
        decoded = _lz4_blocks_into(view, frames, lz4_out, max_size)
        if decoded is not None:
            return decoded
        return _decompress_into(codec, cramjam.lz4.decompress_into, view, bound, max_size, lz4_out)
    bound, content_size = _zstd_frames(view)
    size = min(bound, max_size + 1)
    decoded = _zstd_one_shot(view, content_size, size, max_size)
    if decoded is not None:
        return decoded
    out = _scratch_buffer(size) if reuse_buffer else None
    return _decompress_into(codec, cramjam.zstd.decompress_into, view, bound, max_size, out)


# Per thread: the buffer `decompress_scratch` decompresses into, kept between calls.
_scratch = threading.local()


def decompress_scratch(codec: int, data, max_size: int):
    """As `decompress_buffer`, but LZ4 and zstd decompress into a buffer this
    thread reuses: the result is valid only until the thread's next call.
    For a walk that keeps nothing of the records (produce validation).

    Why: an LZ4 frame does not say how big its output is, only the largest a
    block may be, and producers (franz-go, Go's lz4) write 4 MiB blocks; a
    fresh zeroed buffer of that bound for every 64 KiB batch cost six times
    the decompression itself."""
    return decompress_buffer(codec, data, max_size, reuse_buffer=True)


def _scratch_buffer(size: int) -> memoryview:
    buffer = getattr(_scratch, "buffer", None)
    if buffer is None or len(buffer) < size:
        buffer = _scratch.buffer = bytearray(size)
    return memoryview(buffer)[:size]


def _too_big(codec: int, max_size: int) -> DecodeError:
    return DecodeError(
        f"{CODEC_NAMES[codec]} data decompresses to more than the limit of {max_size} bytes"
    )


def _corrupt(codec: int, e: BaseException | str) -> DecodeError:
    return DecodeError(f"corrupt {CODEC_NAMES[codec]} data: {e}")


def _is_codec_failure(e: BaseException) -> bool:
    # cramjam raises DecompressionError; a Rust panic surfaces as pyo3's
    # PanicException, which derives from BaseException, not Exception.
    return isinstance(e, Exception) or type(e).__name__ == "PanicException"


def _decompress_into(codec: int, fn, view: memoryview, bound: int, max_size: int, out=None):
    """Run cramjam's `fn(input, output)` into a buffer of min(bound, max_size+1)
    bytes (`out`, or a new one). `bound` is a true upper bound of the output,
    so failing to fit in `bound` bytes is corruption; not fitting in
    max_size + 1 is too much."""
    size = min(bound, max_size + 1)
    if out is None:
        out = bytearray(size)
    try:
        n = fn(view, out)
    except BaseException as e:
        if not _is_codec_failure(e):
            raise
        if size > max_size and "whole buffer" in str(e):
            raise _too_big(codec, max_size) from e
        raise _corrupt(codec, e) from e
    if n > max_size:
        raise _too_big(codec, max_size)
    return memoryview(out)[:n]


def _gzip_decompress(view: memoryview, max_size: int):
    # Fast path: one member whose trailer (ISIZE, size mod 2**32) says how big
    # the output is; cramjam's decoder checks it along with the CRC-32.
    if len(view) >= 18:
        isize = _U32LE.unpack_from(view, len(view) - 4)[0]
        if isize <= min(max_size, _DEFLATE_MAX_RATIO * len(view)):
            out = bytearray(isize + 1)
            try:
                n = cramjam.gzip.decompress_into(view, out)
            except BaseException as e:
                if not _is_codec_failure(e):
                    raise
            else:
                if n <= isize:
                    return memoryview(out)[:n]
    return _gzip_decompress_zlib(view, max_size)


def _gzip_decompress_zlib(view: memoryview, max_size: int) -> bytes:
    """Member by member with zlib, never asking for more than the limit."""
    parts = []
    total = 0
    rest: memoryview | bytes = view
    while True:
        d = zlib.decompressobj(31)
        try:
            chunk = d.decompress(rest, max_size + 1 - total)
        except zlib.error as e:
            raise _corrupt(GZIP, e) from e
        total += len(chunk)
        parts.append(chunk)
        if total > max_size:
            raise _too_big(GZIP, max_size)
        if not d.eof:
            if d.unconsumed_tail:  # stopped by max_length: more output follows
                raise _too_big(GZIP, max_size)
            raise _corrupt(GZIP, "truncated gzip member")
        rest = d.unused_data
        if not rest:
            return b"".join(parts)


def _snappy_decompress(view: memoryview, max_size: int):
    if len(view) >= 16 and view[:8] == XERIAL_MAGIC:
        blocks = []
        pos = 16
        total = 0
        end = len(view)
        while pos < end:
            if end - pos < 4:
                raise _corrupt(SNAPPY, "truncated xerial block length")
            length = _I32BE.unpack_from(view, pos)[0]
            pos += 4
            if length < 0 or length > end - pos:
                raise _corrupt(SNAPPY, f"xerial block length {length} exceeds the data")
            block = view[pos : pos + length]
            pos += length
            size = _snappy_raw_len(block)
            total += size
            if total > max_size:
                raise _too_big(SNAPPY, max_size)
            _check_snappy_claim(block, size)
            blocks.append((block, size))
    else:
        size = _snappy_raw_len(view)
        if size > max_size:
            raise _too_big(SNAPPY, max_size)
        _check_snappy_claim(view, size)
        blocks = [(view, size)]
        total = size
    out = bytearray(total)
    mv = memoryview(out)
    pos = 0
    for block, size in blocks:
        try:
            n = cramjam.snappy.decompress_raw_into(block, mv[pos : pos + size])
        except BaseException as e:
            if not _is_codec_failure(e):
                raise
            raise _corrupt(SNAPPY, e) from e
        if n != size:
            raise _corrupt(SNAPPY, f"block declares {size} bytes but holds {n}")
        pos += size
    return mv


def _snappy_raw_len(block: memoryview) -> int:
    """The uncompressed length preamble of a raw snappy block (a uint32
    varint), read without trusting anything after it; the caller checks it
    against the limit and with `_check_snappy_claim`."""
    value = 0
    for i in range(min(5, len(block))):
        b = block[i]
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if value > 0xFFFFFFFF:
                break
            return value
    raise _corrupt(SNAPPY, "bad raw snappy length preamble")


def _check_snappy_claim(block: memoryview, size: int) -> None:
    """Refuse a length preamble the block is too short to make true."""
    if size > _SNAPPY_MAX_RATIO * len(block):
        raise _corrupt(
            SNAPPY, f"a snappy block of {len(block)} bytes cannot hold the {size} it declares"
        )


def _skippable(view: memoryview, pos: int, magic: int, codec: int) -> int | None:
    """Position after a skippable frame starting at pos, or None if the frame
    at pos is not skippable."""
    if magic & _SKIPPABLE_MASK != _LZ4_SKIPPABLE:
        return None
    if len(view) - pos < 8:
        raise _corrupt(codec, "truncated skippable frame")
    size = _U32LE.unpack_from(view, pos + 4)[0]
    if size > len(view) - pos - 8:
        raise _corrupt(codec, "skippable frame runs past the end")
    return pos + 8 + size


def _lz4_frames(view: memoryview) -> tuple[int, list[_Lz4Frame] | None]:
    """Walk LZ4 frames by their headers: an upper bound of the decompressed
    size, and the frames for `_lz4_blocks_into` (None when a frame's blocks
    are linked or need a dictionary: only the frame decoder reads those).
    A compressed block of c bytes makes at most min(block maximum,
    255 * c + 64) bytes -- LZ4 cannot expand beyond 255:1, since one byte of
    match length adds at most 255 bytes of output; a stored block its size."""
    end = len(view)
    if end == 0:
        raise _corrupt(LZ4, "empty input")
    pos = 0
    bound = 0
    frames: list[_Lz4Frame] | None = []
    while pos < end:
        if end - pos < 7:
            raise _corrupt(LZ4, "truncated frame header")
        magic = _U32LE.unpack_from(view, pos)[0]
        nxt = _skippable(view, pos, magic, LZ4)
        if nxt is not None:
            pos = nxt
            continue
        if magic != _LZ4_MAGIC:
            raise _corrupt(LZ4, f"bad frame magic 0x{magic:08x}")
        flg = view[pos + 4]
        bd = view[pos + 5]
        if flg >> 6 != 1 or flg & 0x02 or bd & 0x8F:
            raise _corrupt(LZ4, "bad frame descriptor")
        block_max = _LZ4_BLOCK_MAX.get(bd >> 4)
        if block_max is None:
            raise _corrupt(LZ4, "bad block maximum size")
        block_checksum = 4 if flg & 0x10 else 0
        descriptor = pos + 4
        pos += 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
        header_checksum = pos
        pos += 1
        blocks = []
        while True:
            if end - pos < 4:
                raise _corrupt(LZ4, "truncated block header")
            word = _U32LE.unpack_from(view, pos)[0]
            pos += 4
            if word == 0:  # end mark
                break
            size = word & 0x7FFFFFFF
            if size > block_max:
                raise _corrupt(LZ4, f"block of {size} bytes exceeds the maximum {block_max}")
            blocks.append((pos, size, word >> 31))
            pos += size + block_checksum
            if pos > end:
                raise _corrupt(LZ4, "block runs past the end")
            bound += size if word & 0x80000000 else min(block_max, 255 * size + 64)
        if flg & 0x04:  # the content checksum, read past as Kafka does
            pos += 4
            if pos > end:
                raise _corrupt(LZ4, "truncated content checksum")
        if flg & 0x21 != 0x20:  # linked blocks, or a dictionary
            frames = None
        elif frames is not None:
            frames.append((descriptor, header_checksum, block_max, blocks))
    return bound, frames


# One LZ4 frame, as `_lz4_frames` found it: the positions of its descriptor
# (FLG) and header checksum byte, its block maximum, its blocks (position of
# the data, size, stored).
_Lz4Frame = tuple[int, int, int, list[tuple[int, int, int]]]


def _lz4_blocks_into(view: memoryview, frames, out, max_size: int):
    """Decode frames of independent blocks one block at a time straight into
    `out`, checking the header checksum and the block checksums (when the
    frame has them); the decoded bytes, or None if anything is amiss -- then
    the frame decoder runs and gives the answer, so this path decides no
    error.

    The content checksum and the content size are read past, not checked:
    Kafka's reader (Lz4BlockInputStream, 4.3.1) checks neither, so a batch
    Kafka stores is stored here too, and read back by the cleaner and by
    Fetch. The batch's CRC already covers every compressed byte. Checking
    cost a pass of xxHash32 over every decompressed byte, 11 us a 64 KiB
    batch, and franz-go sets the content checksum on every frame.

    Why block by block: cramjam's frame decoder sets up a buffer of the
    frame's block maximum for every call. Go producers (franz-go) write 4 MiB
    blocks, and a 64 KiB batch cost 31 us to decode that way against 2 us
    block by block."""
    if frames is None:
        return None
    out = memoryview(out)
    limit = min(len(out), max_size)
    n = 0
    try:
        for descriptor, header_checksum, block_max, blocks in frames:
            flg = view[descriptor]
            hc = xxhash.xxh32_intdigest(view[descriptor:header_checksum]) >> 8 & 0xFF
            if view[header_checksum] != hc:
                return None
            for pos, size, stored in blocks:
                data = view[pos : pos + size]
                if (
                    flg & 0x10
                    and xxhash.xxh32_intdigest(data) != _U32LE.unpack_from(view, pos + size)[0]
                ):
                    return None
                if stored:
                    if n + size > limit:
                        return None
                    out[n : n + size] = data
                    n += size
                else:
                    room = min(block_max, limit - n)
                    n += cramjam.lz4.decompress_block_into(data, out[n : n + room], output_len=room)
    except BaseException as e:
        if not _is_codec_failure(e):
            raise
        return None
    return out[:n]


def _zstd_frames(view: memoryview) -> tuple[int, int | None]:
    """Walk zstd frames by their headers (RFC 8878): an upper bound of the
    decompressed size -- raw and RLE blocks state their size, a compressed
    block regenerates at most 128 KiB -- and, when the input is one frame
    and nothing else, the content size that frame declares (-1 if none;
    None for any other input)."""
    end = len(view)
    if end == 0:
        raise _corrupt(ZSTD, "empty input")
    pos = 0
    bound = 0
    frames = 0
    skippable = False  # input with a skippable frame goes to the streaming decoder
    content_size: int | None = None
    while pos < end:
        if end - pos < 5:
            raise _corrupt(ZSTD, "truncated frame header")
        magic = _U32LE.unpack_from(view, pos)[0]
        nxt = _skippable(view, pos, magic, ZSTD)
        if nxt is not None:
            pos = nxt
            skippable = True
            continue
        frames += 1
        if magic != _ZSTD_MAGIC:
            raise _corrupt(ZSTD, f"bad frame magic 0x{magic:08x}")
        fhd = view[pos + 4]
        if fhd & 0x08:
            raise _corrupt(ZSTD, "reserved bit set in frame header")
        single_segment = fhd & 0x20
        fcs_flag = fhd >> 6
        fcs_size = (1 if single_segment else 0) if fcs_flag == 0 else (2, 4, 8)[fcs_flag - 1]
        fcs_at = pos + 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 0x03]
        pos = fcs_at + fcs_size
        if pos > end:
            raise _corrupt(ZSTD, "truncated frame header")
        content_size = int.from_bytes(view[fcs_at:pos], "little") if fcs_size else -1
        if fcs_size == 2:
            content_size += 256
        while True:
            if end - pos < 3:
                raise _corrupt(ZSTD, "truncated block header")
            bh = view[pos] | view[pos + 1] << 8 | view[pos + 2] << 16
            pos += 3
            block_type = (bh >> 1) & 0x03
            size = bh >> 3
            if block_type != 2 and size > _ZSTD_BLOCK_MAX:
                raise _corrupt(ZSTD, f"block of {size} bytes exceeds the maximum block size")
            if block_type == 0:  # raw
                pos += size
                bound += size
            elif block_type == 1:  # RLE: one byte repeated `size` times
                pos += 1
                bound += size
            elif block_type == 2:  # compressed
                if size > _ZSTD_BLOCK_MAX:
                    raise _corrupt(ZSTD, f"compressed block of {size} bytes is too large")
                pos += size
                bound += _ZSTD_BLOCK_MAX
            else:
                raise _corrupt(ZSTD, "reserved block type")
            if pos > end:
                raise _corrupt(ZSTD, "block runs past the end")
            if bh & 1:  # last block
                break
        if fhd & 0x04:
            pos += 4
            if pos > end:
                raise _corrupt(ZSTD, "truncated content checksum")
    return bound, content_size if frames == 1 and not skippable else None


# Per thread: the zstd context of `_zstd_one_shot` (a context serves one
# thread at a time).
_zstd = threading.local()


def _zstd_one_shot(view: memoryview, content_size: int | None, size: int, max_size: int):
    """One frame decoded in one call into a buffer of the size it declares,
    or of `size` (at most max_size + 1) when it declares none; None if it is
    not one frame, declares more than max_size, or fails anyway -- then the
    streaming decoder runs and gives the answer, so this path decides no
    error. Why: cramjam's streaming decoder took 9.6 us for a 64 KiB batch,
    zstandard's one-shot decompression 4-5. A frame declaring no content
    (size 0) goes to the streaming decoder too: zstandard answers it with
    nothing without reading its blocks, where a corrupt size field must be
    the streaming decoder's error."""
    if content_size is None or content_size == 0 or content_size > max_size:
        return None
    decompressor = getattr(_zstd, "decompressor", None)
    if decompressor is None:
        decompressor = _zstd.decompressor = zstandard.ZstdDecompressor()
    try:
        out = decompressor.decompress(view, max_output_size=size)
    except zstandard.ZstdError:
        return None
    return out if len(out) <= max_size else None
