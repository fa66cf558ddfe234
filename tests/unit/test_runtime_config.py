"""The runtime's configuration: every variable named by ``contract.json``, and a target description the
contract does not allow refused when the function starts, not at its first delivery."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scheduler_runtime.aws.config import ENV_KEYS, Config, ConfigError
from scheduler_runtime.core import contract

RUNTIME = Path(__file__).resolve().parents[2] / "lambda" / "scheduler_runtime"
ENV = contract.ENV
QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:f"


def config_with_targets(targets: str) -> Config:
    return Config.from_env({ENV.table_name: "schedules", ENV.targets: targets})


def test_every_variable_is_read_by_its_contract_name():
    env = {ENV.table_name: "t", ENV.delayer_queue_url: "d", ENV.dead_letter_queue_url: "q", ENV.shard_count: "7",
           ENV.delay_window_seconds: "120", ENV.history_retention_seconds: "600", ENV.max_receive_count: "4",
           ENV.dispatcher_timeout_seconds: "30", ENV.listing: "true", ENV.metrics_namespace: "Mine",
           ENV.targets: f'{{"default": {{"type": "lambda", "functionArn": "{FUNCTION}"}}}}'}
    config = Config.from_env(env)
    assert (config.table_name, config.delayer_queue_url, config.dead_letter_queue_url, config.shard_count,
            config.delay_window_seconds, config.history_retention_seconds, config.max_receive_count,
            config.dispatcher_timeout_seconds, config.listing, config.metrics_namespace) == (
        "t", "d", "q", 7, 120, 600, 4, 30, True, "Mine")
    assert config.targets == {"default": {"type": "lambda", "functionArn": FUNCTION}}
    assert ENV_KEYS == ENV.names()


def test_defaults_are_the_contracts():
    config = Config.from_env({ENV.table_name: "t"})
    assert config.metrics_namespace == contract.DEFAULT_METRICS_NAMESPACE
    assert (config.shard_count, config.delay_window_seconds) == (contract.SHARD_COUNT.default,
                                                                contract.DELAY_WINDOW_SECONDS.default)
    with pytest.raises(ConfigError, match=f"^{ENV.table_name} is not set$"):
        Config.from_env({})


def test_no_runtime_module_spells_an_environment_name_or_the_namespace_default():
    literals = [f'"{name}"' for name in ENV.names()] + [f'"{contract.DEFAULT_METRICS_NAMESPACE}"']
    found = {f"{path.relative_to(RUNTIME)}: {literal}" for path in RUNTIME.rglob("*.py")
             for literal in literals if literal in path.read_text(encoding="utf-8")}
    assert found == set()


@pytest.mark.parametrize("description, problem", [
    ('"jobs"', "must be a JSON object"),
    ('{"type": "http", "url": "https://example.com"}', "type 'http' is not supported"),
    (f'{{"type": "sqs", "queueUrl": "{QUEUE}"}}', "the sqs target needs fifo"),
    (f'{{"type": "lambda", "functionArn": "{FUNCTION}", "qualifier": "live"}}', "the lambda target takes no qualifier"),
    (f'{{"type": "lambda", "functionArn": "{FUNCTION}", "invocationType": "DryRun"}}',
     "the lambda target's invocationType must be one of RequestResponse, Event, got 'DryRun'"),
])
def test_a_target_description_the_contract_does_not_allow_is_refused_at_start(description, problem):
    with pytest.raises(ConfigError) as refused:
        config_with_targets(f'{{"default": {{"type": "lambda", "functionArn": "{FUNCTION}"}}, "jobs": {description}}}')
    assert str(refused.value).startswith(f"{ENV.targets}: target 'jobs': ")
    assert problem in str(refused.value)


def test_every_kind_of_target_the_contract_allows_is_accepted():
    targets = config_with_targets(
        f'{{"f": {{"type": "lambda", "functionArn": "{FUNCTION}"}}, "q": {{"type": "sqs", "queueUrl": "{QUEUE}", '
        f'"fifo": true, "messageGroupId": "g"}}}}').targets
    assert {name: description["type"] for name, description in targets.items()} == {"f": "lambda", "q": "sqs"}
    assert set(contract.TARGET_TYPES) == {"lambda", "sqs", "sns", "eventbridge", "stepfunctions", "https"}  # the others: test_target_contract.py


@pytest.mark.parametrize("targets, message", [("{", "is not valid JSON"), ("[]", "must be a JSON object")])
def test_targets_that_are_not_an_object_of_descriptions_are_refused(targets, message):
    with pytest.raises(ConfigError, match=re.escape(f"{ENV.targets} ") + message):
        config_with_targets(targets)
