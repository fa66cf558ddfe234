"""Integration test: a group's cancel, and a failing delivery parked in the dead-letter queue, then redriven.

- The group ``team`` holds a queued timer, a long one (``delay_window`` 90 s: it waits in the table) and a
  periodic timer; ``DELETE /groups/team`` (the typed client's ``cancel_group``) stops all three: the
  one-shots read ``CANCELLED`` and are never delivered, the periodic timer is gone (404) and no occurrence
  starts after the cancel answered. ``outsider``, due after the members and in no group, is delivered.
- ``failing`` is refused by its target (the recorder refuses ``failUntilHealed`` until the test heals it)
  and, with ``retry.maxAttempts`` 1, parked at once: ``FAILED``. The test heals the target, then runs the
  operator's redrive (``cdk_delayed_scheduler.operator.redrive``) in an assertion function whose role holds
  exactly ``timers.grant_redrive(role)``: the schedule is delivered, as its second attempt, and reads
  ``FIRED``. An assertion function rather than a manual step: the test runs unattended, and it proves that
  ``grant_redrive`` gives the redrive every right it uses, under real IAM.

About 4 minutes of assertions after the deploy.
"""

from __future__ import annotations

import aws_cdk as cdk

from cdk_delayed_scheduler import DelayedScheduler, targets
from harness import Match, Scenario, Seen, created, helper_function, new_app, timer

GROUP = "team"

app = new_app()
stack = cdk.Stack(app, "DelayedSchedulerGroupsRedrive")
seen = Seen(stack, "Seen")
timers = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(seen.recorder),
                          delay_window=cdk.Duration.seconds(90), removal_policy=cdk.RemovalPolicy.DESTROY)
redrive = helper_function(stack, "Redrive", "redrive.handler", timeout=cdk.Duration.seconds(90), environment={
    "TABLE": timers.table.table_name, "DELAYER_QUEUE": timers.delayer_queue.queue_url,
    "DEAD_LETTER_QUEUE": timers.dead_letter_queue.queue_url,
    "ENQUEUER_FUNCTION": timers.enqueuer_function.function_name})
timers.grant_redrive(redrive)
scenario = Scenario(app, stack, "GroupsRedriveTest", timers=timers, probe=seen.probe(timers))

# 1. the group's one-shots, one outside it, and the failing one; then the group's periodic timer
scenario.api("POST", "/schedule-batches", {"schedules": [
    timer("member-queued", 60, group=GROUP), timer("member-long", 150, group=GROUP), timer("outsider", 180),
    timer("failing", 5, payload={"failUntilHealed": True}, retry={"maxAttempts": 1}),
]}, status=200, like={"results": [created("QUEUED"), created("SCHEDULED"), created("SCHEDULED"), created("QUEUED")]})
scenario.api("PUT", "/periodic/member-every", {"every": 20, "group": GROUP, "payload": {"timer": "member-every"}},
             status=201, like={"status": "ACTIVE", "group": GROUP})
scenario.occurrences("member-every")

# 2. the group's cancel stops all three members
scenario.call("cancel_group", GROUP, like={"group": GROUP, "stopped": {"schedules": 2, "periodic": 1}},
              mark="team-cancelled")
scenario.api("GET", "/schedules/member-queued", status=200, like={"status": "CANCELLED", "group": GROUP})
scenario.api("GET", "/periodic/member-every", status=404)

# 3. the failing delivery is parked at its first attempt
scenario.api("GET", "/schedules/failing", status=200, wait=cdk.Duration.minutes(3), like={
    "status": "FAILED", "attempts": 1, "lastError": Match.string_like_regexp("maxAttempts 1 reached")})

# 4. heal the target, redrive: delivered as attempt 2
scenario.then(scenario.test.assertions.aws_api_call("DynamoDB", "putItem", {
    "TableName": seen.table.table_name, "Item": {"id": {"S": "failing"}, "sk": {"S": "heal"}}}))
scenario.invoke(redrive, {"ids": ["failing"]},
                {"moved": Match.array_with([Match.object_like({"id": "failing"})])}, wait=cdk.Duration.minutes(4))
scenario.delivered("failing", attempts=[2])

# 5. the outsider, due after every member, is delivered; nothing of the group was
scenario.delivered("outsider")
scenario.never_delivered("member-queued")
scenario.never_delivered("member-long")
scenario.deliveries("member-every", {"count": 0}, since="team-cancelled", wait=None)

app.synth()
