"""Several schedulers in one stack, and in several stacks of one app: the account-level API
Gateway logging role is created at most once per environment (or never, with CDK's
``@aws-cdk/aws-apigateway:disableCloudWatchRole`` flag), and each scheduler's metrics are its own."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from cdk_delayed_scheduler import DelayedScheduler, SchedulerApi, targets
from construct_helpers import resources_of

FLAG = "@aws-cdk/aws-apigateway:disableCloudWatchRole"
ENV = cdk.Environment(account="123456789012", region="eu-west-1")
ELSEWHERE = cdk.Environment(account="123456789012", region="us-east-1")


def _add(stack: cdk.Stack, id: str, api: SchedulerApi | None = None) -> DelayedScheduler:
    queue = sqs.Queue(stack, f"{id}Deliveries", enforce_ssl=True)
    return DelayedScheduler(stack, id, target=targets.SqsSendMessage(queue), api=api)


@pytest.fixture(scope="module")
def app():
    """Without the flag (CDK's old default): REST schedulers want the account's logging role."""
    app = cdk.App()
    pair = cdk.Stack(app, "Pair", env=ENV)
    http = _add(pair, "Orders")
    both_rest = (_add(pair, "RestOne", SchedulerApi.rest()), _add(pair, "RestTwo", SchedulerApi.rest()))
    second = cdk.Stack(app, "Second", env=ENV)
    later = _add(second, "Timers", SchedulerApi.rest())
    elsewhere = cdk.Stack(app, "Elsewhere", env=ELSEWHERE)
    _add(elsewhere, "Timers", SchedulerApi.rest())
    templates = {s.stack_name: Template.from_stack(s).to_json() for s in (pair, second, elsewhere)}
    return {"app": app, "pair": pair, "second": second, "elsewhere": elsewhere, "http": http,
            "rest": both_rest, "later": later, "templates": templates}


def _accounts(template: dict) -> dict:
    return resources_of(template, "AWS::ApiGateway::Account")


def test_one_account_setting_per_environment_in_a_stack_and_across_stacks(app):
    templates = app["templates"]
    (account_id, account), = _accounts(templates["Pair"]).items()
    assert account_id.startswith("RestOneApiAccount")  # the first REST scheduler's (its construct IDs kept)
    assert account["DeletionPolicy"] == "Retain"
    assert _accounts(templates["Second"]) == {}
    assert len(_accounts(templates["Elsewhere"])) == 1  # another region: its own setting
    # one logging role per Account, none for the others
    roles = [k for k in resources_of(templates["Pair"], "AWS::IAM::Role") if "CloudWatchRole" in k]
    assert len(roles) == 1 and roles[0].startswith("RestOneApiCloudWatchRole")
    assert [k for k in resources_of(templates["Second"], "AWS::IAM::Role") if "CloudWatchRole" in k] == []


def test_later_rest_apis_wait_for_the_account_setting(app):
    pair = app["templates"]["Pair"]
    (account_id,) = _accounts(pair)
    stages = {k: v for k, v in resources_of(pair, "AWS::ApiGateway::Stage").items()}
    assert len(stages) == 2 and all(account_id in v.get("DependsOn", []) for v in stages.values()), stages
    # across stacks: the second stack deploys after the first
    assert app["pair"] in app["second"].dependencies
    assert app["pair"] not in app["elsewhere"].dependencies


def test_with_cdks_flag_none_by_default_and_true_still_creates_one():
    """The fixture's app has no flag: there the default creates one (above)."""
    app = cdk.App(context={FLAG: True})
    stack = cdk.Stack(app, "S", env=ENV)
    _add(stack, "Default", SchedulerApi.rest())
    chosen = cdk.Stack(app, "Chosen", env=ELSEWHERE)
    _add(chosen, "One", SchedulerApi.rest(cloud_watch_role=True))
    _add(chosen, "Two", SchedulerApi.rest(cloud_watch_role=True))
    assert len(_accounts(Template.from_stack(stack).to_json())) == 0
    assert len(_accounts(Template.from_stack(chosen).to_json())) == 1


def test_each_scheduler_has_its_own_lateness_metric(app):
    pair = app["pair"]
    schedulers = (app["http"], *app["rest"])
    rendered = [pair.resolve(s.metric_lateness().dimensions) for s in schedulers]
    assert len({json.dumps(d, sort_keys=True) for d in rendered}) == 3
    for scheduler, dimensions in zip(schedulers, rendered):
        dispatcher = pair.get_logical_id(scheduler.dispatcher_function.node.default_child)
        assert dimensions == {"Service": "DelayedScheduler", "FunctionName": {"Ref": dispatcher}}
    later = app["later"]
    assert app["second"].resolve(later.metric_lateness().dimensions)["FunctionName"] == {
        "Ref": app["second"].get_logical_id(later.dispatcher_function.node.default_child)}


def test_metric_lateness_reads_what_the_runtime_emits(app):
    """``metric_lateness`` reads the namespace, figure and dimensions that ``contract.json`` gives the
    runtime (``tests/handlers/test_metrics_emitted.py`` checks the dispatcher's EMF record against
    the same contract), with this scheduler's dispatcher as ``FunctionName``."""
    from cdk_delayed_scheduler._contract import contract

    dimensions = contract.METRIC_DIMENSIONS
    metric = app["http"].metric_lateness()
    assert (metric.namespace, metric.metric_name) == (app["http"].metrics_namespace, contract.LATENESS_METRIC)
    assert sorted(metric.dimensions) == sorted({*dimensions, "FunctionName"})
    assert {k: metric.dimensions[k] for k in dimensions} == dict(dimensions)
