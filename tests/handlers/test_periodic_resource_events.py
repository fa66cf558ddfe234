"""A periodic timer declared in a stack: the CloudFormation Create, Update and Delete events that CDK's
provider framework hands the api function, on in-process moto. Each is answered through the same
routes as ``PUT``/``DELETE /periodic/{id}`` (so the same validation runs): the answer the framework
reports (``PhysicalResourceId``, ``Data``), the definition in the table, and the failure message."""

from __future__ import annotations

import json
import re

import pytest

from scheduler_runtime.handlers import api
from scheduler_runtime.handlers._periodic_resource import DefinitionRefused

from .conftest import call_api
from .periodic_timers import NIGHTLY, event

pytestmark = pytest.mark.usefixtures("virtual_clock")

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def definition(periodic_id: str) -> tuple[int, dict]:
    return call_api("GET", f"/periodic/{periodic_id}")


def test_create_puts_the_definition_and_answers_its_id_and_data(aws):
    answer = api.handler(event("Create", "nightly", NIGHTLY))
    assert answer["PhysicalResourceId"] == "nightly"
    data = answer["Data"]
    assert (data["Id"], data["Status"]) == ("nightly", "ACTIVE") and ISO_MS.match(data["NextDueAt"])
    status, stored = definition("nightly")
    assert status == 200
    assert (stored["cron"], stored["timeZone"], stored["payload"], stored["target"], stored["nextDueAt"]) == (
        "0 2 * * ? *", "Europe/Paris", {"report": "daily"}, "default", data["NextDueAt"])


def test_an_update_replaces_the_definition_under_the_same_id(aws):
    api.handler(event("Create", "nightly", NIGHTLY))
    answer = api.handler(event("Update", "nightly", {"every": 3600, "payload": {"report": "hourly"}},
                               physical="nightly", old={"Id": "nightly", "Definition": json.dumps(NIGHTLY)}))
    assert answer["PhysicalResourceId"] == "nightly"
    _, stored = definition("nightly")
    assert (stored["every"], stored["payload"], "cron" in stored) == (3600, {"report": "hourly"}, False)


def test_an_update_to_another_id_creates_it_and_answers_it_so_cloudformation_deletes_the_old(aws):
    api.handler(event("Create", "nightly", NIGHTLY))
    answer = api.handler(event("Update", "nightly-v2", NIGHTLY, physical="nightly",
                               old={"Id": "nightly", "Definition": json.dumps(NIGHTLY)}))
    assert answer["PhysicalResourceId"] == "nightly-v2"
    assert definition("nightly-v2")[0] == 200 and definition("nightly")[0] == 200  # until CloudFormation's Delete
    assert api.handler(event("Delete", "nightly", NIGHTLY, physical="nightly")) == {"PhysicalResourceId": "nightly"}
    assert definition("nightly")[0] == 404 and definition("nightly-v2")[0] == 200


def test_delete_deletes_the_definition_and_one_already_gone_counts_as_deleted(aws):
    api.handler(event("Create", "nightly", NIGHTLY))
    assert api.handler(event("Delete", "nightly", NIGHTLY, physical="nightly")) == {"PhysicalResourceId": "nightly"}
    assert definition("nightly")[0] == 404
    assert api.handler(event("Delete", "nightly", NIGHTLY, physical="nightly")) == {"PhysicalResourceId": "nightly"}
    # a physical id that was never a timer's (nothing was stored under it) is nothing to delete
    odd = "AWSCDK::CustomResourceProviderFramework::CREATE_FAILED"
    assert api.handler(event("Delete", "nightly", NIGHTLY, physical=odd)) == {"PhysicalResourceId": odd}


@pytest.mark.parametrize(
    ("periodic_id", "body", "message"),
    [
        ("nightly", {"cron": "0 2 * *", "payload": {}},
         r"^PUT /periodic/nightly answered 400: .* \(field cron\)$"),
        ("nightly", {"cron": "0 2 * * ? *", "timeZone": "Mars/Olympus", "payload": {}},
         r"^PUT /periodic/nightly answered 400: .* \(field timeZone\)$"),
        ("nightly", {"every": 60, "cron": "0 2 * * ? *", "payload": {}},
         r"^PUT /periodic/nightly answered 400: exactly one of every \(whole seconds >= 1\) or cron \(six fields\) "
         r"is required \(field every\)$"),
        ("nightly", {"every": 60, "payload": {}, "target": "nowhere"},
         r"^PUT /periodic/nightly answered 400: target must be a registered target name: broken, default, "
         r"ordered \(field target\)$"),
        ("bad id!", {"every": 60, "payload": {}}, r"^PUT /periodic/bad id! answered 400: .* \(field id\)$"),
        ("nightly", "{not json", r"^PUT /periodic/nightly answered 400: .* \(field body\)$"),
    ],
)
def test_a_definition_the_api_refuses_fails_the_event_with_the_apis_message_and_field(aws, periodic_id, body, message):
    with pytest.raises(DefinitionRefused, match=message):
        api.handler(event("Create", periodic_id, body))
    assert definition("nightly")[0] == 404


def test_a_refused_update_leaves_the_old_definition_in_place(aws):
    api.handler(event("Create", "nightly", NIGHTLY))
    with pytest.raises(DefinitionRefused, match=r"\(field every\)$"):
        api.handler(event("Update", "nightly", {"every": 0, "payload": {}}, physical="nightly"))
    assert definition("nightly")[1]["cron"] == "0 2 * * ? *"


def test_an_event_without_a_definition_text_or_of_an_unknown_type_is_refused(aws):
    broken = event("Create", "nightly", NIGHTLY)
    broken["ResourceProperties"]["Definition"] = {"every": "60"}
    with pytest.raises(DefinitionRefused, match=r"^the Definition property must be the PUT /periodic/\{id\} body"):
        api.handler(broken)
    with pytest.raises(DefinitionRefused, match=r"^unknown RequestType 'Rename'"):
        api.handler(event("Rename", "nightly", NIGHTLY))
