"""Integration test of DelayedScheduler (run with `integ-runner`, see integ/package.json).

Deployed for real, it creates a schedule by invoking the api function directly (the documented
direct-invoke event), waits for its delivery in the target queue, and reads the schedule back as
FIRED. The test suite runs it in snapshot mode, offline: the committed snapshot must match what
this file synthesizes.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_sqs as sqs
from aws_cdk import integ_tests_alpha as integ
from aws_cdk.assertions import Match

from cdk_delayed_scheduler import DelayedScheduler, targets

SCHEDULE_ID = "integ-first-timer"


def _invoke_event(method: str, path: str, body: dict | None = None) -> str:
    """The direct-invoke event of the api function: ``{"method", "path", "body"}``."""
    return json.dumps({"method": method, "path": path, **({"body": body} if body is not None else {})})


app = cdk.App()
stack = cdk.Stack(app, "DelayedSchedulerInteg")
deliveries = sqs.Queue(stack, "Deliveries", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
timers = DelayedScheduler(
    stack,
    "Timers",
    target=targets.SqsSendMessage(deliveries),
    removal_policy=cdk.RemovalPolicy.DESTROY,
)

test = integ.IntegTest(app, "DelayedSchedulerIntegTest", test_cases=[stack],
                       diff_assets=False, regions=["us-east-1"])

# 1. create a schedule due in 5 seconds (a direct invoke of the api function)
create = test.assertions.invoke_function(
    function_name=timers.api_function.function_name,
    payload=_invoke_event("POST", "/schedules", {"id": SCHEDULE_ID, "delaySeconds": 5, "payload": {"hello": "integ"}}),
)
create.expect(integ.ExpectedResult.object_like({"Payload": Match.object_like({"statusCode": 201})}))

# 2. wait for its delivery in the target queue
delivered = test.assertions.aws_api_call(
    "SQS", "receiveMessage", {"QueueUrl": deliveries.queue_url, "WaitTimeSeconds": 20, "MaxNumberOfMessages": 10},
)
delivered.expect(integ.ExpectedResult.object_like({
    "Messages": Match.array_with([Match.object_like({
        "Body": Match.serialized_json(Match.object_like({"id": SCHEDULE_ID, "payload": {"hello": "integ"},
                                                         "target": "default", "attempt": 1})),
    })]),
})).wait_for_assertions(total_timeout=cdk.Duration.minutes(3), interval=cdk.Duration.seconds(10))
create.next(delivered)

# 3. the schedule now reads as FIRED
read = test.assertions.invoke_function(
    function_name=timers.api_function.function_name,
    payload=_invoke_event("GET", f"/schedules/{SCHEDULE_ID}"),
)
read.expect(integ.ExpectedResult.object_like({"Payload": Match.object_like({
    "statusCode": 200, "body": Match.object_like({"status": "FIRED"}),
})}))
delivered.next(read)

app.synth()
