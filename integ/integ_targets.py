"""Integration test: one delivery to every kind of target, each read back where it landed.

Each target hands the envelope to the recorder, which reads it with ``Envelope.all_from_event`` and writes
down the target's name and how it arrived:

| target | kind | arrives as |
|---|---|---|
| ``default`` | ``LambdaInvoke`` (synchronous) | the recorder's event |
| ``event`` | ``LambdaInvoke(invocation_type=EVENT)`` | the recorder's event |
| ``fifo`` | ``SqsSendMessage`` to a FIFO queue | an SQS event (the queue's event source) |
| ``sns`` | ``SnsPublish`` | an SNS event (a Lambda subscription) |
| ``bus`` | ``EventBridgePutEvents`` | an EventBridge event (a rule on the bus) |
| ``workflow`` | ``StepFunctionsStartExecution`` | a state machine's task, with the execution's name |
| ``hook`` | ``HttpsEndpoint`` to a Lambda function URL | a signed POST, checked by ``verify_signature`` |

The receiver behind the URL answers 401 to a request that is not signed: checked with an unsigned POST.
About a minute of assertions after the deploy.
"""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk import integ_tests_alpha as integ

from cdk_delayed_scheduler import DelayedScheduler, targets
from harness import Match, Scenario, Seen, created, new_app, timer

SOURCE, DETAIL_TYPE = "integ.delayed-scheduler", "Timer due"
#: target name -> how its deliveries reach the recorder
ARRIVES_AS = {"default": "invoke", "event": "invoke", "fifo": "sqs", "sns": "sns", "bus": "eventbridge",
              "workflow": "stepfunctions", "hook": "https"}

app = new_app()
stack = cdk.Stack(app, "DelayedSchedulerTargets")
seen = Seen(stack, "Seen")
recorder = seen.recorder

fifo = sqs.Queue(stack, "Fifo", fifo=True, encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
recorder.add_event_source(sources.SqsEventSource(fifo, batch_size=1))

topic = sns.Topic(stack, "Topic", enforce_ssl=True)
topic.add_subscription(subscriptions.LambdaSubscription(recorder))

bus = events.EventBus(stack, "Bus")
events.Rule(stack, "DueTimers", event_bus=bus,
            event_pattern=events.EventPattern(source=[SOURCE], detail_type=[DETAIL_TYPE]),
            targets=[events_targets.LambdaFunction(recorder)])

record = tasks.LambdaInvoke(stack, "Record", lambda_function=recorder, payload=sfn.TaskInput.from_object(
    {"execution": sfn.JsonPath.string_at("$$.Execution.Name"), "envelope": sfn.JsonPath.entire_payload}))
workflow = sfn.StateMachine(stack, "Workflow", definition_body=sfn.DefinitionBody.from_chainable(record),
                            removal_policy=cdk.RemovalPolicy.DESTROY)

secret = secretsmanager.Secret(stack, "HookSecret", removal_policy=cdk.RemovalPolicy.DESTROY,
                               generate_secret_string=secretsmanager.SecretStringGenerator(exclude_punctuation=True))
receiver = seen.function("Receiver", "receiver.handler", environment={"SIGNING_SECRET_ARN": secret.secret_arn})
secret.grant_read(receiver)
# The signature is the authentication: the URL takes anyone's request, and the receiver refuses unsigned ones.
hook = receiver.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)

timers = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(recorder), extra_targets={
    "event": targets.LambdaInvoke(recorder, invocation_type=targets.LambdaInvocationType.EVENT),
    "fifo": targets.SqsSendMessage(fifo, message_group_id="integ"),
    "sns": targets.SnsPublish(topic),
    "bus": targets.EventBridgePutEvents(bus, detail_type=DETAIL_TYPE, source=SOURCE),
    "workflow": targets.StepFunctionsStartExecution(workflow),
    "hook": targets.HttpsEndpoint(hook.url, signing_secret=secret),
}, removal_policy=cdk.RemovalPolicy.DESTROY)
scenario = Scenario(app, stack, "TargetsTest", timers=timers, probe=seen.probe(timers))

# 1. one timer per target, due in 5 seconds, in one batch
scenario.api("POST", "/schedule-batches", {"schedules": [timer(f"to-{name}", 5, target=name) for name in ARRIVES_AS]},
             status=200, like={"results": [created("QUEUED", target=name) for name in ARRIVES_AS]})

# 2. each one delivered once, through its target, to the recorder
for name, arrives_as in ARRIVES_AS.items():
    scenario.delivered(f"to-{name}", target=name, arrivedAs=[arrives_as])

# 3. the state machine's execution is named after the occurrence's dedupeKey
scenario.deliveries("to-workflow", {"executions": [Match.string_like_regexp(r"^to-workflow-\d{13}-[0-9a-f]{40}$")]},
                    wait=None)

# 4. the receiver refuses a request that is not signed
unsigned = scenario.test.assertions.http_api_call(hook.url, method="POST", body=json.dumps({"id": "forged"}),
                                                  headers={"Content-Type": "application/json"})
unsigned.expect(integ.ExpectedResult.object_like({"status": 401}))
scenario.then(unsigned)

app.synth()
