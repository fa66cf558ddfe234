"""The runtime's Lambda functions: one asset, each function with its own role and log group."""

from __future__ import annotations

import re
from typing import Any, Mapping, cast

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from . import _nag
from ._log_level import LogLevel
from ._runtime_asset import ASSET_EXCLUDES, function_asset_path

_HANDLER_MODULE = "scheduler_runtime.handlers"
_QUIET_LEVELS = (LogLevel.WARNING, LogLevel.ERROR, LogLevel.CRITICAL)

#: The functions' runtime unless the ``runtime`` prop says otherwise: the newest Python on which the suite runs
#: the runtime's tests (``./dev test --all``: tests/e2e/test_runtime_interpreters.py runs them on this
#: runtime's Python). Pinned: it changes with a release of this package, never with an upgrade of aws-cdk-lib.
DEFAULT_RUNTIME: lambda_.Runtime = lambda_.Runtime.PYTHON_3_13


def newest_python_runtime() -> lambda_.Runtime:
    """The newest ``PYTHON_3_x`` runtime this aws-cdk-lib offers (what cdk-nag's AwsSolutions-L1 asks for)."""
    versions = [int(m.group(1)) for name in dir(lambda_.Runtime) if (m := re.fullmatch(r"PYTHON_3_(\d+)", name))]
    runtime: lambda_.Runtime = getattr(lambda_.Runtime, f"PYTHON_3_{max(versions)}")
    return runtime


def _python_version(runtime: lambda_.Runtime) -> tuple[int, ...]:
    return tuple(int(part) for part in runtime.name.removeprefix("python").split("."))


def acknowledge_pinned_runtime(function: lambda_.Function, runtime: lambda_.Runtime) -> None:
    """AwsSolutions-L1 (not the newest runtime) on a function of the default runtime, only while this
    aws-cdk-lib offers a newer Python; a runtime the user chose is the user's to answer."""
    if runtime.name != DEFAULT_RUNTIME.name:
        return
    newest = newest_python_runtime()
    if _python_version(newest) <= _python_version(DEFAULT_RUNTIME):
        return
    _nag.acknowledge(
        cast(lambda_.CfnFunction, function.node.default_child),  # what the rule reads, not what is added under it
        rule="AwsSolutions-L1",
        reason=f"cdk-delayed-scheduler's runtime is tested on {DEFAULT_RUNTIME.name}, its default runtime, "
               f"and pinned there so that an aws-cdk-lib upgrade never changes it; {newest.name} is chosen "
               f"with the runtime prop (runtime=Runtime.{_runtime_attribute(newest)}).",
    )


def _runtime_attribute(runtime: lambda_.Runtime) -> str:
    """The ``lambda.Runtime`` attribute that names ``runtime``: ``PYTHON_3_13`` for ``python3.13``."""
    return runtime.name.upper().replace("PYTHON", "PYTHON_").replace(".", "_")


def logging_config(level: LogLevel) -> dict[str, Any]:
    """Lambda's log settings for the runtime's ``level``. The JSON format lets Lambda filter: system
    level WARN drops START/END/REPORT when the runtime is quiet. The application level stays at
    INFO (DEBUG for DEBUG): the EMF metric lines carry no level, and Lambda counts those as INFO.
    A token level keeps the text format (nothing filtered)."""
    if level.is_token:
        return {}
    return dict(
        logging_format=lambda_.LoggingFormat.JSON,
        system_log_level_v2=lambda_.SystemLogLevel.WARN if level in _QUIET_LEVELS else lambda_.SystemLogLevel.INFO,
        application_log_level_v2=(lambda_.ApplicationLogLevel.DEBUG if level == LogLevel.DEBUG
                                  else lambda_.ApplicationLogLevel.INFO),
    )


def function_options(runtime: lambda_.Runtime, architecture: lambda_.Architecture, level: LogLevel,
                     tracing: lambda_.Tracing = lambda_.Tracing.DISABLED) -> dict[str, Any]:
    """What every runtime function shares: runtime, architecture, the code asset (the runtime and the
    ``tzdata`` package, see ``function_asset_path``), log settings, X-Ray tracing."""
    return dict(runtime=runtime, architecture=architecture,
                code=lambda_.Code.from_asset(str(function_asset_path()), exclude=ASSET_EXCLUDES),
                tracing=tracing, **logging_config(level))


def acknowledge_tracing(role: iam.Role, tracing: Any) -> None:
    """AwsSolutions-IAM5 on the X-Ray statement Lambda's tracing adds to ``role``: X-Ray's write actions
    take no resource."""
    if tracing is None or tracing == lambda_.Tracing.DISABLED:
        return
    _nag.acknowledge(
        role.node.find_child("DefaultPolicy"),
        rule="AwsSolutions-IAM5[Resource::*]",
        reason="X-Ray tracing (the tracing prop): xray:PutTraceSegments and xray:PutTelemetryRecords do not "
               "support resource-level permissions, so Lambda's tracing grants them on *.",
    )


def runtime_function(scope: Construct, id: str, module: str, memory_size: Any, timeout: Duration, description: str,
                     *, runtime: lambda_.Runtime, environment: Mapping[str, str], log_retention: logs.RetentionDays,
                     removal_policy: RemovalPolicy, **options: Any) -> lambda_.Function:
    """``<id>`` running ``scheduler_runtime.handlers.<module>``, with ``<id>Role`` and ``<id>Logs``."""
    role = iam.Role(scope, f"{id}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                    description=f"{description} (delayed scheduler)")
    log_group = logs.LogGroup(scope, f"{id}Logs", retention=log_retention, removal_policy=removal_policy)
    # Instead of the managed AWSLambdaBasicExecutionRole: write to this function's log group only.
    role.add_to_principal_policy(iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                                                     resources=[log_group.log_group_arn]))
    function = lambda_.Function(scope, id, description=description, handler=f"{_HANDLER_MODULE}.{module}.handler",
                                memory_size=memory_size, timeout=timeout, runtime=runtime, role=role,
                                log_group=log_group, environment=dict(environment), **options)
    acknowledge_pinned_runtime(function, runtime)
    acknowledge_tracing(role, options.get("tracing"))
    return function
