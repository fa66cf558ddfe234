"""The chaos run's targets beside its default one: an SNS topic, an EventBridge bus, a Step Functions state
machine and an HTTPS endpoint, each delivery read back from where it arrived, with when it arrived, into
the run's :class:`~.deliveries.Recorder`: the topic's subscribed queue and the bus's rule's queue (the
message's ``SentTimestamp``), the state machine's executions (their start dates), and a receiver on
127.0.0.1 that checks each request's signature (:class:`SignedReceiver`)."""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .deliveries import BusTarget, HttpsTarget, Recorder, ResourceTarget, StateMachineTarget, TopicTarget
from .named_targets import executions

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Engine

logger = logging.getLogger("cdk_delayed_scheduler.local")
SIGNING_SECRET = "chaos-signing-secret"
BUS_SOURCE, BUS_DETAIL_TYPE = "chaos.run", "Chaos timer due"
POLL_SECONDS = 0.2
NAMED_TARGETS = TOPIC, BUS, FLOW, HOOK = ("topic", "bus", "flow", "hook")
"""The named targets, as a schedule's ``target`` names them."""


def chaos_targets(receiver_url: str) -> dict[str, ResourceTarget]:
    """The named targets, by name: an SNS topic, an EventBridge bus, a Step Functions state machine, and an
    HTTPS endpoint whose receiver is at ``receiver_url``."""
    return {TOPIC: TopicTarget(), BUS: BusTarget(detail_type=BUS_DETAIL_TYPE, source=BUS_SOURCE),
            FLOW: StateMachineTarget(), HOOK: HttpsTarget(receiver_url, SIGNING_SECRET, timeout_seconds=5)}


class SignedReceiver(ThreadingHTTPServer):
    """An HTTPS target's receiver on 127.0.0.1 (plain HTTP: the engine allows it to a loopback host). Each
    request is checked with the shipped ``verify_signature``: one that passes is answered 204 and handed to
    ``on_verified`` (the envelope as received, the request's headers, when it arrived in ms); one that does
    not is answered 401 and its reason kept in :attr:`rejected`."""

    daemon_threads = True

    def __init__(self, secret: str, on_verified: Callable[[dict[str, Any], Mapping[str, str], int], None]) -> None:
        from ..webhook import SignatureVerificationError, verify_signature  # noqa: PLC0415

        self.rejected: list[str] = []
        rejected = self.rejected

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                received_ms = time.time_ns() // 1_000_000
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    envelope = verify_signature(body, dict(self.headers), secret)
                except SignatureVerificationError as exc:
                    rejected.append(str(exc))
                    self.send_response(401)
                else:
                    on_verified(envelope.raw, dict(self.headers), received_ms)
                    self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="signed-receiver", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/timers"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class TargetReader(threading.Thread):
    """Reads the queue-delivered and state machine targets' deliveries into ``recorder`` until stopped."""

    def __init__(self, engine: Engine, recorder: Recorder) -> None:
        super().__init__(name="chaos-target-reader", daemon=True)
        self._engine, self._recorder = engine, recorder
        self._sqs, self._stepfunctions = engine.client("sqs"), engine.client("stepfunctions")
        self._executions_read: set[str] = set()
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(POLL_SECONDS):
            try:
                self.read_once()
            except Exception:  # noqa: BLE001 - moto busy or slow: what is unread is read on the next round
                logger.debug("reading the targets' deliveries failed; trying again", exc_info=True)

    def stop(self) -> None:
        """Stop, and read once more what arrived since the last read."""
        self._stopping.set()
        self.join(timeout=10)
        self.read_once()

    def read_once(self) -> None:
        for name, url in self._engine.target_queue_urls.items():
            self._drain(url, detail=name == BUS)
        for arn in self._engine.target_state_machine_arns.values():
            for execution in executions(self._stepfunctions, arn, frozenset(self._executions_read)):
                self._executions_read.add(execution.arn)
                self._recorder.record(execution.envelope, execution.started_ms)

    def _drain(self, url: str, *, detail: bool) -> None:
        """Every message of a target's queue (the envelope, or an EventBridge event whose detail it is)."""
        while True:
            messages = self._sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                                 AttributeNames=["SentTimestamp"]).get("Messages", [])
            if not messages:
                return
            for message in messages:
                body = json.loads(message["Body"])
                self._recorder.record(body["detail"] if detail else body, int(message["Attributes"]["SentTimestamp"]))
            self._sqs.delete_message_batch(QueueUrl=url, Entries=[
                {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)])
