"""A moto server for a module of construct tests, and the deploy of a synthesized stack into its
CloudFormation, as ``cdk deploy`` would (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import io
import json
import os
import zipfile
from contextlib import contextmanager
from pathlib import Path

from moto_wiring import REGION

from tests.waiting import wait_until


@contextmanager
def moto_server_environment():
    """A moto server on 127.0.0.1 in this process, and the environment (credentials, region, endpoint) that
    boto3 and the runtime reach it with, restored afterwards; yields the endpoint URL."""
    from moto.server import ThreadedMotoServer

    saved = dict(os.environ)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION, AWS_ACCOUNT_ID_ENDPOINT_MODE="disabled", AWS_ENDPOINT_URL=f"http://{host}:{port}",
    )
    # every call goes to this server: no profile, and no service's own endpoint (AWS_ENDPOINT_URL_LAMBDA, ...)
    for key in ["AWS_PROFILE", "AWS_SESSION_TOKEN", *(name for name in os.environ if name.startswith("AWS_ENDPOINT_URL_"))]:
        os.environ.pop(key, None)
    try:
        yield os.environ["AWS_ENDPOINT_URL"]
    finally:
        server.stop()
        os.environ.clear()
        os.environ.update(saved)


def _zip_dir(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()


def deploy_assembly(session, outdir: Path, stack_name: str, deployed_name: str, timeout: float = 120) -> tuple[dict, dict]:
    """Deploy the synthesized stack ``stack_name`` of the cloud assembly at ``outdir`` into moto's
    CloudFormation as ``deployed_name``, its file assets uploaded first as ``cdk deploy`` does; returns
    (the stack's description, its resources by logical id) once it is no longer in progress."""
    account = session.client("sts").get_caller_identity()["Account"]
    # What `cdk bootstrap` leaves behind and the template's BootstrapVersion rule reads.
    session.client("ssm").put_parameter(Name="/cdk-bootstrap/hnb659fds/version", Value="30", Type="String",
                                        Overwrite=True)
    s3 = session.client("s3")
    manifest = json.loads((outdir / f"{stack_name}.assets.json").read_text())
    for asset in manifest["files"].values():
        source = outdir / asset["source"]["path"]
        body = _zip_dir(source) if source.is_dir() else source.read_bytes()
        for destination in asset["destinations"].values():
            bucket = destination["bucketName"].replace("${AWS::AccountId}", account).replace("${AWS::Region}", REGION)
            if bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
                s3.create_bucket(Bucket=bucket)
            s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=body)

    cfn = session.client("cloudformation")
    cfn.create_stack(StackName=deployed_name, TemplateBody=(outdir / f"{stack_name}.template.json").read_text(),
                     Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"])
    stack = wait_until(lambda: _settled(cfn.describe_stacks(StackName=deployed_name)["Stacks"][0]), timeout,
                       f"the stack {deployed_name} no longer in progress", interval=0.2)
    summaries = cfn.list_stack_resources(StackName=deployed_name)["StackResourceSummaries"]
    return stack, {r["LogicalResourceId"]: r for r in summaries}


def _settled(stack: dict) -> dict | None:
    """The stack's description once it is no longer in progress."""
    return None if stack["StackStatus"].endswith("_IN_PROGRESS") else stack
