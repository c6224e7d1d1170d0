"""wire.error_codes against Kafka's Errors.java and kafka-python's table."""

import pytest

from wire.error_codes import ErrorCode, error_name

# Verified against org.apache.kafka.common.protocol.Errors (Kafka 4.x) and the
# class hierarchy of each code's exception (retriable = extends RetriableException).
WELL_KNOWN = [
    (-1, "UNKNOWN_SERVER_ERROR", False),
    (0, "NONE", False),
    (1, "OFFSET_OUT_OF_RANGE", False),
    (2, "CORRUPT_MESSAGE", True),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
    (6, "NOT_LEADER_OR_FOLLOWER", True),
    (7, "REQUEST_TIMED_OUT", True),
    (10, "MESSAGE_TOO_LARGE", False),
    (15, "COORDINATOR_NOT_AVAILABLE", True),
    (16, "NOT_COORDINATOR", True),
    (17, "INVALID_TOPIC_EXCEPTION", False),
    (19, "NOT_ENOUGH_REPLICAS", True),
    (22, "ILLEGAL_GENERATION", False),
    (25, "UNKNOWN_MEMBER_ID", False),
    (27, "REBALANCE_IN_PROGRESS", False),
    (35, "UNSUPPORTED_VERSION", False),
    (36, "TOPIC_ALREADY_EXISTS", False),
    (41, "NOT_CONTROLLER", True),
    (42, "INVALID_REQUEST", False),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False),
    (47, "INVALID_PRODUCER_EPOCH", False),
    (51, "CONCURRENT_TRANSACTIONS", True),
    (56, "KAFKA_STORAGE_ERROR", True),
    (58, "SASL_AUTHENTICATION_FAILED", False),
    (74, "FENCED_LEADER_EPOCH", True),
    (79, "MEMBER_ID_REQUIRED", False),
    (82, "FENCED_INSTANCE_ID", False),
    (87, "INVALID_RECORD", False),
    (89, "THROTTLING_QUOTA_EXCEEDED", True),
    (90, "PRODUCER_FENCED", False),
    (100, "UNKNOWN_TOPIC_ID", True),
    (110, "FENCED_MEMBER_EPOCH", False),
    (113, "STALE_MEMBER_EPOCH", False),
    (120, "TRANSACTION_ABORTABLE", False),
    (129, "REBOOTSTRAP_REQUIRED", False),
    (133, "SHARE_SESSION_LIMIT_REACHED", True),
]

# Every retriable code in Kafka 4.x: the exceptions under RetriableException
# (directly, or through InvalidMetadataException / RefreshRetriableException).
# fmt: off
RETRIABLE_CODES = {
    2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75,
    78, 80, 83, 84, 88, 89, 100, 103, 106, 122, 123, 133,
}
# fmt: on

# Codes kafka-python 3.x names differently: it keeps older Kafka names.
KAFKA_PYTHON_NAMES = {
    -1: "UNKNOWN",
    0: "NO_ERROR",
    6: "NOT_LEADER_FOR_PARTITION",  # renamed in Kafka 2.6 (KIP-392)
    10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC",
    39: "INVALID_REPLICATION_ASSIGNMENT",
}

# Codes whose retriable flag deliberately differs from kafka-python's: Java's
# CorruptRecordException extends RetriableException; kafka-python's
# CorruptRecordError does not. We follow Java, which defines the protocol.
KAFKA_PYTHON_RETRIABLE_DIFFERS = {2}


@pytest.mark.parametrize(("code", "name", "retriable"), WELL_KNOWN)
def test_well_known_code_has_kafkas_name_and_retriable_flag(code, name, retriable):
    member = ErrorCode(code)
    assert member.name == name
    assert member.retriable is retriable
    assert ErrorCode[name] == code


def test_codes_are_unique():
    assert len(ErrorCode.__members__) == len(list(ErrorCode))


def test_codes_run_without_gaps_from_minus_one_to_the_highest():
    codes = sorted(int(member) for member in ErrorCode)
    assert codes == list(range(-1, codes[-1] + 1))
    assert codes[-1] >= 133


def test_retriable_codes_are_exactly_those_of_retriable_exceptions():
    assert {int(member) for member in ErrorCode if member.retriable} == RETRIABLE_CODES


def test_every_code_but_none_has_a_default_message():
    for member in ErrorCode:
        if member is ErrorCode.NONE:
            assert member.message is None
        else:
            assert isinstance(member.message, str) and member.message.strip(), member


def test_messages_are_kafkas_default_messages():
    assert ErrorCode.UNSUPPORTED_VERSION.message == "The version of API is not supported."
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.message == (
        "For requests intended only for the leader, this error indicates that the broker is "
        "not the current leader. For requests intended for any replica, this error indicates "
        "that the broker is not a replica of the topic partition."
    )
    assert ErrorCode.INVALID_RECORD.message == (
        "This record has failed the validation on broker and hence will be rejected."
    )


def test_error_code_is_an_int_usable_on_the_wire():
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.to_bytes(2, "big", signed=True) == b"\x00\x06"
    assert ErrorCode(-1) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_unknown_code_is_not_a_member():
    with pytest.raises(ValueError):
        ErrorCode(9999)


def test_error_name_of_a_known_code_is_its_kafka_name():
    assert error_name(6) == "NOT_LEADER_OR_FOLLOWER"
    assert error_name(ErrorCode.UNSUPPORTED_VERSION) == "UNSUPPORTED_VERSION"
    assert error_name(-1) == "UNKNOWN_SERVER_ERROR"


def test_error_name_of_an_unknown_code_names_the_number():
    assert error_name(9999) == "UNKNOWN_ERROR_CODE(9999)"
    assert error_name(-42) == "UNKNOWN_ERROR_CODE(-42)"


def _kafka_python_errors():
    errors = pytest.importorskip("kafka.errors")
    # kafka_errors also maps None to the abstract AuthorizationError; skip it.
    return {code: cls for code, cls in errors.kafka_errors.items() if isinstance(code, int)}


def test_every_code_kafka_python_knows_has_the_same_number_name_and_retriable_flag():
    known = _kafka_python_errors()
    assert len(known) > 100
    for code, cls in known.items():
        ours = ErrorCode(code)
        assert KAFKA_PYTHON_NAMES.get(code, ours.name) == cls.message, code
        expected_retriable = cls.retriable != (code in KAFKA_PYTHON_RETRIABLE_DIFFERS)
        assert ours.retriable is expected_retriable, code
