"""The scheduler's typed client, for application code: ``from cdk_delayed_scheduler.client import SchedulerClient``.

It needs only the standard library and botocore (no aws-cdk-lib, constructs or boto3), so a
Lambda function can bundle it without the construct's dependencies; see ``docs/client.md``.

```python
from datetime import timedelta
from cdk_delayed_scheduler.client import SchedulerClient

timers = SchedulerClient("https://abc123.execute-api.eu-west-1.amazonaws.com")  # SigV4-signed HTTP
# or: SchedulerClient(url, api_key="...") / SchedulerClient(url, token=lambda: tokens.id_token)
# or: SchedulerClient.for_function("Timers-ApiFunction...")                       # direct invoke
created = timers.schedule(timedelta(minutes=5), {"order": 42})
```

``AsyncSchedulerClient`` is the same for asyncio (``await timers.schedule(...)``); over HTTP it needs
httpx (the ``async`` extra), imported only when such a client is made.
"""

from ._async_client import AsyncSchedulerClient
from ._client import MAX_BATCH_SIZE, BatchItem, SchedulerClient
from ._core import Answer
from ._errors import (AccessDeniedError, ConflictError, FunctionError, NotFoundError, PayloadTooLargeError,
                      RequestError, SchedulerError, ServerError, ThrottledError, TransportError, ValidationError)
from ..envelope import Envelope
from ..outcome import Outcome, OutcomeKind
from ._auth import AsyncTokenProvider, TokenProvider
from ._models import GroupCancellation, Periodic, Removed, RetryPolicy, Schedule, ScheduleRequest, Target, When
from ._statuses import PeriodicStatus, ScheduleStatus, TargetState
from ._transport import PlaceholderCredentialsWarning, UnsignedRequestsWarning

__all__ = [
    "SchedulerClient", "AsyncSchedulerClient", "MAX_BATCH_SIZE", "BatchItem", "Answer",
    "Schedule", "Periodic", "Removed", "RetryPolicy", "ScheduleRequest", "ScheduleStatus", "PeriodicStatus", "When", "TokenProvider",
    "AsyncTokenProvider", "GroupCancellation", "Target", "TargetState",
    "SchedulerError", "ValidationError", "AccessDeniedError", "NotFoundError", "ConflictError",
    "PayloadTooLargeError", "RequestError", "ThrottledError", "ServerError", "FunctionError", "TransportError",
    "UnsignedRequestsWarning", "PlaceholderCredentialsWarning", "Envelope", "Outcome", "OutcomeKind",
]
