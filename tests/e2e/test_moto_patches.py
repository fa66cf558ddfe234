"""The engine's corrections to moto keep DynamoDB's transaction semantics."""

import boto3
import pytest
from botocore.exceptions import ClientError

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.client import Recorder

pytestmark = pytest.mark.e2e


def test_a_cancelled_transaction_changes_nothing_and_the_stream_keeps_flowing():
    with Engine(EngineOptions(target=Recorder(), shard_count=1)) as engine:
        ddb = boto3.client("dynamodb", endpoint_url=engine.endpoint_url)
        streams = boto3.client("dynamodbstreams", endpoint_url=engine.endpoint_url)
        table = engine.table_name

        def item(pk, **attrs):
            return {"pk": {"S": pk}, "sk": {"S": "s"}, **{k: {"S": v} for k, v in attrs.items()}}

        ddb.put_item(TableName=table, Item=item("a", v="before"))
        ddb.put_item(TableName=table, Item=item("d", v="before"))
        shard = streams.describe_stream(StreamArn=engine.stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
        iterator = streams.get_shard_iterator(StreamArn=engine.stream_arn, ShardId=shard, ShardIteratorType="LATEST")["ShardIterator"]
        with pytest.raises(ClientError, match="TransactionCanceled"):
            ddb.transact_write_items(TransactItems=[
                {"Put": {"TableName": table, "Item": item("b", v="new")}},
                {"Update": {"TableName": table, "Key": item("d"), "UpdateExpression": "SET v = :x",
                            "ExpressionAttributeValues": {":x": {"S": "changed"}}}},
                {"Put": {"TableName": table, "Item": item("a", v="again"), "ConditionExpression": "attribute_not_exists(pk)"}},
            ])
        assert "Item" not in ddb.get_item(TableName=table, Key=item("b"))
        assert ddb.get_item(TableName=table, Key=item("a"))["Item"]["v"] == {"S": "before"}
        assert ddb.get_item(TableName=table, Key=item("d"))["Item"]["v"] == {"S": "before"}

        ddb.put_item(TableName=table, Item=item("c", v="after"))
        seen = []
        for _ in range(5):  # an iterator from before the cancelled transaction still sees later writes
            response = streams.get_records(ShardIterator=iterator)
            seen += [r["dynamodb"]["Keys"]["pk"]["S"] for r in response["Records"]]
            iterator = response["NextShardIterator"]
        assert "c" in seen
