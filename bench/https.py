"""HTTPS target: TLS handshakes per 100 deliveries to one host, and the time of one delivery (a signed POST)
on a warm and on a cold connection.

The runtime's own deliverer (``scheduler_runtime.aws.targets.deliver``, the function the dispatcher calls), in
this process, to a receiver on 127.0.0.1 over TLS 1.3 with a self-signed P-256 certificate
(``tests/handlers/https_receiver.py``, trusted through ``SSL_CERT_FILE``); the signing secret in in-process
moto's Secrets Manager, read before anything is timed (it is cached 300 s, as on AWS).

- **handshakes**: ``n`` deliveries on ``threads`` threads at once (the dispatcher's ten per batch), counted
  where the receiver completes a TLS handshake.
- **warm / cold**: ``repeats`` deliveries one after another of each kind; before each cold one the
  connection pool is emptied, so it pays a TCP connect and a TLS handshake; a warm one reuses the kept
  connection. Loopback only: on AWS a cold one also pays the round trips to the endpoint (a handshake is
  one round trip more than the POST under TLS 1.3, two under TLS 1.2).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .common import ROOT, log

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the receiver lives beside the tests that use it


class _Context:
    """What a deliverer reads from the runtime's context: a client by service name."""

    def __init__(self, secretsmanager: Any) -> None:
        self._secretsmanager = secretsmanager

    def client(self, service: str) -> Any:
        assert service == "secretsmanager", service
        return self._secretsmanager


def _envelope(index: int) -> dict[str, Any]:
    return {"id": f"bench-{index}", "dueAt": "2030-01-01T00:00:00.000Z", "firedAt": "2030-01-01T00:00:00.010Z",
            "attempt": 1, "dedupeKey": f"bench-{index}@1893456000000", "payload": {"order": index}, "target": "hook"}


def run(n: int = 100, threads: int = 10, repeats: int = 200) -> dict[str, Any]:
    import botocore.session
    from moto import mock_aws

    from scheduler_runtime.aws import https_target
    from scheduler_runtime.aws.targets import deliver
    from tests.handlers.https_receiver import Receiver, self_signed_certificate

    folder = Path(tempfile.mkdtemp(prefix="bench-https-"))
    certificate = self_signed_certificate(folder)
    saved = os.environ.get("SSL_CERT_FILE")
    os.environ["SSL_CERT_FILE"] = str(certificate.cert_path)
    https_target.POOL.clear()
    https_target.SECRETS.clear()
    try:
        with mock_aws(), Receiver(certificate) as receiver:
            client = botocore.session.get_session().create_client("secretsmanager", region_name="us-east-1")
            arn = client.create_secret(Name="bench/webhook", SecretString="whsec-bench")["ARN"]
            ctx, target = _Context(client), {"type": "https", "url": receiver.url("/hook"), "secretArn": arn,
                                             "timeoutSeconds": 10}
            https_target.SECRETS.get(client, arn)  # read once, as a warm sandbox has it

            with ThreadPoolExecutor(max_workers=threads) as pool:
                list(pool.map(lambda i: deliver(ctx, target, _envelope(i)), range(n)))
            handshakes, connections = receiver.handshakes, receiver.connections
            log(f"https: {n} deliveries on {threads} threads: {handshakes} TLS handshakes")

            def timed(cold: bool) -> float:
                if cold:
                    https_target.POOL.clear()
                started = time.perf_counter()
                deliver(ctx, target, _envelope(0))
                return (time.perf_counter() - started) * 1000

            deliver(ctx, target, _envelope(0))
            warm = [timed(cold=False) for _ in range(repeats)]
            before = receiver.handshakes
            cold = [timed(cold=True) for _ in range(repeats)]
            assert receiver.handshakes - before == repeats, "a cold delivery reused a connection"
            assert len(receiver.requests_to("/hook")) == n + 1 + 2 * repeats
    finally:
        https_target.POOL.clear()
        https_target.SECRETS.clear()
        if saved is None:
            os.environ.pop("SSL_CERT_FILE", None)
        else:
            os.environ["SSL_CERT_FILE"] = saved
    result = {"n": n, "threads": threads, "handshakes": handshakes, "connections": connections,
              "repeats": repeats, "warm_ms": _spread(warm), "cold_ms": _spread(cold)}
    log(f"https: warm p50 {result['warm_ms']['p50']:.2f} ms, cold p50 {result['cold_ms']['p50']:.2f} ms")
    return result


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": statistics.median(ordered), "p90": ordered[int(0.9 * (len(ordered) - 1))], "max": ordered[-1]}
