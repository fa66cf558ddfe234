"""The kit receives an HTTPS target's requests in its URL's place: each delivery holds the signed request as the URL
would have received it, the kit answers what the test chose, and the runtime retries or parks by that answer as
deployed. docs/testing.md's example runs here as written."""

import re
from datetime import timedelta
from pathlib import Path

import pytest

from cdk_delayed_scheduler.testing import HttpsTarget, QueueTarget, local_scheduler
from cdk_delayed_scheduler.webhook import verify_signature

TESTING_PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
HOOK = HttpsTarget("https://hooks.example.com/timers?tenant=7", "s3cret", headers={"X-Tenant": "7"})


@pytest.mark.local_scheduler(targets={"hook": HOOK})
def test_an_https_targets_request_is_recorded_signed_as_its_url_would_receive_it(local_scheduler):
    local_scheduler.client.schedule(timedelta(minutes=10), {"order": 42}, id="ping", target="hook")
    local_scheduler.advance(minutes=10)

    (delivery,) = local_scheduler.deliveries("hook")
    request = delivery.request
    assert (request.method, request.url) == ("POST", "https://hooks.example.com/timers?tenant=7")
    assert request.headers["Host"] == "hooks.example.com" and request.headers["X-Tenant"] == "7"
    assert request.headers["Scheduler-Schedule-Id"] == "ping" and request.headers["Scheduler-Attempt"] == "1"
    assert verify_signature(request.body, request.headers, "s3cret") == delivery.envelope == request.envelope
    assert (delivery.payload, delivery.error) == ({"order": 42}, None)
    assert timedelta(0) <= delivery.lateness < timedelta(seconds=2)
    assert local_scheduler.client.get("ping").status == "FIRED"
    assert local_scheduler.deliveries(None) == [delivery]


def raise_on_the_first_attempt(request):
    if request.envelope.attempt == 1:
        raise KeyError("no such order")
    return 204


@pytest.mark.local_scheduler(targets={"hook": HOOK, "flaky": HttpsTarget("https://flaky.example.com/", "s3cret")})
def test_a_4xx_answer_parks_the_schedule_and_an_answer_callable_that_raises_is_a_500_retried(local_scheduler):
    local_scheduler.answer_webhooks("hook", 400)
    local_scheduler.answer_webhooks("flaky", raise_on_the_first_attempt)
    local_scheduler.client.schedule(timedelta(minutes=1), {}, id="refused", target="hook")
    local_scheduler.client.schedule(timedelta(minutes=1), {}, id="retried", target="flaky")
    local_scheduler.advance(minutes=2)

    assert [d.error for d in local_scheduler.deliveries("hook")] == ["answered 400"]
    assert local_scheduler.client.get("refused").status == "FAILED"
    assert [(d.envelope.attempt, d.error) for d in local_scheduler.deliveries("flaky")] == [
        (1, "answered 500: KeyError: 'no such order'"), (2, None)]
    assert local_scheduler.client.get("retried").status == "FIRED"


@pytest.mark.local_scheduler(targets={"hook": HOOK, "mine": HttpsTarget("http://127.0.0.1:9/timers", "s3cret"),
                                      "orders": QueueTarget()})
def test_answer_webhooks_takes_a_status_or_a_callable_for_a_target_the_kit_receives(local_scheduler):
    for target, kind in (("nope", r"not a target of this scheduler \(it has default, hook, mine, orders\)"),
                         ("orders", "not an HttpsTarget the kit receives"),
                         ("mine", r"not an HttpsTarget the kit receives \(those of a URL on this machine go there; "
                                  r"the kit receives: hook\)")):
        with pytest.raises(ValueError, match=f"target: '{target}' is {kind}"):
            local_scheduler.answer_webhooks(target, 200)
    for answer in (199, 600, True, "200", None):
        with pytest.raises(ValueError, match=r"answer: an HTTP status from 200 to 599 is expected .* got "):
            local_scheduler.answer_webhooks("hook", answer)
    with pytest.raises(ValueError, match=r"'mine' is an HttpsTarget whose URL is on this machine: its deliveries "
                                         r"are the requests your receiver there got"):
        local_scheduler.deliveries("mine")


def test_the_testing_pages_https_example_passes_as_written():
    page = TESTING_PAGE.read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", page.split("- **An HTTPS endpoint**", 1)[1], re.S).group(1)
    names: dict = {}
    exec(compile(code, str(TESTING_PAGE), "exec"), names)  # noqa: S102 - the documented example, verbatim
    (test,) = [value for name, value in names.items() if name.startswith("test_")]
    (marker,) = test.pytestmark
    with local_scheduler(**marker.kwargs) as timers:
        test(timers)
