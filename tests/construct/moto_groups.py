"""The deployed wiring of groups: ``DELETE /groups/{group}`` and ``GET /schedules?group=`` through the deployed
group index, and the dispatcher's sweep of the cancelled group, as a scenario of test_moto_deploy.py (imported
there, so that it runs against its one deployment and its calls join the per-role IAM audit)."""

from __future__ import annotations

import json

from moto_wiring import drive_until, scenario


@scenario
def test_a_group_cancel_stops_its_members_through_the_deployed_index(deployed, wired, api):
    """Two waiting members of a group, one due in the delay window and one far beyond it (a timer item), and one
    of another group: the deployed table has the group index, ``GET /schedules?group=`` lists the two, the cancel
    counts them, the deployed dispatcher sweeps them (its role must allow the index Query, and the timer's
    delete), and nothing of them is delivered; the other group's member still waits."""
    functions, _, queues = wired
    session = deployed["session"]
    dispatch = queues[functions["DispatcherFunction"].name]
    table_name = functions["ApiFunction"].environment["TABLE_NAME"]
    table = session.client("dynamodb").describe_table(TableName=table_name)["Table"]
    index = {i["IndexName"]: i for i in table["GlobalSecondaryIndexes"]}["ByGroup"]
    assert [k["AttributeName"] for k in index["KeySchema"]] == ["group", "groupSk"]
    for schedule_id, delay, group in (("wiring-group-soon", 3, "wiring-team"), ("wiring-group-later", 7200, "wiring-team"),
                                      ("wiring-group-other", 7200, "wiring-others")):
        status, body = api("POST", "/schedules", {"id": schedule_id, "delaySeconds": delay, "payload": None,
                                                  "group": group})
        assert status == 201, body
    status, body = api("GET", "/schedules?group=wiring-team")
    assert status == 200 and [i["id"] for i in body["items"]] == ["wiring-group-soon", "wiring-group-later"], body
    status, body = api("DELETE", "/groups/wiring-team")
    assert status == 200 and body["stopped"] == {"schedules": 2, "periodic": 0}, body

    def swept() -> bool:
        return all(api("GET", f"/schedules/{i}")[1]["status"] == "CANCELLED" for i in
                   ("wiring-group-soon", "wiring-group-later")) and any(
            params.get("IndexName") == "ByGroup" for _, op, params in functions["DispatcherFunction"].calls)

    drive_until(swept, [dispatch.poll], timeout=30)
    stored = session.client("dynamodb").get_item(TableName=table_name, ConsistentRead=True,
                                                 Key={"pk": {"S": "SCHEDULE#wiring-group-later"}, "sk": {"S": "RECORD"}})
    assert stored["Item"]["status"]["S"] == "CANCELLED" and "groupSk" not in stored["Item"]
    assert api("GET", "/schedules/wiring-group-other")[1]["status"] == "SCHEDULED"
    deliveries = session.client("sqs").receive_message(QueueUrl=deployed["outputs"]["DeliveriesQueueUrl"],
                                                        MaxNumberOfMessages=10, VisibilityTimeout=0).get("Messages", [])
    assert not any(json.loads(m["Body"]).get("id", "").startswith("wiring-group-") for m in deliveries)
