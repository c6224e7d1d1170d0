"""wire.framing: size-prefixed frames out of a byte stream, however it is chunked."""

import struct
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

import wire.framing
from wire.errors import DecodeError, EncodeError
from wire.framing import (
    DIRECT_MIN,
    FrameSplitter,
    FrameTooLarge,
    InvalidFrameSize,
    encode_frame,
    frame_size_prefix,
)

MAX = 1024 * 1024

FRAMES = [b"", b"a", b"hello", bytes(range(256)) * 3, b"\x00\x00\x00\x05"]
STREAM = b"".join(encode_frame(frame) for frame in FRAMES)


def prefix(size: int) -> bytes:
    return struct.pack(">i", size)


def drain(splitter: FrameSplitter) -> list[bytes]:
    frames = []
    while (frame := splitter.next_frame()) is not None:
        frames.append(bytes(frame))
    return frames


def split_fed(chunks, max_frame_size=MAX) -> tuple[list[bytes], FrameSplitter]:
    """Feed each chunk, draining after every feed, as a connection's reader does."""
    splitter = FrameSplitter(max_frame_size)
    frames = []
    for chunk in chunks:
        splitter.feed(chunk)
        frames.extend(drain(splitter))
    return frames, splitter


# --- encoding ---------------------------------------------------------------


def test_encode_frame_prefixes_the_payload_with_its_big_endian_size():
    assert encode_frame(b"hi") == b"\x00\x00\x00\x02hi"
    assert encode_frame(memoryview(b"abc")) == b"\x00\x00\x00\x03abc"
    assert encode_frame(bytearray()) == b"\x00\x00\x00\x00"


def test_frame_size_prefix_is_the_four_bytes_a_scatter_gather_writer_sends_first():
    assert frame_size_prefix(0) == b"\x00\x00\x00\x00"
    assert frame_size_prefix(0x01020304) == b"\x01\x02\x03\x04"
    assert frame_size_prefix(2**31 - 1) == b"\x7f\xff\xff\xff"


@pytest.mark.parametrize("size", [-1, 2**31])
def test_frame_size_prefix_refuses_a_size_an_int32_cannot_state(size):
    with pytest.raises(EncodeError):
        frame_size_prefix(size)


# --- splitting ----------------------------------------------------------------


def test_frames_fed_whole_come_out_in_order():
    frames, splitter = split_fed([STREAM])
    assert frames == FRAMES
    assert splitter.buffered == 0


def test_frames_fed_byte_by_byte_come_out_in_order():
    chunks = [STREAM[i : i + 1] for i in range(len(STREAM))]
    frames, splitter = split_fed(chunks)
    assert frames == FRAMES
    assert splitter.buffered == 0


def test_next_frame_is_none_until_the_last_byte_of_a_frame_arrives():
    splitter = FrameSplitter(MAX)
    data = encode_frame(b"abcdef")
    for i in range(len(data) - 1):
        splitter.feed(data[i : i + 1])
        assert splitter.next_frame() is None
        assert splitter.buffered == i + 1
    splitter.feed(data[-1:])
    assert splitter.next_frame() == b"abcdef"
    assert splitter.next_frame() is None


