"""Every API `wire` declares, by key.

One module per API key, each holding one declaration (see `wire.schema`).
"""

from wire.apis.add_offsets_to_txn import ADD_OFFSETS_TO_TXN
from wire.apis.add_partitions_to_txn import ADD_PARTITIONS_TO_TXN
from wire.apis.add_raft_voter import ADD_RAFT_VOTER
from wire.apis.allocate_producer_ids import ALLOCATE_PRODUCER_IDS
from wire.apis.alter_client_quotas import ALTER_CLIENT_QUOTAS
from wire.apis.alter_configs import ALTER_CONFIGS
from wire.apis.alter_partition import ALTER_PARTITION
from wire.apis.alter_partition_reassignments import ALTER_PARTITION_REASSIGNMENTS
from wire.apis.alter_replica_log_dirs import ALTER_REPLICA_LOG_DIRS
from wire.apis.alter_user_scram_credentials import ALTER_USER_SCRAM_CREDENTIALS
from wire.apis.api_versions import API_VERSIONS
from wire.apis.assign_replicas_to_dirs import ASSIGN_REPLICAS_TO_DIRS
from wire.apis.begin_quorum_epoch import BEGIN_QUORUM_EPOCH
from wire.apis.broker_heartbeat import BROKER_HEARTBEAT
from wire.apis.broker_registration import BROKER_REGISTRATION
from wire.apis.consumer_group_describe import CONSUMER_GROUP_DESCRIBE
from wire.apis.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from wire.apis.controlled_shutdown import CONTROLLED_SHUTDOWN
from wire.apis.controller_registration import CONTROLLER_REGISTRATION
from wire.apis.create_acls import CREATE_ACLS
from wire.apis.create_delegation_token import CREATE_DELEGATION_TOKEN
from wire.apis.create_partitions import CREATE_PARTITIONS
from wire.apis.create_topics import CREATE_TOPICS
from wire.apis.delete_acls import DELETE_ACLS
from wire.apis.delete_groups import DELETE_GROUPS
from wire.apis.delete_records import DELETE_RECORDS
from wire.apis.delete_share_group_state import DELETE_SHARE_GROUP_STATE
from wire.apis.delete_topics import DELETE_TOPICS
from wire.apis.describe_acls import DESCRIBE_ACLS
from wire.apis.describe_client_quotas import DESCRIBE_CLIENT_QUOTAS
from wire.apis.describe_cluster import DESCRIBE_CLUSTER
from wire.apis.describe_configs import DESCRIBE_CONFIGS
from wire.apis.describe_delegation_token import DESCRIBE_DELEGATION_TOKEN
from wire.apis.describe_groups import DESCRIBE_GROUPS
from wire.apis.describe_log_dirs import DESCRIBE_LOG_DIRS
from wire.apis.describe_producers import DESCRIBE_PRODUCERS
from wire.apis.describe_quorum import DESCRIBE_QUORUM
from wire.apis.describe_topic_partitions import DESCRIBE_TOPIC_PARTITIONS
from wire.apis.describe_transactions import DESCRIBE_TRANSACTIONS
from wire.apis.describe_user_scram_credentials import DESCRIBE_USER_SCRAM_CREDENTIALS
from wire.apis.elect_leaders import ELECT_LEADERS
from wire.apis.end_quorum_epoch import END_QUORUM_EPOCH
from wire.apis.end_txn import END_TXN
from wire.apis.envelope import ENVELOPE
from wire.apis.expire_delegation_token import EXPIRE_DELEGATION_TOKEN
from wire.apis.fetch import FETCH
from wire.apis.fetch_snapshot import FETCH_SNAPSHOT
from wire.apis.find_coordinator import FIND_COORDINATOR
from wire.apis.get_telemetry_subscriptions import GET_TELEMETRY_SUBSCRIPTIONS
from wire.apis.heartbeat import HEARTBEAT
from wire.apis.incremental_alter_configs import INCREMENTAL_ALTER_CONFIGS
from wire.apis.init_producer_id import INIT_PRODUCER_ID
from wire.apis.initialize_share_group_state import INITIALIZE_SHARE_GROUP_STATE
from wire.apis.join_group import JOIN_GROUP
from wire.apis.leader_and_isr import LEADER_AND_ISR
from wire.apis.leave_group import LEAVE_GROUP
from wire.apis.list_config_resources import LIST_CONFIG_RESOURCES
from wire.apis.list_groups import LIST_GROUPS
from wire.apis.list_offsets import LIST_OFFSETS
from wire.apis.list_partition_reassignments import LIST_PARTITION_REASSIGNMENTS
from wire.apis.list_transactions import LIST_TRANSACTIONS
from wire.apis.metadata import METADATA
from wire.apis.offset_commit import OFFSET_COMMIT
from wire.apis.offset_delete import OFFSET_DELETE
from wire.apis.offset_fetch import OFFSET_FETCH
from wire.apis.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from wire.apis.produce import PRODUCE
from wire.apis.push_telemetry import PUSH_TELEMETRY
from wire.apis.read_share_group_state import READ_SHARE_GROUP_STATE
from wire.apis.read_share_group_state_summary import READ_SHARE_GROUP_STATE_SUMMARY
from wire.apis.remove_raft_voter import REMOVE_RAFT_VOTER
from wire.apis.renew_delegation_token import RENEW_DELEGATION_TOKEN
from wire.apis.sasl_authenticate import SASL_AUTHENTICATE
from wire.apis.sasl_handshake import SASL_HANDSHAKE
from wire.apis.share_acknowledge import SHARE_ACKNOWLEDGE
from wire.apis.share_fetch import SHARE_FETCH
from wire.apis.share_group_describe import SHARE_GROUP_DESCRIBE
from wire.apis.share_group_heartbeat import SHARE_GROUP_HEARTBEAT
from wire.apis.stop_replica import STOP_REPLICA
from wire.apis.sync_group import SYNC_GROUP
from wire.apis.txn_offset_commit import TXN_OFFSET_COMMIT
from wire.apis.unregister_broker import UNREGISTER_BROKER
from wire.apis.update_features import UPDATE_FEATURES
from wire.apis.update_metadata import UPDATE_METADATA
from wire.apis.update_raft_voter import UPDATE_RAFT_VOTER
from wire.apis.vote import VOTE
from wire.apis.write_share_group_state import WRITE_SHARE_GROUP_STATE
from wire.apis.write_txn_markers import WRITE_TXN_MARKERS

