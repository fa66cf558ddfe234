"""The synth baseline: a CDK app with a single Lambda function and nothing else."""

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

app = cdk.App()
stack = cdk.Stack(app, "SingleFunction")
lambda_.Function(
    stack, "Fn", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
)
app.synth()
