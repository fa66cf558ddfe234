"""Integration test: long timers through the table and the sweeper, reschedules and cancels.

With ``delay_window`` at its least (90 s), a timer due in 150 s waits in the table as ``SCHEDULED`` until
the sweeper claims it, and the enqueuer sends it on: the long path, in minutes. Beside it:

- a long timer rescheduled later (150 s -> 240 s): delivered once, at its new due time, never at the old;
- a queued timer rescheduled (30 s -> 60 s): its old message in the delayer queue is dropped as a stray;
- a queued timer and a long one cancelled: neither is delivered (the long one's timer deletion must not
  enqueue it: the enqueuer's stream filter);
- every delivery starts no earlier than its due time.

The target is the recorder (a synchronous Lambda target); the probe reads what it wrote down.
About 5 minutes of assertions after the deploy.
"""

from __future__ import annotations

import aws_cdk as cdk

from cdk_delayed_scheduler import DelayedScheduler, targets
from harness import Scenario, Seen, created, new_app, timer

app = new_app()
stack = cdk.Stack(app, "DelayedSchedulerLongTimers")
seen = Seen(stack, "Seen")
timers = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(seen.recorder),
                          delay_window=cdk.Duration.seconds(90), removal_policy=cdk.RemovalPolicy.DESTROY)
scenario = Scenario(app, stack, "LongTimersTest", timers=timers, probe=seen.probe(timers))

# 1. one batch: three timers beyond the window (SCHEDULED), two within it (QUEUED)
scenario.api("POST", "/schedule-batches", {"schedules": [
    timer("long-swept", 150), timer("long-moved", 150), timer("long-cancelled", 150),
    timer("queued-moved", 30), timer("queued-cancelled", 30),
]}, status=200, like={"results": [created("SCHEDULED"), created("SCHEDULED"), created("SCHEDULED"),
                                  created("QUEUED"), created("QUEUED")]})

# 2. reschedules: the long one further out (still beyond the window), the queued one later in the queue
scenario.api("PATCH", "/schedules/long-moved", {"delaySeconds": 240}, status=200, like={"status": "SCHEDULED"})
scenario.api("PATCH", "/schedules/queued-moved", {"delaySeconds": 60}, status=200, like={"status": "QUEUED"})

# 3. cancels, one on each path
scenario.api("DELETE", "/schedules/queued-cancelled", status=200, like={"status": "CANCELLED"})
scenario.api("DELETE", "/schedules/long-cancelled", status=200, like={"status": "CANCELLED"})

# 4. deliveries, in due order: each once, at the due time it has now
scenario.delivered("queued-moved")
scenario.delivered("long-swept")
scenario.delivered("long-moved")

# 5. the cancelled ones were due long before: nothing of them was delivered
scenario.never_delivered("queued-cancelled")
scenario.never_delivered("long-cancelled")

app.synth()
