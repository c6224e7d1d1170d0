"""Which APIs the broker serves, at which versions, and by which handler.

Handlers are methods of one class per API family, each class receiving in its
constructor the parts of the broker it uses. A method registers itself with
`@handles(ApiKey.X, "0-4")`; the ApiVersions answer and the README's table
come from these registrations, so the broker can never advertise a version
that no handler serves (franz-go's kfake does the same).

`RequestDispatcher` binds the registered methods to the handler objects the
broker built, and is what a connection calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from wire.protocol import api, response_codec
from wire.schema import Versions

# (handler object, request context, request body) -> response body (None: no answer)
HandlerMethod = Callable[[Any, Any, Any], Awaitable[Any]]
# (request body, error code, message) -> response body
ErrorFunc = Callable[[Any, int, str | None], Any]


@dataclass(frozen=True)
class Handler:
    api_key: int
    versions: Versions
    method: HandlerMethod
    error_response: ErrorFunc | None


HANDLERS: dict[int, Handler] = {}


def handles(api_key: int, versions: str, error_response: ErrorFunc | None = None):
    """Register the decorated handler method as the handler of `api_key` at `versions`."""
    v = Versions.parse(versions)
    declared = api(api_key).valid
    if not (declared.lo <= v.lo and v.hi <= declared.hi):
        raise ValueError(f"api {api_key}: serves {v}, but wire declares only {declared}")

    def register(method: HandlerMethod) -> HandlerMethod:
        if api_key in HANDLERS:
            raise ValueError(f"api {api_key} has two handlers")
        HANDLERS[api_key] = Handler(api_key, v, method, error_response)
        return method

    return register


def advertised_versions() -> list[dict]:
    """The api_keys entries of an ApiVersions response."""
    return [
        {"api_key": h.api_key, "min_version": h.versions.lo, "max_version": h.versions.hi}
        for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
    ]


def generic_error_response(api_key: int, version: int, code: int):
    """A response that carries `code` in its top-level error_code, if it has one."""
    body = response_codec(api_key, version).default()
    if "error_code" not in body:
        return None
    body["error_code"] = code
    return body


@dataclass(frozen=True)
class BoundHandler:
    spec: Handler
    call: Callable[[Any, Any], Awaitable[Any]]


class RequestDispatcher:
    """Every registered handler method, bound to the object that serves it."""

    def __init__(self, handler_objects: Iterable[object]):
        owners: dict[Callable, object] = {}
        for obj in handler_objects:
            for cls in type(obj).__mro__:
                for attr in vars(cls).values():
                    if callable(attr):
                        owners.setdefault(attr, obj)
        self.handlers: dict[int, BoundHandler] = {}
        missing = []
        for key, spec in HANDLERS.items():
            owner = owners.get(spec.method)
            if owner is None:
                missing.append(spec.method.__qualname__)
                continue
            self.handlers[key] = BoundHandler(spec, spec.method.__get__(owner))
        if missing:
            raise ValueError(f"no handler object serves {', '.join(sorted(missing))}")

    def get(self, api_key: int) -> BoundHandler | None:
        return self.handlers.get(api_key)