@given(
    frames=st.lists(st.binary(max_size=300), max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
)
def test_any_chunking_of_the_stream_yields_the_same_frames(frames, cuts):
    stream = b"".join(encode_frame(frame) for frame in frames)
    points = sorted({0, len(stream), *(cut % (len(stream) + 1) for cut in cuts)})
    chunks = [stream[a:b] for a, b in zip(points, points[1:], strict=False)]
    got, splitter = split_fed(chunks)
    assert got == frames
    assert splitter.buffered == 0


@given(
    frames=st.lists(st.binary(max_size=100), max_size=10),
    partial=st.binary(min_size=1, max_size=50).flatmap(
        lambda body: st.integers(min_value=1, max_value=len(body) + 3).map(
            lambda n: (prefix(len(body)) + body)[:n]
        )
    ),
    chunk_size=st.integers(min_value=1, max_value=64),
)
def test_a_partial_next_frame_stays_buffered_and_is_not_returned(frames, partial, chunk_size):
    stream = b"".join(encode_frame(frame) for frame in frames) + partial
    chunks = [stream[i : i + chunk_size] for i in range(0, len(stream), chunk_size)]
    got, splitter = split_fed(chunks)
    assert got == frames
    assert splitter.buffered == len(partial)
    assert splitter.next_frame() is None


def test_the_rest_of_a_partial_frame_completes_it():
    splitter = FrameSplitter(MAX)
    splitter.feed(encode_frame(b"one") + encode_frame(b"two")[:5])
    assert drain(splitter) == [b"one"]
    splitter.feed(encode_frame(b"two")[5:] + encode_frame(b"three"))
    assert drain(splitter) == [b"two", b"three"]


def test_zero_length_frames_are_empty_frames():
    frames, splitter = split_fed([encode_frame(b"") * 3])
    assert frames == [b"", b"", b""]
    assert splitter.buffered == 0


def test_many_frames_in_one_feed_all_come_out():
    payloads = [str(i).encode() * (i % 7) for i in range(5000)]
    frames, splitter = split_fed([b"".join(encode_frame(p) for p in payloads)])
    assert frames == payloads
    assert splitter.buffered == 0


def test_feed_accepts_bytearray_and_memoryview():
    splitter = FrameSplitter(MAX)
    splitter.feed(bytearray(encode_frame(b"ab")))
    splitter.feed(memoryview(encode_frame(b"cd")))
    assert drain(splitter) == [b"ab", b"cd"]


def test_returned_frames_stay_intact_when_more_data_arrives():
    splitter = FrameSplitter(MAX)
    splitter.feed(encode_frame(b"first") + encode_frame(b"sec"))
    first = splitter.next_frame()
    second = splitter.next_frame()
    splitter.feed(encode_frame(b"x" * 200_000) + encode_frame(b"y"))
    assert drain(splitter) == [b"x" * 200_000, b"y"]
    assert (first, second) == (b"first", b"sec")


def test_a_frame_of_exactly_max_frame_size_is_accepted():
    frames, _ = split_fed([encode_frame(b"x" * 100)], max_frame_size=100)
    assert frames == [b"x" * 100]


def test_a_large_frame_fed_in_64k_chunks_is_assembled_in_bounded_memory():
    size = 100 * 1024 * 1024
    chunk = 64 * 1024
    payload = bytes(range(256)) * (size // 256)
    splitter = FrameSplitter(size)
    tracemalloc.start()
    try:
        with memoryview(encode_frame(payload)) as data:
            baseline, _ = tracemalloc.get_traced_memory()
            starts = range(0, len(data), chunk)
            for at in starts[:-1]:
                splitter.feed(data[at : at + chunk])
                assert splitter.next_frame() is None
            splitter.feed(data[starts[-1] :])
            frame = splitter.next_frame()
            _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert frame == payload
    assert splitter.buffered == 0
    # The buffer (with its growth slack) plus the returned copy: never a multiple.
    assert peak - baseline < 2.5 * size


# --- large frames read straight into their own bytearray --------------------


def read_stream(stream: bytes, reads) -> list[bytes]:
    """Take `stream` as a connection does: each read of at most the next size
    in `reads` (cycled) goes into the frame `receive_buffer` offers, or is
    fed when it offers none; frames drained after every read."""
    splitter = FrameSplitter(MAX)
    frames, at, i = [], 0, 0
    while at < len(stream):
        want = reads[i % len(reads)]
        i += 1
        target = splitter.receive_buffer()
        if target is None:
            splitter.feed(stream[at : at + want])
            at += want
        else:
            with target:
                n = min(want, len(target))
                target[:n] = stream[at : at + n]
            splitter.received(n)
            at += n
        frames.extend(drain(splitter))
    assert splitter.buffered == 0
    return frames


@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=6),
    reads=st.lists(st.integers(1, 50), min_size=1, max_size=5),
)
def test_any_mix_of_direct_reads_and_feeds_yields_the_same_frames(sizes, reads):
    frames = [bytes([n]) * n for n in sizes]
    stream = b"".join(encode_frame(f) for f in frames)
    # Frames from 8 bytes on count as large here, so that short streams
    # explore every way a direct read can begin and end.
    original = wire.framing.DIRECT_MIN
    wire.framing.DIRECT_MIN = 8
    try:
        assert read_stream(stream, reads) == frames
    finally:
        wire.framing.DIRECT_MIN = original


def test_a_large_frame_is_read_into_the_bytearray_that_comes_out():
    payload = bytes(range(256)) * 1024
    stream = encode_frame(b"small") + encode_frame(payload) + encode_frame(b"after")
    splitter = FrameSplitter(MAX)
    splitter.feed(stream[:1000])
    assert splitter.next_frame() == b"small"
    target = splitter.receive_buffer()
    assert target is not None
    # Exactly the missing bytes: nothing after the frame can be read into it.
    missing = len(target)
    assert missing == len(payload) - (1000 - 9 - 4)
    frame_object = target.obj
    with target:
        target[:] = stream[1000 : 1000 + missing]
    splitter.received(missing)
    frame = splitter.next_frame()
    assert frame is frame_object
    assert frame == payload
    splitter.feed(stream[1000 + missing :])
    assert drain(splitter) == [b"after"]


def test_a_frame_below_direct_min_or_whole_is_fed_as_usual():
    splitter = FrameSplitter(MAX)
    splitter.feed(encode_frame(b"x" * (DIRECT_MIN - 1))[:100])
    assert splitter.receive_buffer() is None
    whole = FrameSplitter(MAX)
    whole.feed(encode_frame(b"y" * DIRECT_MIN))
    assert whole.receive_buffer() is None
    assert whole.next_frame() == b"y" * DIRECT_MIN


