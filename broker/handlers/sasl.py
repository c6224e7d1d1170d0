"""SaslHandshake (key 17) v0-1 and SaslAuthenticate (key 36) v0-2, once no
authentication is due.

On a SASL listener the connection's authenticator takes both until the
client has logged in (broker/security/sasl.py). What reaches these handlers
comes after that, or on a PLAINTEXT listener, and Kafka answers both with
ILLEGAL_SASL_STATE and keeps the connection (re-authentication, KIP-368, is
not served: `connections.max.reauth.ms` is 0).
"""

from __future__ import annotations

from broker.registry import handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode


class SaslHandler:
    @handles(ApiKey.SASL_HANDSHAKE, "0-1")
    async def sasl_handshake(self, ctx: RequestContext, request):
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}

    @handles(ApiKey.SASL_AUTHENTICATE, "0-2")
    async def sasl_authenticate(self, ctx: RequestContext, request):
        return {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }
