"""The Schedules table and the two queues, with every default and with every prop changed."""

from __future__ import annotations

from aws_cdk.assertions import Match

from cdk_delayed_scheduler._contract import contract
from construct_helpers import resources_of
from construct_stacks import CUSTOM_PROPS, environment, function_props, logical_id


def test_table_defaults(stacks):
    b = stacks["defaults"]
    b.template.resource_count_is("AWS::DynamoDB::Table", 1)
    b.template.has_resource("AWS::DynamoDB::Table", {
        "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
        "Properties": {
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                     {"AttributeName": "sk", "AttributeType": "S"},
                                     {"AttributeName": "group", "AttributeType": "S"},
                                     {"AttributeName": "groupSk", "AttributeType": "S"}],
            "GlobalSecondaryIndexes": [{"IndexName": "ByGroup", "Projection": {"ProjectionType": "KEYS_ONLY"},
                                        "KeySchema": [{"AttributeName": "group", "KeyType": "HASH"},
                                                      {"AttributeName": "groupSk", "KeyType": "RANGE"}]}],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "TimeToLiveSpecification": {"AttributeName": "expiresAt", "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": False},  # AWS owned key
        },
    })


def test_a_customer_managed_key_and_provisioned_capacity_shape_the_table(stacks):
    """The key turns the table's SSE to KMS with that key; provisioned billing leaves BillingMode to
    CloudFormation's default and sets the throughput; the removal policy reaches the table."""
    b = stacks["custom"]
    key_id = logical_id(b, b.extra["key"])
    (table_id, table), = resources_of(b.json, "AWS::DynamoDB::Table").items()
    assert table_id.startswith("TimersTable")
    props = table["Properties"]
    assert props["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS",
                                         "KMSMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]}}
    assert "BillingMode" not in props
    assert props["ProvisionedThroughput"] == {"ReadCapacityUnits": CUSTOM_PROPS["read_capacity"],
                                              "WriteCapacityUnits": CUSTOM_PROPS["write_capacity"]}
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Delete", "Delete")
    # the runtime finds the table it writes to
    assert environment(b, "ApiFunction")[contract.ENV.table_name] == {"Ref": table_id}


def test_queues_defaults(stacks):
    b = stacks["defaults"]
    s = b.scheduler
    dlq_id, delayer_id = logical_id(b, s.dead_letter_queue), logical_id(b, s.delayer_queue)
    dlq = b.json["Resources"][dlq_id]["Properties"]
    delayer = b.json["Resources"][delayer_id]["Properties"]
    assert dlq == {"MessageRetentionPeriod": 14 * 86400, "SqsManagedSseEnabled": True}
    assert delayer["SqsManagedSseEnabled"] is True
    assert delayer["VisibilityTimeout"] == (
        contract.VISIBILITY_TIMEOUT_FACTOR * function_props(b, "DispatcherFunction")["Timeout"])
    assert delayer["MessageRetentionPeriod"] == contract.DELAYER_RETENTION_SECONDS
    assert delayer["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
                                        "maxReceiveCount": contract.MAX_RECEIVE_COUNT.default}
    assert "FifoQueue" not in delayer  # standard: per-message delays
    # TLS enforced on both queues
    for queue_id in (dlq_id, delayer_id):
        b.template.has_resource_properties("AWS::SQS::QueuePolicy", {
            "Queues": [{"Ref": queue_id}],
            "PolicyDocument": {"Statement": Match.array_with([Match.object_like({
                "Effect": "Deny", "Action": "sqs:*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            })])},
        })


def test_the_delayer_queue_follows_the_dispatcher_and_the_receive_count(stacks):
    """The visibility timeout is VISIBILITY_TIMEOUT_FACTOR x the dispatcher's timeout (so a failed
    delivery is retried after it), the redrive's receive count is the one the runtime is told, and
    both queues use the customer managed key."""
    b = stacks["custom"]
    key_arn = {"Fn::GetAtt": [logical_id(b, b.extra["key"]), "Arn"]}
    delayer = b.json["Resources"][logical_id(b, b.scheduler.delayer_queue)]["Properties"]
    dlq = b.json["Resources"][logical_id(b, b.scheduler.dead_letter_queue)]["Properties"]
    dispatcher = function_props(b, "DispatcherFunction")
    assert dispatcher["Timeout"] == CUSTOM_PROPS["dispatcher_timeout"].to_seconds()
    assert delayer["VisibilityTimeout"] == contract.VISIBILITY_TIMEOUT_FACTOR * dispatcher["Timeout"]
    assert delayer["RedrivePolicy"]["maxReceiveCount"] == int(
        dispatcher["Environment"]["Variables"][contract.ENV.max_receive_count]) == CUSTOM_PROPS["max_receive_count"]
    assert delayer["KmsMasterKeyId"] == dlq["KmsMasterKeyId"] == key_arn
    assert "SqsManagedSseEnabled" not in delayer
    # EventBridge may encrypt failed sweep events into the dead-letter queue
    b.template.has_resource_properties("AWS::KMS::Key", {"KeyPolicy": {"Statement": Match.array_with([
        Match.object_like({"Principal": {"Service": "events.amazonaws.com"},
                           "Action": ["kms:GenerateDataKey", "kms:Decrypt"]})])}})


def test_log_groups_follow_the_removal_policy_and_the_retention(stacks):
    for b, policy, count in ((stacks["defaults"], "Retain", 5), (stacks["custom"], "Delete", 4)):
        groups = resources_of(b.json, "AWS::Logs::LogGroup")
        ours = {k: v for k, v in groups.items() if k.startswith("Timers")}
        assert len(ours) == count  # four functions, and the API's access logs unless turned off
        assert {v["DeletionPolicy"] for v in ours.values()} == {policy}
    retention = {v["Properties"]["RetentionInDays"] for k, v in resources_of(stacks["custom"].json, "AWS::Logs::LogGroup")
                 .items() if k.startswith("Timers")}
    assert retention == {7}  # RetentionDays.ONE_WEEK