def test_bytes_fed_while_a_frame_is_read_directly_complete_it_first():
    payload = b"z" * DIRECT_MIN
    stream = encode_frame(payload) + encode_frame(b"next")
    splitter = FrameSplitter(MAX)
    splitter.feed(stream[:10])
    assert splitter.receive_buffer() is not None
    splitter.feed(stream[10:])
    assert drain(splitter) == [payload, b"next"]


def read_directly(payload: bytes) -> FrameSplitter:
    """A splitter fed the first 10 bytes of `payload`'s frame, the rest read
    into the buffer it offers, the frame not yet taken."""
    splitter = FrameSplitter(MAX)
    splitter.feed(encode_frame(payload)[:10])
    with splitter.receive_buffer() as target:
        target[:] = payload[6:]
        splitter.received(len(target))
    return splitter


def test_a_complete_frame_offers_no_buffer_to_read_into():
    payload = b"u" * DIRECT_MIN
    splitter = read_directly(payload)
    # A zero-length buffer would read as the end of the stream.
    assert splitter.receive_buffer() is None
    assert splitter.next_frame() == payload


def test_received_refuses_more_than_the_frame_misses():
    splitter = FrameSplitter(MAX)
    splitter.feed(encode_frame(b"w" * DIRECT_MIN)[:10])
    with pytest.raises(ValueError):
        splitter.received(1)  # no receive_buffer taken yet
    with splitter.receive_buffer() as target:
        missing = len(target)
    with pytest.raises(ValueError):
        splitter.received(missing + 1)


def test_a_bad_size_after_a_directly_read_frame_raises_once_it_is_taken():
    payload = b"v" * DIRECT_MIN
    splitter = read_directly(payload)
    with pytest.raises(InvalidFrameSize):
        splitter.feed(prefix(-1))
    assert splitter.next_frame() == payload
    with pytest.raises(InvalidFrameSize):
        splitter.next_frame()


# --- hostile sizes --------------------------------------------------------------


def test_a_negative_size_raises_invalid_frame_size_carrying_the_size():
    splitter = FrameSplitter(MAX)
    with pytest.raises(InvalidFrameSize) as raised:
        splitter.feed(prefix(-1))
    assert raised.value.size == -1
    assert not isinstance(raised.value, FrameTooLarge)
    assert isinstance(raised.value, DecodeError)


def test_an_oversized_size_raises_frame_too_large_carrying_size_and_limit():
    splitter = FrameSplitter(MAX)
    with pytest.raises(FrameTooLarge) as raised:
        splitter.feed(prefix(MAX + 1))
    assert raised.value.size == MAX + 1
    assert raised.value.max_frame_size == MAX
    assert isinstance(raised.value, DecodeError)


@pytest.mark.parametrize("size", [-(2**31), -1, MAX + 1, 2**31 - 1])
def test_a_bad_size_raises_before_its_body_is_buffered(size):
    splitter = FrameSplitter(MAX)
    with pytest.raises(InvalidFrameSize):
        splitter.feed(prefix(size) + b"\x00" * 100_000)
    assert splitter.buffered == 0


def test_a_bad_size_split_across_feeds_raises_when_its_fourth_byte_arrives():
    splitter = FrameSplitter(MAX)
    bad = prefix(2**31 - 1)
    for i in range(3):
        splitter.feed(bad[i : i + 1])
        assert splitter.next_frame() is None
    with pytest.raises(FrameTooLarge):
        splitter.feed(bad[3:])
    assert splitter.buffered == 0


def test_frames_before_a_bad_size_can_still_be_taken_then_it_raises_again():
    splitter = FrameSplitter(MAX)
    with pytest.raises(FrameTooLarge):
        splitter.feed(encode_frame(b"one") + encode_frame(b"two") + prefix(MAX + 1) + b"junk")
    assert splitter.buffered == len(encode_frame(b"one") + encode_frame(b"two"))
    assert splitter.next_frame() == b"one"
    assert splitter.next_frame() == b"two"
    with pytest.raises(FrameTooLarge):
        splitter.next_frame()


def test_after_a_bad_size_every_feed_raises_and_buffers_nothing():
    splitter = FrameSplitter(MAX)
    with pytest.raises(InvalidFrameSize):
        splitter.feed(prefix(-5))
    with pytest.raises(InvalidFrameSize):
        splitter.feed(encode_frame(b"fine"))
    assert splitter.buffered == 0


@pytest.mark.parametrize("limit", [-1, 2**31])
def test_max_frame_size_must_fit_an_int32(limit):
    with pytest.raises(ValueError):
        FrameSplitter(limit)
