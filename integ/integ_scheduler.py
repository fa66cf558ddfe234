"""Integration test: a short timer (due within the delay window, straight to the delayer queue).

Deployed for real (``npx integ-runner``, docs/integ.md), it creates a schedule due in 5 seconds by
invoking the api function directly (the documented direct-invoke event), waits for its delivery in the
target queue, and reads the schedule back as FIRED. The test suite checks this file's committed
snapshot offline (integ/snapshot.py).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_sqs as sqs
from aws_cdk import integ_tests_alpha as integ

from cdk_delayed_scheduler import DelayedScheduler, targets
from harness import Match, Scenario, new_app

SCHEDULE_ID = "integ-first-timer"

app = new_app()
stack = cdk.Stack(app, "DelayedSchedulerInteg")
deliveries = sqs.Queue(stack, "Deliveries", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
timers = DelayedScheduler(
    stack,
    "Timers",
    target=targets.SqsSendMessage(deliveries),
    removal_policy=cdk.RemovalPolicy.DESTROY,
)

scenario = Scenario(app, stack, "DelayedSchedulerIntegTest", timers=timers)

# 1. create a schedule due in 5 seconds (a direct invoke of the api function)
scenario.api("POST", "/schedules", {"id": SCHEDULE_ID, "delaySeconds": 5, "payload": {"hello": "integ"}},
             status=201, like={"status": "QUEUED"})

# 2. wait for its delivery in the target queue
delivered = scenario.test.assertions.aws_api_call(
    "SQS", "receiveMessage", {"QueueUrl": deliveries.queue_url, "WaitTimeSeconds": 20, "MaxNumberOfMessages": 10},
)
delivered.expect(integ.ExpectedResult.object_like({
    "Messages": Match.array_with([Match.object_like({
        "Body": Match.serialized_json(Match.object_like({"id": SCHEDULE_ID, "payload": {"hello": "integ"},
                                                         "target": "default", "attempt": 1})),
    })]),
}))
scenario.then(delivered, wait=cdk.Duration.minutes(3))

# 3. the schedule now reads as FIRED
scenario.api("GET", f"/schedules/{SCHEDULE_ID}", status=200, like={"status": "FIRED"})

app.synth()
