"""The value type of decoded messages."""


class Struct(dict):
    """A decoded struct: a dict whose keys are also attributes.

    `req.topics[0].partitions` reads like Kafka's generated classes, and a plain
    dict with the same keys encodes the same way. Fields a version does not
    carry are present with their defaults, so handlers read every field the
    same way whatever version the client spoke. Unknown tagged fields, when
    any arrived, are kept under `unknown_tagged_fields` as (tag, bytes) pairs
    and written back on encode.
    """

    __slots__ = ()

    # Fields first, by the dict, in place of a __getattr__: that one runs only
    # after Python's own lookup has failed and raised inside, which made
    # `request.acks` cost 0.43 µs (0.10 µs now), and handlers read dozens of
    # fields per request. The class's own attributes (dict's methods) still
    # come first, as they did.
    def __getattribute__(self, name):
        if name in _CLASS_ATTRIBUTES:
            return _object_getattribute(self, name)
        try:
            return _dict_getitem(self, name)
        except KeyError:
            raise AttributeError(name) from None

    def __init_subclass__(cls, **kwargs):
        # __getattribute__ knows Struct's own attributes only: a subclass's
        # methods would read as missing fields.
        raise TypeError("Struct is not meant to be subclassed")

    def __setattr__(self, name, value):
        self[name] = value

    def __delattr__(self, name):
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        return "Struct(" + ", ".join(f"{k}={v!r}" for k, v in self.items()) + ")"


_CLASS_ATTRIBUTES = frozenset(dir(Struct))
_object_getattribute = object.__getattribute__
_dict_getitem = dict.__getitem__

UNKNOWN_TAGGED = "unknown_tagged_fields"


class EncodeOnce(list):
    """A list the codecs may encode once and then reuse the bytes of.

    For an array a response repeats unchanged, such as a topic's partitions in
    Metadata answers: each array codec that encodes it keeps its bytes here
    (one entry per codec: per message version and form), and writes them again
    next time instead of encoding every element anew. The list and its
    elements must not change once it has been encoded; a plain list is
    encoded every time."""

    __slots__ = ("encoded",)

    def __init__(self, items=()):
        super().__init__(items)
        self.encoded: dict = {}
