# pyright: strict
"""The README's kind of app, written right: a strict type check finds nothing
(tests/construct/test_typing.py)."""

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdk_delayed_scheduler import ApiAuthorization, DelayedScheduler, LogLevel, SchedulerApi, targets


class TimersStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        deliveries = sqs.Queue(self, "Deliveries", enforce_ssl=True)
        producer = lambda_.Function(self, "Producer", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                                    code=lambda_.Code.from_inline("def handler(event, context): pass"))
        timers = DelayedScheduler(self, "Timers", target=targets.SqsSendMessage(deliveries),
                                  extra_targets={"callback": targets.LambdaInvoke(producer)},
                                  delay_window=cdk.Duration.seconds(600), log_level=LogLevel.INFO,
                                  runtime=lambda_.Runtime.PYTHON_3_13,
                                  api=SchedulerApi.rest(authorization=ApiAuthorization.api_key()))
        grant: iam.Grant = timers.grant_schedule(producer)
        late: cloudwatch.Metric = timers.metric_lateness(period=cdk.Duration.minutes(1), statistic="p90")
        depth: cloudwatch.MathExpression = timers.metric_delayer_queue_depth(statistic="Average")
        table_name: str = timers.table.table_name
        url: str | None = timers.url
        names: list[str] = timers.target_names
        cdk.CfnOutput(self, "Out", value=f"{grant}{late}{depth}{table_name}{url}{names}")


app = cdk.App()
TimersStack(app, "Timers")
