"""Helpers for the construct tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
INTEG = REPO / "integ"

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")


def load_example_app():
    """``integ/app.py`` as a module (it is not a package)."""
    spec = importlib.util.spec_from_file_location("delayed_scheduler_example_app", INTEG / "app.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def resources_of(template: dict, cfn_type: str) -> dict:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == cfn_type}


def only(template: dict, cfn_type: str, contains: str = "") -> tuple[str, dict]:
    found = {k: v for k, v in resources_of(template, cfn_type).items() if contains in k}
    assert len(found) == 1, f"expected one {cfn_type} with {contains!r} in its id, got {sorted(found)}"
    return next(iter(found.items()))


def acknowledged(construct) -> dict[str, set[str]]:
    """{construct path: cdk-nag 3 rule ids acknowledged on it} under ``construct`` (CDK's native
    validation acknowledgements)."""
    import aws_cdk as cdk

    found: dict[str, set[str]] = {}
    for node in construct.node.find_all():
        for entry in node.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                found.setdefault(node.node.path, set()).update(r.removeprefix("Annotation::") for r in entry.data)
    return found


def uv_env() -> dict[str, str]:
    """The environment for ``uv`` runs that build throwaway environments."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    return env


def cached_dir(name: str, key: str, build: Callable[[Path], None]) -> Path:
    """A directory under the temp dir, built once per ``key`` (a lock keeps parallel runs apart)."""
    path = Path(tempfile.gettempdir()) / f"cdk-delayed-scheduler-{name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (path / ".ready").exists():
            subprocess.run(["rm", "-rf", str(path)], check=True)
            build(path)
            (path / ".ready").touch()
    return path


def uv_venv(name: str, requirements: list[str]) -> Path:
    """A cached virtual environment with the development Python and exactly ``requirements``."""
    uv = str(Path(sys.executable).with_name("uv"))

    def build(path: Path) -> None:
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(path)], check=True, env=uv_env())
        subprocess.run([uv, "pip", "install", "-q", "--python", str(path / "bin" / "python"), *requirements],
                       check=True, env=uv_env())

    return cached_dir(name, f"{sys.version}|{sorted(requirements)}", build)


# --- checks that run as a child process the session starts early -----------------------------
#: Starts the line of a module's ``__main__`` output that holds its result (JSON).
RESULT_MARKER = "RESULT "


def print_result(result: dict) -> None:
    """Print a module's ``__main__`` result, for ``early_result`` to read."""
    import json

    print(RESULT_MARKER + json.dumps(result), flush=True)


def early_result(name: str, timeout: float) -> dict:
    """The result the module's ``__main__`` printed, from the run named ``name`` in tests/conftest.py's
    ``EARLY_RUNS``: the one the session started, or a run of its own when the module runs alone."""
    import json

    from tests.conftest import EARLY_RUNS

    (run,) = [r for r in EARLY_RUNS if r.name == name]
    code, text = run.output(timeout)
    found = [line for line in text.splitlines() if line.startswith(RESULT_MARKER)]
    assert code == 0 and found, f"the {name} run failed (exit code {code}):\n{text[-4000:]}"
    return json.loads(found[-1].removeprefix(RESULT_MARKER))


def readme_block(section: str) -> str:
    """The first Python block of the README's ``## <section>``, as written."""
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(rf"^## {re.escape(section)}\n.*?```python\n(.*?)```", readme, re.S | re.M)
    assert found, f"the README's {section} section lost its example"
    return found.group(1)


def readme_stack() -> str:
    """The Python block of the README's "Use it in your stack" section."""
    return readme_block("Use it in your stack")


# --- the README's app with every acknowledgement, under cdk-nag 3 or 2 ---------------------------
#: The cdk-nag 2 release the Aspect check runs (the newest 2.x when it was written).
CDK_NAG_2 = "2.38.2"

#: A stack that makes every acknowledgement the construct has (REST API with an API key, REST API
#: with IAM and a grant, a KMS key, the account's logging role), in the README app's terms.
ACKNOWLEDGING_STACK = '''
from aws_cdk import aws_kms as kms
from cdk_delayed_scheduler import ApiAuthorization, SchedulerApi


class EveryAcknowledgement(cdk.Stack):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        dlq = sqs.Queue(self, "JobsDlq", enforce_ssl=True)
        jobs = sqs.Queue(self, "Jobs", enforce_ssl=True,
                         dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3))
        DelayedScheduler(self, "Keyed", target=targets.SqsSendMessage(jobs),
                         encryption_key=kms.Key(self, "Key", enable_key_rotation=True),
                         api=SchedulerApi.rest(authorization=ApiAuthorization.api_key(), cloud_watch_role=True))
        iam_rest = DelayedScheduler(self, "Signed", target=targets.SqsSendMessage(jobs), api=SchedulerApi.rest())
        iam_rest.grant_schedule(iam.Role(self, "Client", assumed_by=iam.AccountRootPrincipal()))


EveryAcknowledgement(app, "EveryAcknowledgement")
'''

