"""Suite-wide settings: no test reaches beyond 127.0.0.1, and boto3 never finds real credentials."""

import os

os.environ.setdefault("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
