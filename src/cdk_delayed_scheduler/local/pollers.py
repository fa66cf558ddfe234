"""Stand-ins for Lambda's event source mappings and the EventBridge schedule rule."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from .._contract import contract
from .checkpoints import CheckpointStore
from .event_filter import matches

Handler = Callable[[dict[str, Any], Any], Any]
SQS_RECEIVE_LIMIT = 10  # SQS's maximum per ReceiveMessage call
GATHER_PAUSE_SECONDS = 0.05  # between receives that found nothing, while a batching window gathers
logger = logging.getLogger("cdk_delayed_scheduler.local")


class LambdaContext:
    """The parts of Lambda's context object the runtime reads.

    Once the engine is stopping, no time is left: a handler that checks (the
    sweeper does, after every page) ends early instead of outliving the engine.
    """

    def __init__(self, function_name: str, timeout_seconds: float, stopping: threading.Event | None = None) -> None:
        self.function_name = function_name
        self.aws_request_id = str(uuid.uuid4())
        self._deadline = time.monotonic() + timeout_seconds
        self._stopping = stopping

    def get_remaining_time_in_millis(self) -> int:
        if self._stopping is not None and self._stopping.is_set():
            return 0
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass(frozen=True)
class FunctionSpec:
    """A handler with the limits its deployed function would have."""

    name: str
    handler: Handler
    timeout_seconds: float = 60.0
    stopping: threading.Event | None = None

    def invoke(self, event: dict[str, Any]) -> Any:
        return self.handler(event, LambdaContext(self.name, self.timeout_seconds, self.stopping))


def read_records_as_sent(streams: Any) -> None:
    """Make ``streams.get_records`` answer the records as DynamoDB Streams sends them, as Lambda passes them on.

    Lambda hands a function the stream's JSON as it is (binary values in base64, times in
    epoch seconds); botocore would turn every attribute of every image into Python values
    first, which for a page of 1,000 records is most of the poller's CPU, and all of it is
    wasted on records the filter drops. The answer is kept as sent, under ``Records``.
    """

    def keep_as_sent(response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any) -> None:
        if response_dict.get("status_code") == 200:
            customized_response_dict.update(json.loads(response_dict["body"]))
            response_dict["body"] = b"{}"  # nothing left for botocore's parser to walk

    streams.meta.events.register("before-parse.dynamodb-streams.GetRecords", keep_as_sent)


def lambda_stream_record(record: dict[str, Any], stream_arn: str, region: str) -> dict[str, Any]:
    """A record from ``GetRecords`` in the shape Lambda hands to a function."""
    dynamodb = dict(record["dynamodb"])
    created = dynamodb.get("ApproximateCreationDateTime")
    if created is not None and hasattr(created, "timestamp"):
        dynamodb["ApproximateCreationDateTime"] = created.timestamp()
    out = {**record, "dynamodb": dynamodb, "eventSourceARN": stream_arn, "awsRegion": region}
    out.setdefault("eventSource", "aws:dynamodb")
    return out


def lambda_sqs_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """A message from ``ReceiveMessage`` in the shape Lambda hands to a function."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {
            name: {"stringValue": value.get("StringValue"), "dataType": value.get("DataType")}
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody"),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


