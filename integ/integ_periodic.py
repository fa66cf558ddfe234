"""Integration test: periodic timers, every N seconds and cron, paused, resumed and deleted.

- ``every-20s`` (every 20 seconds): two occurrences, then paused (nothing starts in the 60 s after the
  pause answered), resumed (occurrences start again), deleted (nothing starts in the 60 s after);
- ``cron-minutely`` (``* * * * ? *`` in Europe/Paris: the functions' asset carries the time zones): two
  occurrences, each due on a whole minute, then deleted (nothing starts in the 60 s after).

Pause, resume and delete go through the probe (the typed client's ``pause_periodic``, ``resume_periodic``,
``delete_periodic``), which marks when each answered. About 5 minutes of assertions after the deploy.
"""

from __future__ import annotations

import aws_cdk as cdk

from cdk_delayed_scheduler import DelayedScheduler, targets
from harness import Match, Scenario, Seen, new_app

EVERY, CRON = "every-20s", "cron-minutely"
QUIET_SECONDS = 60  # three periods of EVERY, one of CRON

app = new_app()
stack = cdk.Stack(app, "DelayedSchedulerPeriodic")
seen = Seen(stack, "Seen")
timers = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(seen.recorder),
                          removal_policy=cdk.RemovalPolicy.DESTROY)
scenario = Scenario(app, stack, "PeriodicTest", timers=timers, probe=seen.probe(timers))

# 1. both timers (a direct invoke of the api function)
scenario.api("PUT", f"/periodic/{EVERY}", {"every": 20, "payload": {"timer": EVERY}},
             status=201, like={"status": "ACTIVE", "every": 20})
scenario.api("PUT", f"/periodic/{CRON}", {"cron": "* * * * ? *", "timeZone": "Europe/Paris",
                                          "payload": {"timer": CRON}},
             status=201, like={"status": "ACTIVE", "nextDueAt": Match.string_like_regexp(r":00\.000Z$")})

# 2. every 20 s: two occurrences, then a pause that holds
scenario.occurrences(EVERY, at_least=2)
scenario.call("pause_periodic", EVERY, like={"status": "PAUSED"}, mark="every-paused")
scenario.quiet(EVERY, since="every-paused", seconds=QUIET_SECONDS)

# 3. resumed: occurrences start again
scenario.call("resume_periodic", EVERY, like={"status": "ACTIVE"}, mark="every-resumed")
scenario.occurrences(EVERY, since="every-resumed")

# 4. the cron timer: two occurrences by now, and the next one due on a whole minute
scenario.occurrences(CRON, at_least=2)
scenario.api("GET", f"/periodic/{CRON}", status=200,
             like={"status": "ACTIVE", "timeZone": "Europe/Paris",
                   "nextDueAt": Match.string_like_regexp(r":00\.000Z$"),
                   "lastFiredAt": Match.string_like_regexp(r"^\d{4}-\d\d-\d\dT")})

# 5. deleted: nothing of either starts after the delete answered
scenario.call("delete_periodic", EVERY, like={"status": "DELETED"}, mark="every-deleted")
scenario.call("delete_periodic", CRON, like={"status": "DELETED"}, mark="cron-deleted")
scenario.quiet(EVERY, since="every-deleted", seconds=QUIET_SECONDS)
scenario.quiet(CRON, since="cron-deleted", seconds=QUIET_SECONDS)

app.synth()
