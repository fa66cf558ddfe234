"""A first user's app with the common mistakes; each line marked ``# mistake`` must be reported
by a type checker through the README's import (tests/construct/test_typing.py)."""

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdk_delayed_scheduler import DelayedScheduler, SchedulerApi, targets


class TimersStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        fn = lambda_.Function(self, "Fn", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                              code=lambda_.Code.from_inline("def handler(event, context): pass"))
        queue = sqs.Queue(self, "Deliveries")
        target = targets.SqsSendMessage(queue)
        DelayedScheduler(self, "A", target=fn)  # mistake
        DelayedScheduler(self, "B", target=target, shard_count="16")  # mistake
        DelayedScheduler(self, "C", target=target, delay_window=900)  # mistake
        DelayedScheduler(self, "D", target=target, log_level="VERBOSE")  # mistake
        DelayedScheduler(self, "E", target=target, api="http")  # mistake
        DelayedScheduler(self, "F", target=target, removal_policy="destroy")  # mistake
        DelayedScheduler(self, "G", target=target, extra_targets=[target])  # mistake
        DelayedScheduler(self, "H", target=target, runtime="python3.13")  # mistake
        timers = DelayedScheduler(self, "I", target=target, dispatcher_timeout=cdk.Duration.seconds(90))
        timers.metric_lateness(perod=cdk.Duration.minutes(1))  # mistake
        timers.metric_dead_letter_queue_depth(statistic=99)  # mistake
        timers.add_target("fn", fn)  # mistake
        targets.LambdaInvoke(queue)  # mistake
        SchedulerApi.rest(cloud_watch_role="yes")  # mistake