class PollerThread(threading.Thread):
    def __init__(self, name: str, stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self._stop_event = stop
        self._woken = threading.Event()

    def wake(self) -> None:
        """Poll again now rather than after the idle wait (the engine is stopping, or knows there is work)."""
        self._woken.set()

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                busy = self.poll_once()
            except Exception:  # noqa: BLE001 - a poller survives its endpoint's hiccups
                if self._stop_event.is_set():  # the engine is stopping: its endpoints may be gone already
                    logger.debug("%s: poll failed while stopping", self.name, exc_info=True)
                    return
                logger.exception("%s: poll failed", self.name)
                busy = False
            if not busy:
                self._woken.wait(self.idle_seconds)
                self._woken.clear()

    idle_seconds = 0.05

    def poll_once(self) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError


class StreamPoller(PollerThread):
    """A DynamoDB stream event source mapping: filter, batch, partial failures, retries, checkpoints.

    Records are read from every shard of the stream in order. Records that do
    not match ``filter_pattern`` are skipped. A batch item failure retries the
    batch from the first failed record, with backoff, up to ``max_retries``;
    then the rest goes to ``on_failure`` (the mapping's on-failure destination)
    and the poller moves on. Positions are checkpointed after every batch.
    """

    def __init__(
        self,
        function: FunctionSpec,
        streams: Any,
        stream_arn: str,
        filter_pattern: dict[str, Any],
        checkpoints: CheckpointStore,
        stop: threading.Event,
        *,
        batch_size: int = 100,
        max_retries: int = 3,
        retry_backoff_seconds: float = 0.2,
        on_failure: Callable[[str, list[Any]], None] | None = None,
        region: str = "us-east-1",
    ) -> None:
        super().__init__(f"stream:{function.name}", stop)
        self._function = function
        self._streams = streams
        read_records_as_sent(streams)
        self._stream_arn = stream_arn
        self._pattern = filter_pattern
        self._checkpoints = checkpoints
        self._batch_size = batch_size
        self._max_retries = max_retries
        self._backoff = retry_backoff_seconds
        self._on_failure = on_failure or (lambda name, records: None)
        self._region = region
        self._iterators: dict[str, str | None] = {}  # shard id -> iterator (None: from checkpoint)
        self._shards_listed_at = 0.0
        self._caught_up = False
        self.passes = 0
        """Passes over the stream's shards completed so far."""

    @property
    def caught_up(self) -> bool:
        """Whether the last pass over the stream's shards read no record: every record written before
        it began was handed to the function (or filtered out), and its checkpoint is past it."""
        return self._caught_up

    idle_seconds = 0.25  # Lambda polls a stream shard four times a second

    def poll_once(self) -> bool:
        if time.monotonic() - self._shards_listed_at > 5:
            self._refresh_shards()
        busy = False
        for shard_id in list(self._iterators):
            iterator = self._iterators[shard_id] or self._iterator_from_checkpoint(shard_id)
            # Read as much as GetRecords gives; filter, then invoke in batches (Lambda
            # filters before it batches, so filtered-out records cost no invocation).
            response = self._streams.get_records(ShardIterator=iterator, Limit=contract.GET_RECORDS_LIMIT)
            records = response.get("Records", [])
            self._iterators[shard_id] = response.get("NextShardIterator")  # None once a shard is closed
            if records:
                busy = True
                self._deliver([lambda_stream_record(r, self._stream_arn, self._region) for r in records])
                self._checkpoints.put(self._function.name, self._shard_key(shard_id), records[-1]["dynamodb"]["SequenceNumber"])
        self._caught_up = not busy
        self.passes += 1
        return busy

    def _refresh_shards(self) -> None:
        self._shards_listed_at = time.monotonic()
        description = self._streams.describe_stream(StreamArn=self._stream_arn)["StreamDescription"]
        for shard in description.get("Shards", []):
            self._iterators.setdefault(shard["ShardId"], None)

    def _iterator_from_checkpoint(self, shard_id: str) -> str:
        """Resume after the last processed record, or start at the oldest one."""
        position = self._checkpoints.get(self._function.name, self._shard_key(shard_id))
        params: dict[str, Any] = {"StreamArn": self._stream_arn, "ShardId": shard_id}
        if position:
            params.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=position)
        else:
            params.update(ShardIteratorType="TRIM_HORIZON")
        iterator: str = self._streams.get_shard_iterator(**params)["ShardIterator"]
        return iterator

    def _shard_key(self, shard_id: str) -> str:
        return f"{self._stream_arn}|{shard_id}"

    def _deliver(self, records: list[Any]) -> None:
        matching = [r for r in records if matches(self._pattern, r)]
        for start in range(0, len(matching), self._batch_size):
            self._deliver_batch(matching[start : start + self._batch_size])

    def _deliver_batch(self, pending: list[Any]) -> None:
        retries = 0
        while pending:
            failed = self._invoke(pending)
            if not failed:
                return
            first = next((i for i, r in enumerate(pending) if r["dynamodb"]["SequenceNumber"] in failed), 0)
            pending = pending[first:]
            retries += 1
            if retries > self._max_retries:
                logger.error("%s: %d records exhausted their retries", self._function.name, len(pending))
                self._on_failure(self._function.name, pending)
                return
            self._stop_event.wait(self._backoff * retries)

    def _invoke(self, records: list[Any]) -> set[str]:
        try:
            response = self._function.invoke({"Records": records}) or {}
            return {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        except Exception:  # noqa: BLE001 - a crashed invocation fails its whole batch
            logger.exception("%s: invocation failed", self._function.name)
            return {r["dynamodb"]["SequenceNumber"] for r in records}


class QueuePoller(PollerThread):
    """An SQS event source mapping: batches, concurrency, visibility timeout, partial batch failures.

    One thread long-polls the queue and hands each batch to a pool of
    ``concurrency`` invocations, as Lambda's pollers do. With a ``max_batching_window`` (seconds, the
    construct's ``dispatcher_max_batching_window``), a receive that returns messages starts a
    gathering: the poller receives again until it holds ``batch_size`` messages (which may be more than
    SQS's ten a receive) or the window has passed since the first. Failed messages are
    left alone, so they reappear after the visibility timeout, and the queue's
    redrive policy moves them to the DLQ after ``maxReceiveCount`` receives.
    """

    def __init__(
        self,
        function: FunctionSpec,
        sqs: Any,
        queue_url: str,
        queue_arn: str,
        stop: threading.Event,
        *,
        concurrency: int = 4,
        batch_size: int = 10,
        max_batching_window: float = 0.0,
        visibility_timeout: int = 30,
        wait_seconds: int = 1,
        region: str = "us-east-1",
    ) -> None:
        super().__init__(f"sqs:{function.name}", stop)
        self._function = function
        self._sqs = sqs
        self._url = queue_url
        self._arn = queue_arn
        self._batch_size = batch_size
        self._window = max_batching_window
        self._visibility = visibility_timeout
        self._wait_seconds = wait_seconds
        if wait_seconds:  # a receive that found nothing waited already: receive again at once, as Lambda's pollers do
            self.idle_seconds = 0.0
        self._region = region
        self._slots = threading.Semaphore(concurrency)
        self._in_flight = 0
        self._received = 0
        self._in_flight_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=f"invoke:{function.name}")

    def run(self) -> None:
        try:
            super().run()
        finally:
            self._pool.shutdown(wait=True)

    def poll_once(self) -> bool:
        if not self._slots.acquire(timeout=0.5):
            return True
        # A short receive is in flight from before it: its messages are then never unaccounted for. A long poll
        # would be in flight for all of its wait: its messages count once it returns (``messages_received``).
        counted_before = not self._wait_seconds
        if counted_before:
            self._count_in_flight(1)
        try:
            messages = self._receive(self._wait_seconds)
            if messages and self._window > 0:
                messages += self._gather(len(messages))
        except BaseException:
            if counted_before:
                self._count_in_flight(-1)
            self._slots.release()
            raise
        if not messages:
            if counted_before:
                self._count_in_flight(-1)
            self._slots.release()
            return False
        self._count_in_flight(0 if counted_before else 1, len(messages))
        self._pool.submit(self._invoke, messages)
        return True

    def _receive(self, wait_seconds: int, most: int = SQS_RECEIVE_LIMIT) -> list[Any]:
        messages: list[Any] = self._sqs.receive_message(
            QueueUrl=self._url,
            MaxNumberOfMessages=max(1, min(SQS_RECEIVE_LIMIT, most, self._batch_size)),
            WaitTimeSeconds=wait_seconds,
            VisibilityTimeout=self._visibility,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        return messages

    def _gather(self, held: int) -> list[Any]:
        """More messages for a batch that holds ``held``: until it is full or the window has passed."""
        deadline = time.monotonic() + self._window
        more: list[Any] = []
        while held + len(more) < self._batch_size and time.monotonic() < deadline and not self._stop_event.is_set():
            got = self._receive(0, self._batch_size - held - len(more))
            more += got
            if not got:
                time.sleep(min(GATHER_PAUSE_SECONDS, max(0.0, deadline - time.monotonic())))
        return more

    def _count_in_flight(self, change: int, received: int = 0) -> None:
        with self._in_flight_lock:
            self._in_flight += change
            self._received += received

    @property
    def messages_received(self) -> int:
        """Messages the receives handed to invocations so far."""
        with self._in_flight_lock:
            return self._received

    @property
    def in_flight(self) -> int:
        """Invocations under way (an invocation's messages deleted, or left for a retry, once it ends), and a short
        receive under way."""
        with self._in_flight_lock:
            return self._in_flight

    def _invoke(self, messages: list[Any]) -> None:
        try:
            records = [lambda_sqs_record(m, self._arn, self._region) for m in messages]
            try:
                response = self._function.invoke({"Records": records}) or {}
                failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
            except Exception:  # noqa: BLE001 - the whole batch returns to the queue
                logger.exception("%s: invocation failed", self._function.name)
                failed = {m["MessageId"] for m in messages}
            done = [m for m in messages if m["MessageId"] not in failed]
            if done:
                self._sqs.delete_message_batch(
                    QueueUrl=self._url,
                    Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
                )
        except Exception:  # noqa: BLE001 - undeleted messages simply reappear
            logger.exception("%s: completing a batch failed", self._function.name)
        finally:
            self._count_in_flight(-1)
            self._slots.release()


class ScheduleRule(PollerThread):
    """An EventBridge ``rate()`` rule: invokes the function every ``interval_seconds``."""

    def __init__(self, function: FunctionSpec, interval_seconds: float, stop: threading.Event) -> None:
        super().__init__(f"rule:{function.name}", stop)
        self._function = function
        self._interval = interval_seconds
        self._next = time.monotonic()

    def poll_once(self) -> bool:
        wait = self._next - time.monotonic()
        if wait > 0:
            self._stop_event.wait(min(wait, 0.5))
            return True
        self._next += self._interval
        event = {"source": "aws.events", "detail-type": "Scheduled Event", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        try:
            self._function.invoke(event)
        except Exception:  # noqa: BLE001 - as with EventBridge, the next tick tries again
            logger.exception("%s: scheduled invocation failed", self._function.name)
        return True
