"""Checks of the engine's moto corrections, run in a process of their own.

``python moto_patch_checks.py [--unpatched]`` serves moto as the engine's child does
(``serve_moto``), or with the corrections left out, exercises each correction through boto3,
and prints one JSON object: check name -> result. Every check makes the code path that a
correction removes raise, so a check reads ``"ok"`` only when the correction is in place and
the answers are still right. ``tests/e2e/test_moto_patches.py`` runs it both ways.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
os.environ.update(AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local", AWS_DEFAULT_REGION="us-east-1",
                  AWS_ACCOUNT_ID_ENDPOINT_MODE="disabled")


class Forbidden(Exception):
    """A code path the corrections remove was taken."""


def forbid(owner: Any, name: str) -> Callable[[], None]:
    """Make ``owner.name`` raise; returns the undo."""
    original = owner.__dict__[name]

    def raising(*args: Any, **kwargs: Any) -> Any:
        raise Forbidden(f"{getattr(owner, '__name__', owner)}.{name}")

    setattr(owner, name, property(raising) if isinstance(original, property) else raising)
    return lambda: setattr(owner, name, original)


def check(results: dict, name: str, body: Callable[[], Any]) -> None:
    try:
        outcome = body()
        results[name] = "ok" if outcome is None else outcome
    except Exception as exc:  # noqa: BLE001 - reported, the test asserts on it
        results[name] = f"{type(exc).__name__}: {exc}"[:300]


def main(patched: bool) -> dict:
    import boto3

    from cdk_delayed_scheduler.local.moto_server import serve_moto

    if patched:
        server = serve_moto()
        host, port = server.server_address[:2]
        stop = server.shutdown
    else:  # moto as it comes, with its own server
        import logging

        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
        plain = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        plain.start()
        host, port = plain.get_host_and_port()
        stop = plain.stop
    url = f"http://{host}:{port}"
    from botocore.config import Config

    once = Config(retries={"total_max_attempts": 1})  # a check that fails, fails at once
    ddb = boto3.client("dynamodb", endpoint_url=url, config=once)
    sqs = boto3.client("sqs", endpoint_url=url, config=once)
    streams = boto3.client("dynamodbstreams", endpoint_url=url, config=once)
    results: dict = {}

    from moto.dynamodb.models.table import Table
    from moto.sqs.models import Message, Queue

    ddb.create_table(
        TableName="t", BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    for pk in ("A", "B", "C"):
        for sk in ("1", "2", "3", "4"):
            ddb.put_item(TableName="t", Item={"pk": {"S": pk}, "sk": {"S": sk}, "v": {"S": pk + sk}})

    def query_reads_only_its_partition() -> Any:
        undo = forbid(Table, "all_items")  # moto's Query sorts the whole table through it
        try:
            pages, key = [], None
            while True:
                args: dict = {"TableName": "t", "KeyConditionExpression": "pk = :p AND sk <= :s", "Limit": 2,
                              "ScanIndexForward": False,
                              "ExpressionAttributeValues": {":p": {"S": "B"}, ":s": {"S": "3"}}}
                if key:
                    args["ExclusiveStartKey"] = key
                page = ddb.query(**args)
                pages.append([item["v"]["S"] for item in page["Items"]])
                key = page.get("LastEvaluatedKey")
                if not key:
                    break
            between = ddb.query(TableName="t", KeyConditionExpression="pk = :p AND sk BETWEEN :a AND :b",
                                ExpressionAttributeValues={":p": {"S": "C"}, ":a": {"S": "2"}, ":b": {"S": "3"}})
            prefix = ddb.query(TableName="t", KeyConditionExpression="pk = :p AND begins_with(sk, :a)",
                               ExpressionAttributeValues={":p": {"S": "C"}, ":a": {"S": "4"}})
            whole = ddb.query(TableName="t", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "A"}})
        finally:
            undo()
        found = [pages, *([item["v"]["S"] for item in page["Items"]] for page in (between, prefix, whole))]
        wanted = [[["B3", "B2"], ["B1"]], ["C2", "C3"], ["C4"], ["A1", "A2", "A3", "A4"]]
        return None if found == wanted else f"wrong answers {found}"

    check(results, "query_reads_only_its_partition", query_reads_only_its_partition)

    queue_url = sqs.create_queue(QueueName="q")["QueueUrl"]

    def send_reads_no_counts() -> Any:
        undo = [forbid(Queue, "approximate_number_of_messages_delayed"),
                forbid(Queue, "approximate_number_of_messages_not_visible")]
        try:
            for i in range(3):
                sqs.send_message(QueueUrl=queue_url, MessageBody=f"m{i}", DelaySeconds=900 if i == 0 else 0)
        finally:
            for u in undo:
                u()
        counts = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
        wanted = {"ApproximateNumberOfMessages": "2", "ApproximateNumberOfMessagesDelayed": "1"}
        return None if all(counts.get(k) == v for k, v in wanted.items()) else f"counts {counts}"

    check(results, "send_reads_no_counts", send_reads_no_counts)

    def delete_finds_its_message_by_handle() -> Any:
        first = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0)["Messages"]
        again = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=30)["Messages"]
        undo = forbid(Message, "had_receipt_handle")  # moto's delete scans every message with it, twice
        try:
            old = {m["MessageId"]: m["ReceiptHandle"] for m in first}
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=old[again[0]["MessageId"]])  # an older handle
            answer = sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(again)])
        finally:
            undo()
        left = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
        if len(answer.get("Successful", [])) != len(again) or len(again) != 2:
            return f"deleted {answer}"
        return None if (left["ApproximateNumberOfMessages"], left["ApproximateNumberOfMessagesNotVisible"]) == ("0", "0") else f"left {left}"

    check(results, "delete_finds_its_message_by_handle", delete_finds_its_message_by_handle)

    def long_poll_waits_without_spinning() -> Any:
        calls = [0]
        original = Queue.__dict__["messages"]

        def counted(self: Any) -> Any:
            calls[0] += 1
            return original.fget(self)

        Queue.messages = property(counted)
        try:
            sent = time.monotonic()  # before the send: its delay runs from when moto took it, which is after this
            sqs.send_message(QueueUrl=queue_url, MessageBody="soon", DelaySeconds=1)
            got = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=3).get("Messages", [])
            waited = time.monotonic() - sent
        finally:
            Queue.messages = original
        if not got or waited < 1.0:
            return f"received {len(got)} after {waited:.2f} s"
        return {"scans": calls[0], "waited_s": round(waited, 3)}

    check(results, "long_poll_waits_without_spinning", long_poll_waits_without_spinning)

    def routing_lists_no_directory() -> Any:
        from moto import backends

        for _ in range(2):  # the first calls load botocore's models, which lists directories
            ddb.get_item(TableName="t", Key={"pk": {"S": "A"}, "sk": {"S": "1"}})
            sqs.get_queue_url(QueueName="q")
            streams.list_streams()
        undo = forbid(os, "listdir")
        try:
            for _ in range(3):
                ddb.get_item(TableName="t", Key={"pk": {"S": "A"}, "sk": {"S": "1"}})
                sqs.get_queue_url(QueueName="q")
                streams.list_streams()
        finally:
            undo()
        return None if tuple(backends.list_of_moto_modules()) else "no modules listed"

    check(results, "routing_lists_no_directory", routing_lists_no_directory)

    def stream_iterators_are_bounded() -> Any:
        from moto.dynamodbstreams.models import dynamodbstreams_backends

        arn = ddb.describe_table(TableName="t")["Table"]["LatestStreamArn"]
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        seen = 0
        for _ in range(1100):
            page = streams.get_records(ShardIterator=iterator, Limit=5)
            seen += len(page["Records"])
            iterator = page["NextShardIterator"]
        kept = sum(len(b.shard_iterators) for regions in dynamodbstreams_backends.values() for b in regions.values())
        return None if seen == 12 and kept <= 1000 else f"{seen} records read; {kept} iterators kept"

    check(results, "stream_iterators_are_bounded", stream_iterators_are_bounded)

    def stream_records_are_answered_as_stored() -> Any:
        from moto.core.responses import BaseResponse

        ddb.put_item(TableName="t", Item={"pk": {"S": "bin"}, "sk": {"S": "1"}, "b": {"B": b"\x00\xff"}, "n": {"N": "7"}})
        arn = ddb.describe_table(TableName="t")["Table"]["LatestStreamArn"]
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        undo = forbid(BaseResponse, "serialized")  # moto's generic serializer, walked per attribute
        try:
            records = streams.get_records(ShardIterator=iterator)["Records"]
        finally:
            undo()
        last = records[-1]["dynamodb"]
        age = time.time() - last["ApproximateCreationDateTime"].timestamp()
        if last["NewImage"] != {"pk": {"S": "bin"}, "sk": {"S": "1"}, "b": {"B": b"\x00\xff"}, "n": {"N": "7"}}:
            return f"new image {last['NewImage']}"
        return None if len(records) == 13 and 0 <= age < 60 else f"{len(records)} records, created {age:.0f} s ago"

    check(results, "stream_records_are_answered_as_stored", stream_records_are_answered_as_stored)

    def cancelled_transaction_changes_nothing_and_the_stream_flows() -> Any:
        from botocore.exceptions import ClientError

        def item(pk: str, **attrs: str) -> dict:
            return {"pk": {"S": pk}, "sk": {"S": "s"}, **{k: {"S": v} for k, v in attrs.items()}}

        ddb.put_item(TableName="t", Item=item("a", v="before"))
        ddb.put_item(TableName="t", Item=item("d", v="before"))
        arn = ddb.describe_table(TableName="t")["Table"]["LatestStreamArn"]
        shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="LATEST")["ShardIterator"]
        try:
            ddb.transact_write_items(TransactItems=[
                {"Put": {"TableName": "t", "Item": item("b", v="new")}},
                {"Update": {"TableName": "t", "Key": item("d"), "UpdateExpression": "SET v = :x",
                            "ExpressionAttributeValues": {":x": {"S": "changed"}}}},
                {"Put": {"TableName": "t", "Item": item("a", v="again"), "ConditionExpression": "attribute_not_exists(pk)"}},
            ])
            return "the transaction was not cancelled"
        except ClientError as exc:
            if "TransactionCanceled" not in str(exc):
                raise
        after = [ddb.get_item(TableName="t", Key=item(k)).get("Item", {}).get("v", {}).get("S") for k in "abd"]
        if after != ["before", None, "before"]:
            return f"items after a cancelled transaction: {after}"
        ddb.put_item(TableName="t", Item=item("c", v="after"))
        seen = []
        for _ in range(5):  # an iterator from before the cancelled transaction still sees later writes
            page = streams.get_records(ShardIterator=iterator)
            seen += [r["dynamodb"]["Keys"]["pk"]["S"] for r in page["Records"]]
            iterator = page["NextShardIterator"]
        return None if "c" in seen else f"the stream stopped: saw {seen}"

    check(results, "cancelled_transaction_changes_nothing_and_the_stream_flows",
          cancelled_transaction_changes_nothing_and_the_stream_flows)

    def connections_are_kept_alive() -> Any:
        conn = http.client.HTTPConnection(host, port, timeout=10)
        sockets = []
        for _ in range(3):
            conn.request("POST", "/", body=b"Action=ListQueues&Version=2012-11-05",
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
            response = conn.getresponse()
            response.read()
            if response.status != 200 or response.getheader("Connection", "").lower() == "close":
                return f"status {response.status}, Connection: {response.getheader('Connection')}"
            sockets.append(conn.sock)
        conn.close()
        return None if sockets[0] is not None and all(s is sockets[0] for s in sockets) else "a new connection per request"

    check(results, "connections_are_kept_alive", connections_are_kept_alive)

    def fifo_receive_reads_busy_groups_from_a_snapshot() -> Any:
        from moto.sqs.models import sqs_backends

        fifo_url = sqs.create_queue(QueueName="busy.fifo", Attributes={"FifoQueue": "true",
                                                                      "ContentBasedDeduplication": "true"})["QueueUrl"]
        for group in ("a", "b"):
            sqs.send_message(QueueUrl=fifo_url, MessageBody=group, MessageGroupId=group)
        sqs.receive_message(QueueUrl=fifo_url, MaxNumberOfMessages=1)  # group "a" is now in flight
        [queue] = [q for region in sqs_backends.values() for backend in region.values()
                   for q in backend.queues.values() if q.name == "busy.fifo"]

        class ChangedWhileRead(set):  # another thread's receive or delete, at the worst moment of this one's read
            def __iter__(self) -> Iterator[Any]:
                inner = set.__iter__(self)
                yield next(inner)
                late = Message("late", "late")
                late.group_id = "c"
                self.add(late)
                yield from inner

        queue._pending_messages = ChangedWhileRead(queue._pending_messages)
        got = sqs.receive_message(QueueUrl=fifo_url, MaxNumberOfMessages=10).get("Messages", [])
        return None if [m["Body"] for m in got] == ["b"] else f"received {[m['Body'] for m in got]}"

    check(results, "fifo_receive_reads_busy_groups_from_a_snapshot", fifo_receive_reads_busy_groups_from_a_snapshot)

    def index_query_is_not_torn_by_a_write() -> Any:
        ddb.create_table(
            TableName="g", BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "grp", "gsk")],
            GlobalSecondaryIndexes=[{"IndexName": "ByGroup", "Projection": {"ProjectionType": "KEYS_ONLY"},
                                     "KeySchema": [{"AttributeName": "grp", "KeyType": "HASH"},
                                                   {"AttributeName": "gsk", "KeyType": "RANGE"}]}])
        for n in range(3):
            ddb.put_item(TableName="g", Item={"pk": {"S": f"m{n}"}, "sk": {"S": "r"}, "grp": {"S": "x"},
                                              "gsk": {"S": f"S#{n}"}})
        original = Table.sorted_items

        def leaving_meanwhile(self: Any, *args: Any, **kwargs: Any) -> Any:
            # another request's thread removes a member's sort key between the query's filter and its sort
            writer = threading.Thread(target=lambda: ddb.update_item(
                TableName="g", Key={"pk": {"S": "m1"}, "sk": {"S": "r"}}, UpdateExpression="REMOVE gsk"))
            writer.start()
            writer.join(0.5)  # done at once without the lock; held back until this query ends with it
            return original(self, *args, **kwargs)

        Table.sorted_items = leaving_meanwhile  # type: ignore[method-assign]
        try:
            page = ddb.query(TableName="g", IndexName="ByGroup", KeyConditionExpression="grp = :g AND gsk BETWEEN :a AND :b",
                             ExpressionAttributeValues={":g": {"S": "x"}, ":a": {"S": "S#"}, ":b": {"S": "S$"}})
        finally:
            Table.sorted_items = original  # type: ignore[method-assign]
        return None if page["Count"] == 3 else f"counted {page['Count']}"

    check(results, "index_query_is_not_torn_by_a_write", index_query_is_not_torn_by_a_write)

    def a_read_never_sees_half_a_write() -> Any:
        from moto.dynamodb.parsing.executors import SetExecutor

        key = {"pk": {"S": "P#"}, "sk": {"S": "resumed"}}
        ddb.put_item(TableName="t", Item={**key, "status": {"S": "PAUSED"}, "token": {"S": "old"}})
        original = SetExecutor.execute
        reads: list = []

        def read_meanwhile(self: Any, item: Any) -> None:
            original(self, item)
            if not reads and item.attrs["token"].value == "new":  # set; the status comes next
                # another request's thread reads the item between the two actions of one UpdateItem
                reader = threading.Thread(target=lambda: reads.append(
                    ddb.get_item(TableName="t", Key=key, ConsistentRead=True)["Item"]))
                reads.append(reader)
                reader.start()
                reader.join(0.5)  # answered at once without the lock; held back until this write ends with it

        SetExecutor.execute = read_meanwhile  # type: ignore[method-assign]
        try:
            # as a resume writes: its occurrence's token first, then ACTIVE
            ddb.update_item(TableName="t", Key=key, UpdateExpression="SET #tok = :tok, #st = :active",
                            ExpressionAttributeNames={"#tok": "token", "#st": "status"},
                            ExpressionAttributeValues={":tok": {"S": "new"}, ":active": {"S": "ACTIVE"}})
        finally:
            SetExecutor.execute = original  # type: ignore[method-assign]
        if not reads:
            return "the update never set the token"
        reads[0].join(10)
        seen = [(item["status"]["S"], item["token"]["S"]) for item in reads[1:]]
        return None if seen in ([("PAUSED", "old")], [("ACTIVE", "new")]) else f"read {seen}"

    check(results, "a_read_never_sees_half_a_write", a_read_never_sees_half_a_write)

    def an_api_invocations_write_after_its_timeout_is_not_applied() -> Any:
        from concurrent.futures import ThreadPoolExecutor

        from botocore.exceptions import ClientError

        from cdk_delayed_scheduler.local import deadlines

        real_now_ms, started_ms, passed_ms = deadlines.real_now_ms, deadlines.real_now_ms(), [0]

        def invocation(_event: Any, _context: Any) -> list[str]:
            answers = []
            for name, taken_ms in (("in-time", 0), ("late", 300)):
                passed_ms[0] += taken_ms  # the time is up after 0.2 s, as Lambda would stop the function
                with ThreadPoolExecutor(1) as pool:  # from a pool too, as the runtime writes a batch's records
                    for writer in (lambda: ddb, lambda: pool.submit(lambda: ddb).result()):
                        item = {"pk": {"S": "D#"}, "sk": {"S": f"{name}-{len(answers)}"}}
                        try:
                            writer().put_item(TableName="t", Item=item)
                            answers.append(f"{name}: written")
                        except ClientError as exc:
                            answers.append(f"{name}: {exc.response['Error']['Code']}")
            return answers

        layer = deadlines.DeadlineLayer()
        layer.install()
        deadlines.real_now_ms = lambda: started_ms + passed_ms[0]  # Lambda's clock, moved only by the invocation
        try:
            answers = deadlines.within_timeout(invocation, 0.2)({}, None)
        finally:
            deadlines.real_now_ms = real_now_ms
            layer.uninstall()
        stored = sorted(i["sk"]["S"] for i in ddb.query(
            TableName="t", KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "D#"}})["Items"])
        expected = ["in-time: written"] * 2 + ["late: InternalServerError"] * 2
        return None if (answers, stored) == (expected, ["in-time-0", "in-time-1"]) else f"{answers} {stored}"

    check(results, "an_api_invocations_write_after_its_timeout_is_not_applied",
          an_api_invocations_write_after_its_timeout_is_not_applied)
    stop()
    return results


if __name__ == "__main__":
    print(json.dumps(main(patched="--unpatched" not in sys.argv)))
