"""Integration test: the HTTP API front door, signed with SigV4, through the typed client.

The assertion function ``front_door`` runs ``cdk_delayed_scheduler.client.SchedulerClient(timers.url)`` with
its own role, to which the stack gives ``timers.grant_schedule``: a create, a read, a batch, a reschedule,
a cancel, a periodic timer paused and then stopped by its group's cancel, an unknown id (``NotFoundError``),
and an unsigned request, which the API's IAM authorization refuses (``AccessDeniedError``); then a listing
of the queued timers (``listing=True``: its index is eventually consistent, so it is polled). Then the
deliveries: the short timer and the rescheduled one arrive, the cancelled one never does, and the client
reads the first as ``FIRED`` over the API.
About a minute of assertions after the deploy.
"""

from __future__ import annotations

import aws_cdk as cdk

from cdk_delayed_scheduler import DelayedScheduler, targets
from harness import Scenario, Seen, new_app

app = new_app()
stack = cdk.Stack(app, "DelayedSchedulerHttpApi")
seen = Seen(stack, "Seen")
timers = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(seen.recorder), listing=True,
                          removal_policy=cdk.RemovalPolicy.DESTROY)
front_door = seen.function("FrontDoor", "front_door.handler", environment={"API_URL": timers.url},
                           timeout=cdk.Duration.seconds(60))
timers.grant_schedule(front_door)
scenario = Scenario(app, stack, "HttpApiTest", timers=timers, probe=seen.probe(timers))

# 1. every kind of call, once, over the HTTP API
scenario.invoke(front_door, {"scenario": "door"}, {
    "created": "QUEUED", "read": {"status": "QUEUED", "payload": {"door": "http"}},
    "batch": ["QUEUED", "QUEUED"], "moved": "QUEUED", "cancelled": "CANCELLED",
    "periodic": "ACTIVE", "paused": "PAUSED", "group": "door", "periodicAfterGroup": "NotFoundError",
    "missing": "NotFoundError", "unsigned": "AccessDeniedError",
})
scenario.invoke(front_door, {"list": "QUEUED"}, {"ids": ["door-moved", "door-short"]}, wait=cdk.Duration.seconds(30))

# 2. what it scheduled is delivered (the rescheduled one at its new due time); the cancelled one is not
scenario.delivered("door-short")
scenario.delivered("door-moved")
scenario.never_delivered("door-cancelled")
scenario.invoke(front_door, {"get": "door-short"}, {"status": "FIRED"})

app.synth()
