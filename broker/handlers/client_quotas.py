"""DescribeClientQuotas (key 48) v0-1: Gregor keeps no client quotas.

Kafka's tools ask for them beside other things (`kafka-configs --describe
--entity-type users` asks for a user's quotas before its SCRAM credentials),
so the filter is checked as Kafka checks it, with its errors and messages
(measured on Kafka 4.3.1), and a valid one matches nothing. Setting a quota
(AlterClientQuotas) is not served: Gregor would not enforce it.
"""

from __future__ import annotations

from broker.registry import handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

ENTITY_TYPES = ("user", "client-id", "ip")
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


class ClientQuotasHandler:
    @handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, "0-1")
    async def describe_client_quotas(self, ctx: RequestContext, request):
        refusal = _refusal(request.components)
        if refusal is not None:
            code, message = refusal
            return {
                "throttle_time_ms": 0,
                "error_code": code,
                "error_message": message,
                "entries": None,
            }
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "error_message": "",
            "entries": [],
        }


def _refusal(components) -> tuple[ErrorCode, str] | None:
    seen: set[str] = set()
    for c in components:
        if c.entity_type not in ENTITY_TYPES:
            return ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {c.entity_type}"
        if c.entity_type in seen:
            return (
                ErrorCode.INVALID_REQUEST,
                f"Entity type {c.entity_type} cannot appear more than once in the filter.",
            )
        seen.add(c.entity_type)
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
            return ErrorCode.INVALID_REQUEST, f"Unknown match type {c.match_type}"
        if c.match_type == MATCH_EXACT and c.match is None:
            return (
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            )
    if "ip" in seen and seen & {"user", "client-id"}:
        return (
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        )
    return None
