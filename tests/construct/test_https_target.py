"""``targets.HttpsEndpoint``: the description it renders (the contract's fields), the dispatcher's exact
grant (``secretsmanager:GetSecretValue`` on the signing secret alone, and ``kms:Decrypt`` on its key only
through Secrets Manager when it has one), and every bad argument refused at synth with the prop named,
tokens left to deploy time."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._contract import contract
from construct_stacks import logical_id, policy, rendered_targets

PARTNER_ARN = "arn:<AWS::Partition>:secretsmanager:eu-west-1:123456789012:secret:partner/hooks"


@pytest.fixture(scope="module")
def app() -> cdk.App:
    """One app for the module's stacks, never synthesized: a scheduler in a new app stages the functions'
    asset again, one in a new stack of an app where it is staged costs a fraction of that."""
    return cdk.App()


@pytest.fixture()
def stack(app) -> cdk.Stack:
    """A stack of the test's own in the module's app."""
    return cdk.Stack(app, f"S{len(app.node.children)}")


@pytest.fixture()
def secret(stack) -> secretsmanager.ISecret:
    return secretsmanager.Secret.from_secret_complete_arn(
        stack, "Secret", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf")


def _joined(value) -> str:
    """A ``Fn::Join`` of text and pseudo parameters as one string (``<AWS::Partition>``)."""
    if isinstance(value, str):
        return value
    return "".join(p if isinstance(p, str) else f"<{p['Ref']}>" for p in value["Fn::Join"][1])


def test_each_endpoint_is_rendered_with_the_contracts_fields(stacks):
    b = stacks["https"]
    plain, keyed = logical_id(b, b.extra["plain"]), logical_id(b, b.extra["keyed"])
    rendered = rendered_targets(b)
    partner = rendered["partner"].pop("secretArn")
    assert rendered == {
        "default": {"type": "https", "url": "https://hooks.example.com/timers", "secretArn": f"<Ref {plain}>",
                    "timeoutSeconds": 10},
        "keyed": {"type": "https", "url": "https://hooks.example.com:8443/due?tenant=acme",
                  "secretArn": f"<Ref {keyed}>", "timeoutSeconds": 30,
                  "headers": {"X-Tenant": "acme", "Authorization-Hint": "none"}},
        "partner": {"type": "https", "url": "https://partner.example.org/", "timeoutSeconds": 10},
    }
    assert partner.endswith(":secretsmanager:eu-west-1:123456789012:secret:partner/hooks")
    assert set(contract.TARGET_TYPES["https"].required) | {"type"} == set(rendered["default"])
    assert b.scheduler.target_names == ["default", "keyed", "partner"]


def test_the_dispatcher_may_read_each_signing_secret_and_nothing_else_of_secrets_manager(stacks):
    b = stacks["https"]
    plain, keyed = logical_id(b, b.extra["plain"]), logical_id(b, b.extra["keyed"])
    statements = [s for s in policy(b, "DispatcherFunction") if "secretsmanager:" in str(s["Action"])]
    partner = statements.pop()
    assert statements == [
        {"Action": "secretsmanager:GetSecretValue", "Effect": "Allow", "Resource": {"Ref": plain}},
        {"Action": "secretsmanager:GetSecretValue", "Effect": "Allow", "Resource": {"Ref": keyed}},
    ]
    # imported by name: its full ARN is not known, so the ARN is followed by Secrets Manager's six characters
    assert {**partner, "Resource": _joined(partner["Resource"])} == {
        "Action": "secretsmanager:GetSecretValue", "Effect": "Allow", "Resource": PARTNER_ARN + "-??????"}


def test_the_dispatcher_may_decrypt_with_a_secrets_own_key_only_through_secrets_manager(stacks):
    b = stacks["https"]
    key = logical_id(b, b.extra["key"])
    decrypts = [s for s in policy(b, "DispatcherFunction") if "kms:" in str(s["Action"])]
    # one key statement: the key of the encrypted secret; the others' (AWS managed) keys need no grant
    assert decrypts == [{"Action": "kms:Decrypt", "Effect": "Allow", "Resource": {"Fn::GetAtt": [key, "Arn"]},
                         "Condition": {"StringEquals": {"kms:ViaService": "secretsmanager.eu-west-1.amazonaws.com"}}}]


def test_an_endpoint_counts_as_waited_for_by_the_dispatcher(stack, secret):
    endpoint = targets.HttpsEndpoint("https://h.example.com/", signing_secret=secret, timeout=cdk.Duration.seconds(30))
    with pytest.raises(ValueError, match=r"^dispatcher_timeout: must be at least 35 seconds to cover target "
                                         r"'default', an HTTPS endpoint with a 30-second timeout .* got 30 seconds$"):
        DelayedScheduler(stack, "Timers", target=endpoint, dispatcher_timeout=cdk.Duration.seconds(30))
    scheduler = DelayedScheduler(stack, "Ok", target=endpoint, dispatcher_timeout=cdk.Duration.seconds(35))
    assert scheduler.target_names == ["default"]


# --- bad input, refused with the prop named --------------------------------------------------------
@pytest.mark.parametrize(("url", "message"), [
    ("http://hooks.example.com/", r"only https:// is delivered to"),
    ("ftp://hooks.example.com/", r"only https:// is delivered to"),
    ("/timers", r"only https:// is delivered to"),
    ("hooks.example.com/timers", r"only https:// is delivered to"),
    ("https://", r"it has no host"),
    ("https:///path", r"it has no host"),
    ("https://user:pass@hooks.example.com/", r"user information \(user:password@\) is not sent"),
    ("https://user@hooks.example.com/", r"user information"),
    ("https://hooks.example.com/#part", r"a fragment \(#...\) is never sent"),
    ("https://hooks.example.com/#", r"a fragment"),
    ("https://hooks.example.com:99999/", r"its port is not a number from 0 to 65535"),
    ("https://hooks.example.com/a b", r"without spaces or control characters"),
    ("https://hooks.example.com/\r\nX: y", r"without spaces or control characters"),
    ("https://hooks.example.com/" + "a" * 2048, r"at most 2048 characters"),
])
def test_a_url_that_is_not_an_https_address_is_refused(secret, url, message):
    with pytest.raises(ValueError, match=r"^url: must be an https:// URL with a host, without user information or "
                                         r"a fragment.*" + message):
        targets.HttpsEndpoint(url, signing_secret=secret)


def test_a_url_that_is_not_text_is_refused(secret):
    with pytest.raises(ValueError, match=r"^url: must be a string, got int$"):
        targets.HttpsEndpoint(443, signing_secret=secret)  # type: ignore[arg-type]


@pytest.mark.parametrize(("headers", "message"), [
    ({"X Tenant": "a"}, r"^headers: 'X Tenant' is not a header name \(RFC 7230"),
    ({"": "a"}, r"^headers: '' is not a header name"),
    ({"X-Tenant:": "a"}, r"^headers: 'X-Tenant:' is not a header name"),
    ({"X-Tenant": "a\r\nX-Evil: 1"}, r"^headers: the value of 'X-Tenant' must be printable ASCII, spaces and tabs, "
                                     r"without CR, LF or other control characters$"),
    ({"X-Tenant": "a\nb"}, r"^headers: the value of 'X-Tenant' must be printable ASCII"),
    ({"X-Tenant": "caf\u00e9"}, r"^headers: the value of 'X-Tenant' must be printable ASCII"),
    ({"content-type": "text/plain"}, r"^headers: 'content-type' is set by the scheduler on every request "
                                     r"\(Content-Type\); the scheduler's own are Content-Type, Scheduler-Signature, "
                                     r"Scheduler-Schedule-Id, Scheduler-Dedupe-Key, Scheduler-Attempt, Content-Length, "
                                     r"Transfer-Encoding, Connection, Host and any Scheduler-\* name$"),
    ({"Content-Length": "1"}, r"^headers: 'Content-Length' is set by the scheduler"),
    ({"HOST": "evil.example.com"}, r"^headers: 'HOST' is set by the scheduler on every request \(Host\)"),
    ({"Scheduler-Signature": "t=1,v1=00"}, r"^headers: 'Scheduler-Signature' is set by the scheduler .*"
                                           r"\(Scheduler-Signature\)"),
    ({"scheduler-attempt": "1"}, r"^headers: 'scheduler-attempt' is set by the scheduler .*\(Scheduler-Attempt\)"),
    ({"Scheduler-Tenant": "a"}, r"^headers: 'Scheduler-Tenant' is set by the scheduler on every request \(every "
                                r"Scheduler-\* header\)"),
    ({"X-Tenant": "a", "x-tenant": "b"}, r"^headers: 'x-tenant' is given twice \(header names are case-insensitive\)$"),
    ({"X-Big": "v" * 2040}, r"^headers: must be at most 2048 bytes in all as sent .* got 2049$"),
    ({"X-Tenant": 7}, r"^headers: names and values must be strings, got 'X-Tenant': int$"),
    (["X-Tenant"], r"^headers: must be a mapping of header names to values, got list$"),
])
def test_headers_that_would_break_or_override_the_request_are_refused(secret, headers, message):
    with pytest.raises(ValueError, match=message):
        targets.HttpsEndpoint("https://h.example.com/", signing_secret=secret, headers=headers)


def test_the_largest_headers_and_every_token_character_are_accepted(secret):
    largest = targets.HttpsEndpoint("https://h.example.com/", signing_secret=secret, headers={"X-Big": "v" * 2039})
    assert largest.headers == {"X-Big": "v" * 2039}
    names = {"!#$%&'*+-.^_`|~09azAZ": "a\tb c~", "Authorization": "Bearer not-a-secret"}
    assert targets.HttpsEndpoint("https://h.example.com/", signing_secret=secret, headers=names).headers == names


@pytest.mark.parametrize(("timeout", "message"), [
    (cdk.Duration.seconds(0), r"^timeout: must be between 1 and 30 seconds, got 0$"),
    (cdk.Duration.seconds(31), r"^timeout: must be between 1 and 30 seconds, got 31$"),
    (cdk.Duration.minutes(1), r"^timeout: must be between 1 and 30 seconds, got 60$"),
    (cdk.Duration.millis(1500), r"^timeout: must be whole seconds, got 1.5 seconds$"),
    (10, r"^timeout: must be a Duration, e.g. Duration.seconds\(10\), got 10$"),
])
def test_a_timeout_outside_the_contracts_bounds_is_refused(secret, timeout, message):
    with pytest.raises(ValueError, match=message):
        targets.HttpsEndpoint("https://h.example.com/", signing_secret=secret, timeout=timeout)


def test_the_timeout_bounds_and_default_are_the_contracts(secret):
    bounds = contract.WEBHOOK.timeout_seconds
    assert (bounds.min, bounds.default, bounds.max) == (1, 10, 30)
    assert targets.HttpsEndpoint("https://h.example.com/", signing_secret=secret).timeout.to_seconds() == bounds.default
    for edge in (bounds.min, bounds.max):
        endpoint = targets.HttpsEndpoint("https://h.example.com/", signing_secret=secret,
                                         timeout=cdk.Duration.seconds(edge))
        assert endpoint.timeout.to_seconds() == edge


def test_a_signing_secret_that_is_not_a_secret_is_refused(stack):
    with pytest.raises(ValueError, match=r"^signing_secret: must be a Secrets Manager secret "
                                         r"\(aws_secretsmanager.ISecret\), got Queue; for a queue use "
                                         r"targets.SqsSendMessage\(queue\)$"):
        targets.HttpsEndpoint("https://h.example.com/", signing_secret=sqs.Queue(stack, "Q"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^signing_secret: must be a Secrets Manager secret .*got str$"):
        targets.HttpsEndpoint("https://h.example.com/", signing_secret="hooks")  # type: ignore[arg-type]


def test_tokens_are_left_to_deploy_time(stack, secret):
    url = cdk.CfnParameter(stack, "Url").value_as_string
    tenant = cdk.CfnParameter(stack, "Tenant").value_as_string
    seconds = cdk.CfnParameter(stack, "Seconds", type="Number").value_as_number
    endpoint = targets.HttpsEndpoint(url, signing_secret=secret, headers={"X-Tenant": tenant},
                                     timeout=cdk.Duration.seconds(seconds))
    assert (endpoint.url, endpoint.headers) == (url, {"X-Tenant": tenant})
    scheduler = DelayedScheduler(stack, "Timers", target=endpoint)
    assert scheduler.target_names == ["default"]
    # a token within a literal URL is judged at deploy too (an API's URL, say), but for a scheme written before it
    assert targets.HttpsEndpoint(f"{url}/hooks", signing_secret=secret).url == f"{url}/hooks"
    assert targets.HttpsEndpoint(f"https://{tenant}.example.com/", signing_secret=secret).url.startswith("https://")
    with pytest.raises(ValueError, match=r"^url: must be an https:// URL .*: only https:// is delivered to .*; "
                                         r"got http:// followed by a token$"):
        targets.HttpsEndpoint(f"http://{tenant}.example.com/", signing_secret=secret)


def test_the_endpoint_is_a_public_target():
    assert "HttpsEndpoint" in targets.__all__
    assert issubclass(targets.HttpsEndpoint, targets.IScheduleTarget)
