"""ApiVersions (key 18), versions 0-4: what the broker serves, from the registry."""

import re

from broker.registry import advertised_versions, handles
from broker.request_context import RequestContext
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

# Kafka's rule for client software names and versions (KIP-511).
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


class ApiVersionsHandler:
    @handles(ApiKey.API_VERSIONS, "0-4")
    async def api_versions(self, ctx: RequestContext, request):
        response = {"api_keys": advertised_versions(), "throttle_time_ms": 0}
        if ctx.api_version >= 3 and not (
            _SOFTWARE.fullmatch(request.client_software_name)
            and _SOFTWARE.fullmatch(request.client_software_version)
        ):
            response["error_code"] = ErrorCode.INVALID_REQUEST
        return response