ALL_APIS = (
    PRODUCE,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    LEADER_AND_ISR,
    STOP_REPLICA,
    UPDATE_METADATA,
    CONTROLLED_SHUTDOWN,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    SYNC_GROUP,
    DESCRIBE_GROUPS,
    LIST_GROUPS,
    SASL_HANDSHAKE,
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DELETE_RECORDS,
    INIT_PRODUCER_ID,
    OFFSET_FOR_LEADER_EPOCH,
    ADD_PARTITIONS_TO_TXN,
    ADD_OFFSETS_TO_TXN,
    END_TXN,
    WRITE_TXN_MARKERS,
    TXN_OFFSET_COMMIT,
    DESCRIBE_ACLS,
    CREATE_ACLS,
    DELETE_ACLS,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
    ALTER_REPLICA_LOG_DIRS,
    DESCRIBE_LOG_DIRS,
    SASL_AUTHENTICATE,
    CREATE_PARTITIONS,
    CREATE_DELEGATION_TOKEN,
    RENEW_DELEGATION_TOKEN,
    EXPIRE_DELEGATION_TOKEN,
    DESCRIBE_DELEGATION_TOKEN,
    DELETE_GROUPS,
    ELECT_LEADERS,
    INCREMENTAL_ALTER_CONFIGS,
    ALTER_PARTITION_REASSIGNMENTS,
    LIST_PARTITION_REASSIGNMENTS,
    OFFSET_DELETE,
    DESCRIBE_CLIENT_QUOTAS,
    ALTER_CLIENT_QUOTAS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
    ALTER_USER_SCRAM_CREDENTIALS,
    VOTE,
    BEGIN_QUORUM_EPOCH,
    END_QUORUM_EPOCH,
    DESCRIBE_QUORUM,
    ALTER_PARTITION,
    UPDATE_FEATURES,
    ENVELOPE,
    FETCH_SNAPSHOT,
    DESCRIBE_CLUSTER,
    DESCRIBE_PRODUCERS,
    BROKER_REGISTRATION,
    BROKER_HEARTBEAT,
    UNREGISTER_BROKER,
    DESCRIBE_TRANSACTIONS,
    LIST_TRANSACTIONS,
    ALLOCATE_PRODUCER_IDS,
    CONSUMER_GROUP_HEARTBEAT,
    CONSUMER_GROUP_DESCRIBE,
    CONTROLLER_REGISTRATION,
    GET_TELEMETRY_SUBSCRIPTIONS,
    PUSH_TELEMETRY,
    ASSIGN_REPLICAS_TO_DIRS,
    LIST_CONFIG_RESOURCES,
    DESCRIBE_TOPIC_PARTITIONS,
    SHARE_GROUP_HEARTBEAT,
    SHARE_GROUP_DESCRIBE,
    SHARE_FETCH,
    SHARE_ACKNOWLEDGE,
    ADD_RAFT_VOTER,
    REMOVE_RAFT_VOTER,
    UPDATE_RAFT_VOTER,
    INITIALIZE_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE,
    WRITE_SHARE_GROUP_STATE,
    DELETE_SHARE_GROUP_STATE,
    READ_SHARE_GROUP_STATE_SUMMARY,
)

APIS_BY_KEY = {a.key: a for a in ALL_APIS}
