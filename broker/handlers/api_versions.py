"""ApiVersions (key 18), versions 0-4: what the broker serves, from the registry,
and (v3+) the features it supports and has finalized.

The one feature Gregor advertises is Kafka's `transaction.version`: at level 2
Kafka 4.x clients use transactions v2 (KIP-890 part 2: Produce v12 adds the
partition to the transaction, EndTxn v5 bumps the epoch); below it, v1. A
client only takes finalized features from a response whose epoch is newer
than the last it saw, so the epoch is never -1 (Kafka's is the metadata
offset the features were read at).
"""

import re

from broker.registry import advertised_versions, handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# Kafka's rule for client software names and versions (KIP-511).
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

TRANSACTION_VERSION = "transaction.version"
MAX_TRANSACTION_VERSION = 2
FEATURES_EPOCH = 1


class ApiVersionsHandler:
    def __init__(self, transaction_version: int):
        self.supported = [
            {"name": TRANSACTION_VERSION, "min_version": 0, "max_version": MAX_TRANSACTION_VERSION}
        ]
        # Kafka lists no feature finalized at level 0.
        self.finalized = [
            {
                "name": TRANSACTION_VERSION,
                "max_version_level": transaction_version,
                "min_version_level": transaction_version,
            }
        ][: 1 if transaction_version > 0 else 0]

    @handles(ApiKey.API_VERSIONS, "0-4")
    async def api_versions(self, ctx: RequestContext, request):
        response = {
            "api_keys": advertised_versions(),
            "throttle_time_ms": 0,
            "supported_features": self.supported,
            "finalized_features_epoch": FEATURES_EPOCH,
            "finalized_features": self.finalized,
        }
        if ctx.api_version >= 3 and not (
            _SOFTWARE.fullmatch(request.client_software_name)
            and _SOFTWARE.fullmatch(request.client_software_version)
        ):
            response["error_code"] = ErrorCode.INVALID_REQUEST
        return response
