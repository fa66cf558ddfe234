"""Example app: a stack that uses the DelayedScheduler construct, as a user would.

    cd integ && npx cdk synth        # the pinned aws-cdk 2.x CLI from package.json

The tests synthesize this same stack and deploy its template into moto's
CloudFormation to prove the wiring (tests/construct/test_moto_deploy.py).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from cdk_delayed_scheduler import DelayedScheduler, targets

STACK_NAME = "DelayedSchedulerExample"


class ExampleStack(cdk.Stack):
    """A deliveries queue as the default target, a FIFO queue as a named extra target, the
    listing (``GET /schedules``), and a role that may call the scheduler's API."""

    def __init__(self, scope: Construct, id: str, **kwargs) -> None:
        super().__init__(scope, id, **kwargs)
        self.deliveries = sqs.Queue(self, "Deliveries", encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
        self.ordered = sqs.Queue(self, "OrderedDeliveries", fifo=True,
                                 # (named only because moto's CloudFormation does not add the .fifo suffix itself)
                                 queue_name=f"{self.stack_name}-ordered.fifo",
                                 encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
        self.timers = DelayedScheduler(
            self,
            "Timers",
            target=targets.SqsSendMessage(self.deliveries),
            extra_targets={"ordered": targets.SqsSendMessage(self.ordered, message_group_id="orders")},
            listing=True,
            removal_policy=cdk.RemovalPolicy.DESTROY,  # an example: nothing to keep
        )
        self.client_role = iam.Role(self, "ClientRole", assumed_by=iam.AccountRootPrincipal(),
                                    description="May create, read, list and cancel schedules and periodic timers.")
        self.timers.grant_schedule(self.client_role)
        cdk.CfnOutput(self, "ApiUrl", value=self.timers.url)
        cdk.CfnOutput(self, "DeliveriesQueueUrl", value=self.deliveries.queue_url)


def build_app(outdir: str | None = None) -> cdk.App:
    app = cdk.App(outdir=outdir) if outdir else cdk.App()
    ExampleStack(app, STACK_NAME)
    return app


if __name__ == "__main__":
    build_app().synth()
