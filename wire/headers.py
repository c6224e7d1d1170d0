"""Request and response headers, and which header version each API version uses.

Request header v0 has no client id (only ControlledShutdown v0 uses it), v1
adds the client id, v2 adds tagged fields; the client id keeps its int16
length even in v2. Response header v1 adds tagged fields to v0. ApiVersions
responses always use header v0, so a client that does not yet know the
broker's versions can read the answer.
"""

from wire.api_keys import ApiKey
from wire.schema import F, message

REQUEST_HEADER = message(
    "RequestHeader",
    valid="0-2",
    flexible="2+",
    fields=[
        F("request_api_key", "int16", "0+"),
        F("request_api_version", "int16", "0+"),
        F("correlation_id", "int32", "0+"),
        F("client_id", "string", "1+", nullable="1+", flexible="none"),
    ],
)

RESPONSE_HEADER = message(
    "ResponseHeader",
    valid="0-1",
    flexible="1+",
    fields=[F("correlation_id", "int32", "0+")],
)


def request_header_version(api_key: int, api_version: int, flexible: bool) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if flexible else 0
