"""DescribeUserScramCredentials (key 50) v0 and AlterUserScramCredentials (key 51) v0.

SCRAM credentials live in the cluster metadata as user configs, one value
per mechanism (broker/security/scram.py), so every broker sees a change as
soon as the controller has it: a login right after an alteration's answer
uses it, as on Kafka. The checks and messages are Kafka's
(ScramControlManager), measured on Kafka 4.3.1: a user at most once per
alteration request, across deletions and upsertions and mechanisms
(DUPLICATE_RESOURCE); a user name (UNACCEPTABLE_CREDENTIAL); a known mechanism
(UNSUPPORTED_SASL_MECHANISM); 4096 to 16384 iterations (UNACCEPTABLE_CREDENTIAL);
only existing credentials deleted (RESOURCE_NOT_FOUND). Every accepted change
is made at once, and none for a user refused. Results come user by user in the order of Kafka's
HashMaps: deletions, upsertions, then refusals.
"""

from __future__ import annotations

from broker.controller.api import Controller
from broker.metadata.publisher import MetadataCache
from broker.registry import handles
from broker.request_context import RequestContext
from broker.security.sasl import java_hash_order
from broker.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramMechanism,
)
from wire.api_keys import ApiKey
from wire.error_codes import ErrorCode

_TWICE = "A user credential cannot be altered twice in the same request"


def _credential_infos(configs) -> list[dict]:
    infos = []
    for mechanism in ScramMechanism:
        value = configs.get(mechanism.mechanism_name)
        credential = None if value is None else ScramCredential.from_config_value(value)
        if credential is not None:
            infos.append({"mechanism": mechanism.type_code, "iterations": credential.iterations})
    return infos


class ScramCredentialsHandler:
    def __init__(self, metadata: MetadataCache, controller: Controller):
        self.metadata = metadata
        self.controller = controller

    @handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "0")
    async def describe_user_scram_credentials(self, ctx: RequestContext, request):
        image = self.metadata.image
        if not request.users:
            # None or empty: every user that has a credential.
            wanted = [u for u, configs in image.user_configs.items() if _credential_infos(configs)]
            twice: set[str] = set()
        else:
            names = [u.name for u in request.users]
            wanted = list(dict.fromkeys(names))
            twice = {n for n in wanted if names.count(n) > 1}
        results = []
        for user in java_hash_order(wanted):
            # Kafka's success message is "" here (and null in alterations).
            result = {"user": user, "error_code": ErrorCode.NONE, "error_message": ""}
            infos = _credential_infos(image.user_config(user))
            if user in twice:
                result["error_code"] = ErrorCode.DUPLICATE_RESOURCE
                result["error_message"] = (
                    "Cannot describe SCRAM credentials for the same user twice in a single "
                    f"request: {user}"
                )
                infos = []
            elif not infos:
                result["error_code"] = ErrorCode.RESOURCE_NOT_FOUND
                result["error_message"] = (
                    f"Attempt to describe a user credential that does not exist: {user}"
                )
            results.append({**result, "credential_infos": infos})
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "error_message": "",
            "results": results,
        }

    @handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "0")
    async def alter_user_scram_credentials(self, ctx: RequestContext, request):
        image = self.metadata.image
        deletions: dict[str, ScramMechanism] = {}
        upsertions: dict[str, tuple[ScramMechanism, ScramCredential]] = {}
        refused: dict[str, tuple[ErrorCode, str | None]] = {}
        for d in request.deletions:
            if d.name in refused:
                continue
            if deletions.pop(d.name, None) is not None:
                refused[d.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
                continue
            mechanism, error = _checked(d.name, d.mechanism)
            if error is None:
                assert mechanism is not None
                if mechanism.mechanism_name not in image.user_config(d.name):
                    error = (
                        ErrorCode.RESOURCE_NOT_FOUND,
                        "Attempt to delete a user credential that does not exist",
                    )
            if error is not None:
                refused[d.name] = error
            else:
                assert mechanism is not None
                deletions[d.name] = mechanism
        for u in request.upsertions:
            if u.name in refused:
                continue
            if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
                refused[u.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
                continue
            mechanism, error = _checked(u.name, u.mechanism)
            if error is None and not u.salted_password:
                # Kafka's HMAC refuses an empty key: the user's change fails
                # as an unexpected error, with no message.
                error = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
            elif error is None and u.iterations < MIN_ITERATIONS:
                error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif error is None and u.iterations > MAX_ITERATIONS:
                error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            if error is not None:
                refused[u.name] = error
                continue
            assert mechanism is not None
            credential = ScramCredential.from_salted_password(
                mechanism, bytes(u.salt), bytes(u.salted_password), u.iterations
            )
            upsertions[u.name] = (mechanism, credential)
        changes: dict[str, dict[str, str | None]] = {
            user: {mechanism.mechanism_name: None} for user, mechanism in deletions.items()
        }
        for user, (mechanism, credential) in upsertions.items():
            changes[user] = {mechanism.mechanism_name: credential.to_config_value()}
        if changes:
            # Every accepted change at once, as Kafka's controller makes them.
            await self.controller.alter_user_configs(changes)
        results = [
            {"user": user, "error_code": ErrorCode.NONE, "error_message": None}
            for group in (deletions, upsertions)
            for user in java_hash_order(group)
        ]
        results += [
            {"user": user, "error_code": refused[user][0], "error_message": refused[user][1]}
            for user in java_hash_order(refused)
        ]
        return {"throttle_time_ms": 0, "results": results}


def _checked(
    user: str, mechanism_type: int
) -> tuple[ScramMechanism | None, tuple[ErrorCode, str | None] | None]:
    if not user:
        return None, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    mechanism = ScramMechanism.by_type(mechanism_type)
    if mechanism is None:
        return None, (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return mechanism, None