#: The lines that add cdk-nag's AwsSolutions to ``app``: 3 as a validation plugin, 2 as an Aspect.
NAG = {
    3: "from aws_cdk import Validations\nfrom cdk_nag import AwsSolutionsChecks\n"
       "Validations.of(app).add_plugins(AwsSolutionsChecks(app))\n",
    2: "from cdk_nag import AwsSolutionsChecks\ncdk.Aspects.of(app).add(AwsSolutionsChecks())\n",
}


def acknowledging_app(nag_major: int) -> str:
    """The README's app with cdk-nag ``nag_major`` added and ``ACKNOWLEDGING_STACK`` beside its stack."""
    source = readme_stack()
    assert source.count("app = cdk.App()\n") == 1 and source.rstrip().endswith("app.synth()"), source
    source = source.replace("app = cdk.App()\n", "app = cdk.App()\n" + NAG[nag_major])
    return source.rstrip().removesuffix("app.synth()") + ACKNOWLEDGING_STACK + "app.synth()\n"


def nag2_target() -> Path:
    """A directory holding cdk-nag ``CDK_NAG_2`` alone, for ``PYTHONPATH``."""
    def build(path: Path) -> None:
        subprocess.run([str(Path(sys.executable).with_name("uv")), "pip", "install", "-q", "--no-deps", "--target",
                        str(path), f"cdk-nag=={CDK_NAG_2}"], check=True, env=uv_env())

    return cached_dir("cdk-nag2", CDK_NAG_2, build)


# --- security gates: grants, cdk-nag 3's report, cfn-lint -------------------------------------
#: The state machine and the function (invoked as an event) that the ``fanout`` variant imports as targets.
FANOUT_STATE_MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:fulfil"
FANOUT_EVENT_FUNCTION = "arn:aws:lambda:eu-west-1:123456789012:function:audit"
#: The signing secret the ``fanout`` variant's HTTPS target imports (with a key of the stack).
FANOUT_HOOK_SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf"
#: The security gates' configurations: each API kind, a customer managed key or none, an explicit
#: environment or none, listing on or off.
SECURITY_VARIANTS = {
    "Http": dict(api="HTTP", key=False, env=False, listing=False, tracing=False, periodic=True, fanout=False),
    "Rest": dict(api="REST", key=False, env=False, listing=False, tracing=False, periodic=False, fanout=False),
    "NoApi": dict(api="NONE", key=False, env=False, listing=False, tracing=False, periodic=False, fanout=False),
    "HttpKey": dict(api="HTTP", key=True, env=False, listing=False, tracing=False, periodic=False, fanout=True),
    "RestKey": dict(api="REST", key=True, env=False, listing=True, tracing=False, periodic=False, fanout=False),
    "HttpKeyEnv": dict(api="HTTP", key=True, env=True, listing=True, tracing=False, periodic=False, fanout=False),
    "RestKeyEnv": dict(api="REST", key=True, env=True, listing=False, tracing=True, periodic=False, fanout=False),
}


def resource_names(stack, within: str) -> dict[str, str]:
    """{logical id: construct path below ``stack``} of each CloudFormation resource, without the
    trailing ``/Resource`` and the leading ``within/`` (the scheduler's id): ``Table``, ``ApiFunctionRole``,
    ``Api/DeploymentStage.v1``, and the test's own ``Client``, ``Key``..."""
    import aws_cdk as cdk

    names = {}
    for node in stack.node.find_all():
        if cdk.CfnResource.is_cfn_resource(node):
            path = node.node.path.removeprefix(f"{stack.node.path}/").removesuffix("/Resource")
            names[stack.get_logical_id(node)] = path.removeprefix(f"{within}/")
    return names


