"""Reading alarms and dashboards back from a synthesized template: a construct's reference, an alarm's properties and
what it reads, a dashboard body's parts."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from construct_stacks import Built


def ref(b: Built, construct) -> dict:
    return {"Ref": b.stack.get_logical_id(construct.node.default_child)}


def alarm_props(b: Built, alarm: cloudwatch.Alarm) -> dict:
    return b.json["Resources"][b.stack.get_logical_id(alarm.node.default_child)]["Properties"]


def reads(props: dict) -> tuple:
    """(namespace, metric, statistic, dimensions, threshold, evaluation periods, period) of one alarm."""
    dimensions = {d["Name"]: d["Value"] for d in props["Dimensions"]}
    statistic = props.get("Statistic") or props.get("ExtendedStatistic")
    return (props["Namespace"], props["MetricName"], statistic, dimensions, props["Threshold"],
            props["EvaluationPeriods"], props["Period"])


def body_parts(b: Built, dashboard: cloudwatch.Dashboard) -> list:
    """The dashboard body's ``Fn::Join`` parts: its JSON text around the references CloudFormation resolves."""
    body = b.json["Resources"][b.stack.get_logical_id(dashboard.node.default_child)]["Properties"]["DashboardBody"]
    return body["Fn::Join"][1] if isinstance(body, dict) else [body]
