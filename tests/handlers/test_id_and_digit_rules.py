"""Id and digit rules that the OpenAPI document states, through the api handler on in-process moto.

- an id with a newline anywhere is refused (400), a trailing one included (Python's ``$`` matches before it);
- the ids ``.`` and ``..`` are refused on create, since no HTTP client can name them in a URL (it removes
  them as dot segments); a read or cancel still takes them;
- a digit that is not an ASCII digit (``²``, ``٣``) in a page ``limit`` or a cron field is a 400 naming the
  field (``str.isdigit`` takes it; ``int`` refuses or misreads it), never a 500 or a number.
"""

from __future__ import annotations

import pytest

from scheduler_runtime.handlers import api

from .conftest import call_api

pytestmark = pytest.mark.usefixtures("virtual_clock")


def invoke(method: str, path: str, body: object = None) -> tuple[int, dict]:
    """The direct-invoke door, which takes query parameters in the path."""
    answer = api.handler({"method": method, "path": path, "body": body})
    return answer["statusCode"], answer["body"]


@pytest.mark.parametrize("schedule_id", ["abc\n", "\nabc", "a\nb"])
def test_an_id_with_a_newline_is_refused(aws, schedule_id):
    status, body = call_api("POST", "/schedules", {"id": schedule_id, "delaySeconds": 5, "payload": 1})
    assert (status, body["field"]) == (400, "id"), body
    assert "'\\n'" in body["message"]
    status, body = invoke("PUT", f"/periodic/{schedule_id}", {"every": 60, "payload": 1})
    assert (status, body["field"]) == (400, "id"), body


@pytest.mark.parametrize("limit", ["\u00b2", "\u0663", "\uff15"])
def test_a_page_limit_in_other_digits_is_400(aws, limit):
    status, body = invoke("GET", f"/periodic?limit={limit}")
    assert (status, body["field"]) == (400, "limit"), body


@pytest.mark.parametrize("cron", ["\u00b2 * * * ? *", "\u0663 * * * ? *", "0 0 ? * 1#\u00b2 *", "0 0 \u00b2W * ? *",
                                  "0 0 ? * \u00b2L *"])
def test_a_cron_number_in_other_digits_is_400(aws, cron):
    status, body = invoke("PUT", "/periodic/report", {"cron": cron, "payload": 1})
    assert (status, body["field"]) == (400, "cron"), body
    assert invoke("GET", "/periodic/report")[0] == 404


@pytest.mark.parametrize("schedule_id", [".", ".."])
def test_a_dot_segment_id_is_refused_on_create(aws, schedule_id):
    status, body = call_api("POST", "/schedules", {"id": schedule_id, "delaySeconds": 5, "payload": 1})
    assert (status, body["field"]) == (400, "id") and "dot segments" in body["message"], body
    status, body = call_api("POST", "/schedule-batches", {"schedules": [{"id": schedule_id, "delaySeconds": 5,
                                                                         "payload": 1}]})
    assert status == 200 and body["results"][0]["status"] == 400, body
    assert body["results"][0]["body"]["field"] == "schedules[0].id"
    status, body = invoke("PUT", f"/periodic/{schedule_id}", {"every": 60, "payload": 1})
    assert (status, body["field"]) == (400, "id"), body
    assert invoke("GET", f"/schedules/{schedule_id}")[0] == 404  # a read still takes it
    assert invoke("DELETE", f"/periodic/{schedule_id}")[0] == 404
