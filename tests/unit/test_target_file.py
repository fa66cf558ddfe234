"""``--targets FILE``: the construct's target descriptions, less the resource names the engine makes itself."""

from __future__ import annotations

import json

import pytest

from cdk_delayed_scheduler.local.deliveries import (BusTarget, HttpsTarget, LambdaTarget, QueueTarget,
                                                    StateMachineTarget, TopicTarget)
from cdk_delayed_scheduler.local.target_file import read_target_file


def _read(tmp_path, document):
    path = tmp_path / "targets.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return read_target_file(path)


def test_each_kind_becomes_the_engines_target_of_that_kind(tmp_path):
    assert _read(tmp_path, {
        "orders": {"type": "sqs", "fifo": True, "messageGroupId": "orders"},
        "plain": {"type": "sqs"},
        "alerts": {"type": "sns"},
        "ordered": {"type": "sns", "fifo": True},
        "events": {"type": "eventbridge", "detailType": "Reminder due", "source": "my.app"},
        "flows": {"type": "stepfunctions"},
        "audit": {"type": "lambda", "handler": "json:loads", "invocationType": "Event"},
        "check": {"type": "lambda", "handler": "json:dumps"},
        "hook": {"type": "https", "url": "http://127.0.0.1:9000/t", "secret": "s", "timeoutSeconds": 5,
                 "headers": {"X-App": "a"}},
    }) == {"hook": HttpsTarget("http://127.0.0.1:9000/t", "s", headers={"X-App": "a"}, timeout_seconds=5),"orders": QueueTarget(fifo=True, message_group_id="orders"), "plain": QueueTarget(),
           "alerts": TopicTarget(), "ordered": TopicTarget(fifo=True),
           "events": BusTarget(detail_type="Reminder due", source="my.app"), "flows": StateMachineTarget(),
           "audit": LambdaTarget(json.loads, invocation_type="Event"), "check": LambdaTarget(json.dumps)}


@pytest.mark.parametrize(("document", "message"), [
    ("{not json", r"cannot be read as JSON"),
    ([], r"must be a JSON object of target name -> description"),
    ({}, r"with one or more"),
    ({"x": {"type": "webhook"}}, r"'x': must be an object whose type is one of eventbridge, https, lambda, sns, "
                                 r"sqs, stepfunctions"),
    ({"x": {"type": "https", "url": "https://h/", "secret": "s", "secretArn": "arn"}}, r"'x': leave out secretArn"),
    ({"x": {"type": "https", "url": "http://example.com/", "secret": "s"}},
     r"'x': url: http:// is allowed on the local engine only to 127.0.0.1, localhost, ::1, got 'http://example.com/'"),
    ({"x": {"type": "https", "url": "ftp://h/", "secret": "s"}}, r"'x': url must be an https:// URL, got 'ftp://h/'"),
    ({"x": {"type": "https", "url": "https://h/"}}, r"'x': secret must be a non-empty string"),
    ({"x": {"type": "https", "url": "https://h/", "secret": "s", "timeoutSeconds": 31}},
     r"'x': timeoutSeconds must be a whole number of seconds from 1 to 30, got 31"),
    ({"x": {"type": "https", "url": "https://h/", "secret": "s", "headers": {"X-N": 1}}},
     r"'x': headers must map header names to values, both strings"),
    ({"x": {"type": "stepfunctions", "stateMachineArn": "arn"}}, r"'x': leave out stateMachineArn"),
    ({"x": {"type": "stepfunctions", "express": True}}, r"unknown field express \(a stepfunctions target takes no other field\)"),
    ({"x": {"type": "lambda"}}, r"'x': handler must be a non-empty string, got None"),
    ({"x": {"type": "lambda", "handler": "json:loads", "functionArn": "arn"}}, r"'x': leave out functionArn"),
    ({"x": {"type": "lambda", "handler": "no_such_module_xyz:f"}}, r"'x': handler 'no_such_module_xyz:f' cannot be "
                                                                   r"loaded"),
    ({"x": {"type": "lambda", "handler": "json:loads", "invocationType": "DryRun"}},
     r"'x': invocationType must be one of RequestResponse, Event, got 'DryRun'"),
    ({"x": {"type": "sns", "topicArn": "arn:aws:sns:us-east-1:1:t"}}, r"'x': leave out topicArn: the engine creates"),
    ({"x": {"type": "sqs", "queueUrl": "http://q"}}, r"leave out queueUrl"),
    ({"x": {"type": "sqs", "fifo": "yes"}}, r"'x': fifo must be true or false, got 'yes'"),
    ({"x": {"type": "sns", "messageGroupId": "g"}}, r"messageGroupId is for a FIFO sns target only"),
    ({"x": {"type": "eventbridge", "source": "my.app"}}, r"'x': detailType must be a non-empty string, got None"),
    ({"x": {"type": "eventbridge", "detailType": "d", "source": ""}}, r"source must be a non-empty string"),
    ({"x": {"type": "sqs", "group": "g"}}, r"unknown field group \(a sqs target takes fifo, messageGroupId\)"),
])
def test_a_bad_file_is_refused_naming_the_target_and_the_field(tmp_path, document, message):
    with pytest.raises(ValueError, match=message):
        _read(tmp_path, document)