def render(value, names: dict[str, str], types: dict[str, str]) -> str:
    """A template value as readable text: ``{"Ref": pseudo}`` as ``${AWS::Region}``, ``{"Ref": X}`` as
    ``<X>``, ``{"Fn::GetAtt": [X, A]}`` as ``<X.A>`` (by construct path), ``Fn::Join`` joined; a log
    group's ``Arn``, which CloudFormation returns as ``arn:...:log-group:<name>:*``, as ``log-group:<X>:*``."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        ref = value["Ref"]
        return f"${{{ref}}}" if ref.startswith("AWS::") else f"<{names[ref]}>"
    if "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        if (types[logical_id], attribute) == ("AWS::Logs::LogGroup", "Arn"):
            return f"log-group:<{names[logical_id]}>:*"
        return f"<{names[logical_id]}.{attribute}>"
    if "Fn::Join" in value:
        delimiter, parts = value["Fn::Join"]
        return delimiter.join(render(part, names, types) for part in parts)
    raise ValueError(f"cannot render {value!r}")


def _listed(value) -> list:
    return value if isinstance(value, list) else [value]


def grants(template: dict, names: dict[str, str]) -> dict[str, set[tuple[str, str]]]:
    """{principal: {(action, resource)}}: every Allow the template grants. Identity policies are under
    the role's name (a managed policy as ``("managed policy", arn)``); resource policies (Lambda
    permissions, queue and key policies) under the principal, a key policy's ``*`` as ``* of <Key>``.
    A resource is followed by each condition of its statement (`` if aws:SourceArn = ...``)."""
    types = {k: v["Type"] for k, v in template["Resources"].items()}
    out: dict[str, set[tuple[str, str]]] = {}

    def text(value) -> str:
        return render(value, names, types)

    def allow(principal: str, statements: list[dict], owner: str = "") -> None:
        for s in statements:
            if s["Effect"] != "Allow":
                continue
            suffix = "".join(f" if {key} = {text(value)}" for condition in s.get("Condition", {}).values()
                             for key, value in condition.items())
            for action in _listed(s["Action"]):
                for resource in _listed(s["Resource"]):
                    shown = f"* of <{owner}>" if owner and resource == "*" else text(resource)
                    out.setdefault(principal or _principal(s["Principal"], text), set()).add((action, shown + suffix))

    for logical_id, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Policy":
            for role in props.get("Roles", []):
                allow(names[role["Ref"]], props["PolicyDocument"]["Statement"])
        elif resource["Type"] == "AWS::IAM::Role":
            for arn in props.get("ManagedPolicyArns", []):
                out.setdefault(names[logical_id], set()).add(("managed policy", text(arn)))
            for policy in props.get("Policies", []):
                allow(names[logical_id], policy["PolicyDocument"]["Statement"])
        elif resource["Type"] == "AWS::Lambda::Permission":
            out.setdefault(props["Principal"], set()).add(
                (props["Action"], f"{text(props['FunctionName'])} if aws:SourceArn = {text(props['SourceArn'])}"))
        elif resource["Type"] == "AWS::SQS::QueuePolicy":
            allow("", props["PolicyDocument"]["Statement"])
        elif resource["Type"] == "AWS::KMS::Key":
            allow("", props["KeyPolicy"]["Statement"], owner=names[logical_id])
    return out


def _principal(principal: dict, text) -> str:
    (kind, value), = principal.items()
    return value if kind == "Service" else text(value)


def nag_violations(outdir) -> list[tuple[str, str, str]]:
    """(rule, severity, construct path) of each finding in the cloud assembly's ``validation-report.json``
    (cdk-nag 3 run as a validation plugin); none when the report is absent (nothing found)."""
    import json
    from pathlib import Path

    report = Path(outdir) / "validation-report.json"
    if not report.exists():
        return []
    return [(v["ruleName"], v.get("severity"), c["constructPath"])
            for plugin in json.loads(report.read_text()).get("pluginReports", [])
            for v in plugin.get("violations", []) for c in v.get("violatingConstructs", [])]


def nag_findings(app, outdir) -> list[tuple[str, str, str]]:
    """Synthesize ``app`` (its ``outdir``) with cdk-nag's AwsSolutions as a validation plugin: its findings, as
    :func:`nag_violations` reads them (a validation failure is not raised: its findings are the answer)."""
    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks

    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    try:
        app.synth()
    except Exception:  # noqa: BLE001 - a validation failure: its findings are read from the report below
        pass
    return nag_violations(outdir)


def cfn_lint(paths) -> list[dict]:
    """cfn-lint's findings (JSON) over the templates at ``paths``, for two regions."""
    import json

    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), "--format", "json", "--regions", "us-east-1", "eu-west-1",
         "--", *map(str, paths)], capture_output=True, text=True, check=False)
    assert result.stdout.strip(), result.stderr
    return json.loads(result.stdout)


def nag_clean_callback(stack, id: str = "Callback"):
    """A ``targets.LambdaInvoke`` function that cdk-nag (AwsSolutions) passes: the newest Python, its own
    role writing to its own log group (no managed policy)."""
    import aws_cdk as cdk
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_logs as logs

    role = iam.Role(stack, f"{id}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    log_group = logs.LogGroup(stack, f"{id}Logs", retention=logs.RetentionDays.ONE_WEEK,
                              removal_policy=cdk.RemovalPolicy.DESTROY)
    role.add_to_policy(iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                                           resources=[log_group.log_group_arn]))
    return lambda_.Function(stack, id, runtime=lambda_.Runtime.PYTHON_3_14, handler="index.handler", role=role,
                            log_group=log_group, code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"))
