"""The contract's check of an SNS and an EventBridge target description (``target_description_problem``),
which the construct applies at synth and the runtime when a function starts: each kind's required and
optional fields, by the names the runtime reads."""

from __future__ import annotations

import pytest

from scheduler_runtime.aws.config import Config, ConfigError
from scheduler_runtime.core import contract

TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"
BUS = "arn:aws:events:us-east-1:123456789012:event-bus/timers"
SNS = {"type": "sns", "topicArn": TOPIC, "fifo": False}
EVENTBRIDGE = {"type": "eventbridge", "eventBusArn": BUS, "detailType": "Timer due", "source": "com.example.timers"}


@pytest.mark.parametrize("description", [
    SNS,
    {**SNS, "topicArn": f"{TOPIC}.fifo", "fifo": True, "messageGroupId": "orders"},
    EVENTBRIDGE,
], ids=["sns", "sns-fifo-with-group", "eventbridge"])
def test_an_sns_or_eventbridge_description_with_its_fields_is_deliverable(description):
    assert contract.target_description_problem(description) is None


def test_the_sns_and_eventbridge_kinds_name_the_fields_the_runtime_reads():
    sns, eventbridge = contract.TARGET_TYPES["sns"], contract.TARGET_TYPES["eventbridge"]
    assert (dict(sns.required), dict(sns.optional)) == ({"topicArn": "string", "fifo": "boolean"},
                                                        {"messageGroupId": "string"})
    assert (dict(eventbridge.required), dict(eventbridge.optional)) == (
        {"eventBusArn": "string", "detailType": "string", "source": "string"}, {})


@pytest.mark.parametrize(("description", "problem"), [
    ({"type": "sns", "fifo": False}, "the sns target needs topicArn"),
    ({"type": "sns", "topicArn": TOPIC}, "the sns target needs fifo"),
    ({**SNS, "subject": "hi"}, "the sns target takes no subject"),
    ({"type": "eventbridge", "eventBusArn": BUS, "source": "s"}, "the eventbridge target needs detailType"),
    ({"type": "eventbridge", "eventBusArn": BUS}, "the eventbridge target needs detailType, source"),
    ({"type": "eventbridge", "detailType": "d", "source": "s"}, "the eventbridge target needs eventBusArn"),
    ({**EVENTBRIDGE, "messageGroupId": "g"}, "the eventbridge target takes no messageGroupId"),
    ({"type": "events", "eventBusArn": BUS}, "type 'events' is not supported; supported kinds: eventbridge, https, "
                                             "lambda, sns, sqs, stepfunctions"),
])
def test_a_description_missing_a_field_or_with_another_kinds_field_is_refused(description, problem):
    assert contract.target_description_problem(description) == problem


def test_the_runtime_refuses_a_bad_eventbridge_description_when_it_starts():
    with pytest.raises(ConfigError, match=r"^TARGETS: target 'events': the eventbridge target needs source$"):
        Config.from_env({contract.ENV.table_name: "t",
                         contract.ENV.targets: f'{{"events": {{"type": "eventbridge", "eventBusArn": "{BUS}", '
                                               '"detailType": "d"}}'})


HTTPS = {"type": "https", "url": "https://hooks.example.com/timers", "secretArn": "arn:aws:secretsmanager:us-east-1:"
         "123456789012:secret:timers-AbCdEf", "timeoutSeconds": 10}


@pytest.mark.parametrize(("description", "problem"), [
    (HTTPS, None),
    ({**HTTPS, "headers": {"X-Tenant": "acme"}}, None),
    ({k: v for k, v in HTTPS.items() if k != "secretArn"}, "the https target needs secretArn"),
    ({**HTTPS, "followRedirects": True}, "the https target takes no followRedirects"),
], ids=["https", "https-with-headers", "https-without-secret", "https-with-another-field"])
def test_an_https_description_names_the_url_the_signing_secret_and_the_timeout(description, problem):
    assert contract.target_description_problem(description) == problem
