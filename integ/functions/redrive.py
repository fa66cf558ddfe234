"""The operator's redrive, run as the integration test's assertion function: ``cdk_delayed_scheduler.operator
.redrive`` over botocore, with a role that holds exactly ``timers.grant_redrive(role)``.

``{"ids": [...]}`` sends those schedules' parked deliveries back for delivery and answers the report
(``RedriveReport.to_json()``: ``moved``, ``skipped``, ``parkedAgain``, ``left``).
"""

from __future__ import annotations

import os
from typing import Any

from cdk_delayed_scheduler.operator import redrive


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    report = redrive(table_name=os.environ["TABLE"], delayer_queue=os.environ["DELAYER_QUEUE"],
                     dead_letter_queue=os.environ["DEAD_LETTER_QUEUE"],
                     enqueuer_function=os.environ["ENQUEUER_FUNCTION"], ids=event["ids"])
    return report.to_json()
