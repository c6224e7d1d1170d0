"""Which APIs the broker serves, at which versions, and by which handler.

Handler modules register themselves with `@handles(ApiKey.X, "0-4")`. The
ApiVersions answer is produced from this registry, so the broker can never
advertise a version that no handler serves (franz-go's kfake does the same).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from wire.protocol import api, response_codec
from wire.schema import Versions

HandlerFunc = Callable[[Any, Any], Awaitable[Any]]
# (request body, error code, message) -> response body
ErrorFunc = Callable[[Any, int, str | None], Any]


@dataclass(frozen=True)
class Handler:
    api_key: int
    versions: Versions
    func: HandlerFunc
    error_response: ErrorFunc | None


HANDLERS: dict[int, Handler] = {}


def handles(api_key: int, versions: str, error_response: ErrorFunc | None = None):
    """Register the decorated coroutine as the handler of `api_key` at `versions`."""
    v = Versions.parse(versions)
    declared = api(api_key).valid
    if not (declared.lo <= v.lo and v.hi <= declared.hi):
        raise ValueError(f"api {api_key}: serves {v}, but wire declares only {declared}")

    def register(func: HandlerFunc) -> HandlerFunc:
        if api_key in HANDLERS:
            raise ValueError(f"api {api_key} has two handlers")
        HANDLERS[api_key] = Handler(api_key, v, func, error_response)
        return func

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
