"""The cdk-delayed-scheduler runtime: the Lambda handlers that the construct deploys.

Layout:
- ``core``: pure logic (time, keys, windows, validation, states, envelope); no AWS.
- ``aws``: thin adapters over DynamoDB, SQS and the targets (botocore clients).
- ``handlers``: one module per Lambda function; each is a thin shell.

Only the standard library and botocore (part of boto3 in every Lambda Python
runtime) are used, so the asset needs no bundling.
"""
