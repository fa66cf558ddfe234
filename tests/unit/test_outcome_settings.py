"""A deployment's outcome settings (``OUTCOMES``) as the runtime reads them at start: what it takes, and the
refusal, naming what is wrong, of what it does not."""

from __future__ import annotations

import json

import pytest

from scheduler_runtime.aws.config import Config, ConfigError
from scheduler_runtime.core import outcomes

QUEUE = {"type": "sqs", "queueUrl": "https://sqs.example/outcomes", "fifo": False}


def test_the_default_kinds_leave_cancelled_out_and_the_payload_stays_behind():
    settings = Config.from_env({"TABLE_NAME": "t", "OUTCOMES": json.dumps({"target": QUEUE})}).outcomes
    assert settings is not None
    assert sorted(settings.kinds) == ["DELIVERED", "FAILED", "STALE"] and settings.include_payload is False
    assert not settings.wants(outcomes.Kind.CANCELLED)


def test_a_deployment_without_the_variable_has_no_outcomes():
    assert Config.from_env({"TABLE_NAME": "t"}).outcomes is None


@pytest.mark.parametrize(("value", "said"), [
    ({"target": {"type": "sqs"}}, "OUTCOMES: target: the sqs target needs queueUrl, fifo"),
    ({"target": QUEUE, "kinds": ["LOST"]}, "OUTCOMES: kinds must be a non-empty list of DELIVERED, FAILED, STALE, "
                                           "CANCELLED, got ['LOST']"),
    ({"target": QUEUE, "kinds": []}, "OUTCOMES: kinds must be a non-empty list"),
    ({"target": QUEUE, "includePayload": "yes"}, "OUTCOMES: includePayload must be true or false, got 'yes'"),
    ({"target": QUEUE, "colour": "red"}, "OUTCOMES: takes no colour (only target, kinds and includePayload)"),
    ([QUEUE], "OUTCOMES: must be a JSON object with a target"),
])
def test_a_malformed_setting_is_refused_at_start_naming_what_is_wrong(value, said):
    with pytest.raises(ConfigError) as refused:
        Config.from_env({"TABLE_NAME": "t", "OUTCOMES": json.dumps(value)})
    assert str(refused.value).startswith(said)


def test_a_park_whose_reason_is_the_lateness_bound_is_a_stale_outcome_and_any_other_a_failed_one():
    assert outcomes.kind_of_park("stale: it would start 31 s after its due time") is outcomes.Kind.STALE
    assert outcomes.kind_of_park("delivery failed after 5 attempts: maxAttempts 5 reached") is outcomes.Kind.FAILED


def test_an_answer_is_cut_to_the_contracts_length_and_leaves_out_what_is_unknown():
    summary = outcomes.answer_summary(status=200, body="x" * 1000, missing=None)
    assert summary == {"status": 200, "body": "x" * outcomes.ANSWER_MAX_CHARS}


def test_an_outcomes_target_with_flow_control_is_refused():
    limited = {**QUEUE, "flowControl": {"rate": 5}}
    with pytest.raises(ConfigError, match="OUTCOMES: target: the outcomes target takes no flowControl"):
        Config.from_env({"TABLE_NAME": "t", "OUTCOMES": json.dumps({"target": limited})})
