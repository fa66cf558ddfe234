"""Engine: the local engine against its own ceiling.

- **Ceiling**: moto's raw capacity, in the same run, for each call a timer needs (PutItem
  of a record, a conditional UpdateItem, SendMessage, and a tenth of a ReceiveMessage and of a
  DeleteMessageBatch of 10), from 8 threads at once; and the timers per second those calls allow.
- **Creates** through the HTTP API, in a fresh engine: one client with a new connection per
  request (as ``curl`` or ``urllib`` make them), and 8 clients with keep-alive connections.
  Both kinds of timer are measured: long (due in a day: a timer item, then the record) and
  short (due in 10 minutes: a delayer message, then the record).
- **A full table**: the same creates with 10,000 long timers already waiting and sweeps every
  second, as a ratio to the empty engine's rate of the same run.
- **Idle CPU**: the engine process and its moto child, as a share of one core, with nothing
  scheduled and the default options.
- **Memory**: the engine process and its moto child (resident set), sampled while 10,000 timers
  wait and sweeps run every second, over a soak.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from pathlib import Path

from .common import BenchEngine, Collector, EngineOptions, HandlerTimes, api_client, log, spread
from .loader import load_long

from cdk_delayed_scheduler.client._core import route  # noqa: E402  (bench.common puts src/ on the path)

CLIENTS = 8
WAITING = 10_000
DUE_IN_S = {"long": 86_400, "short": 600}


# --- process figures ----------------------------------------------------------------------
def _cpu_seconds(pid: int | None = None) -> float:
    stat = Path(f"/proc/{pid or 'self'}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int | None = None) -> float:
    for line in Path(f"/proc/{pid or 'self'}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- the ceiling --------------------------------------------------------------------------
def ceiling(seconds: float) -> dict:
    """Calls per second moto answers from 8 threads, per call a timer needs, and the timers/s they allow.

    The calls are the runtime's own (``ScheduleStore.put_record``, ``DelayerQueue.send_one``,
    ``ScheduleStore.begin_delivery``: the same expressions, conditions and return values), made
    through the runtime's shared clients; receives and deletes take batches of 10, as the
    dispatcher's mapping does.
    """
    import boto3

    from scheduler_runtime.aws.context import current
    from scheduler_runtime.aws.delayer import DelayerQueue
    from scheduler_runtime.aws.items import ScheduleRecord
    from scheduler_runtime.aws.store import ScheduleStore
    from scheduler_runtime.core import states
    from scheduler_runtime.core.envelope import TimerRef

    with BenchEngine(EngineOptions(target=Collector(), sweep_interval=3600), HandlerTimes()) as eng:
        ctx = current()
        store = ScheduleStore(ctx.dynamodb, eng.table_name)
        queue_url = boto3.client("sqs", endpoint_url=eng.endpoint_url, region_name="us-east-1").create_queue(
            QueueName="ceiling")["QueueUrl"]
        queue = DelayerQueue(ctx.sqs, queue_url)
        counter = iter(range(10**9))
        written: list[TimerRef] = []
        handles: list[str] = []
        lock = threading.Lock()
        due = int(time.time() * 1000)

        def put() -> None:
            ref = TimerRef(f"c{next(counter)}", due, "t", due)
            store.put_record(ScheduleRecord(ref.schedule_id, due, '{"i": 1}', "default", states.QUEUED, "t", b"0" * 16, due))
            written.append(ref)

        def update() -> None:  # the dispatcher's delivery start: each call a new message, so each a first attempt
            n = next(counter)
            store.begin_delivery(written[n % len(written)], due, due // 1000 + 86_400, f"m{n}")

        def send() -> None:
            queue.send_one(TimerRef(f"s{next(counter)}", due, "t", due), 0)

        def receive() -> bool:
            got = ctx.sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, VisibilityTimeout=300).get("Messages", [])
            with lock:
                handles.extend(m["ReceiptHandle"] for m in got)
            return len(got) == 10

        def delete() -> bool:
            with lock:
                batch, handles[:10] = handles[:10], []
            if batch:
                ctx.sqs.delete_message_batch(QueueUrl=queue_url, Entries=[{"Id": str(i), "ReceiptHandle": h} for i, h in enumerate(batch)])
            return len(batch) == 10

        out: dict = {"threads": CLIENTS, "calls_per_s": {}}
        for name, call in (("PutItem", put), ("UpdateItem", update), ("SendMessage", send)):
            out["calls_per_s"][name] = _rate(call, seconds)
        # Receives and deletes of full batches of 10, from a queue filled first with three times as many
        # messages as the sends managed in their time
        stocked = int(out["calls_per_s"]["SendMessage"] * seconds)
        for _ in range(0, 3 * stocked, 10):
            ctx.sqs.send_message_batch(QueueUrl=queue_url, Entries=[{"Id": str(k), "MessageBody": "x"} for k in range(10)])
        out["calls_per_s"]["ReceiveMessage (10)"] = _rate(receive, seconds)
        out["calls_per_s"]["DeleteMessageBatch (10)"] = _rate(delete, seconds)
        c = out["calls_per_s"]
        per_timer_s = (1 / c["PutItem"] + 1 / c["SendMessage"] + 1 / c["UpdateItem"]
                       + 0.1 / c["ReceiveMessage (10)"] + 0.1 / c["DeleteMessageBatch (10)"])
        out["timers_per_s"] = 1 / per_timer_s
        # what a delivery alone needs (the burst's timers are created before it): the FIRED update, 1/10 receive, 1/10 delete
        out["deliveries_per_s"] = 1 / (1 / c["UpdateItem"] + 0.1 / c["ReceiveMessage (10)"] + 0.1 / c["DeleteMessageBatch (10)"])
        return out


def _rate(call, seconds: float) -> float:
    """Calls per second from 8 threads for ``seconds``; a call that returns False ends its thread (and is not counted)."""
    count = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def loop() -> None:
        while time.monotonic() < stop:
            if call() is False:
                return
            with lock:
                count[0] += 1

    threads = [threading.Thread(target=loop) for _ in range(CLIENTS)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return count[0] / (time.monotonic() - start)


# --- creates --------------------------------------------------------------------------------
def _new_connection_creates(api_url: str, n: int, due_in_s: float, tag: str) -> float:
    """One client, a new connection per request (urllib), one create after another: creates/s."""
    create = route("createSchedule", {})
    start = time.perf_counter()
    for i in range(n):
        body = json.dumps({"id": f"{tag}-{i}", "dueAt": time.time() + due_in_s, "payload": {"i": i}}).encode()
        request = urllib.request.Request(api_url + create.path, body, {"Content-Type": "application/json"},
                                         method=create.method)
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
            if response.status not in (200, 201):
                raise RuntimeError(f"create answered {response.status}")
    return n / (time.perf_counter() - start)


def _pooled_creates(api_url: str, n: int, due_in_s: float, tag: str) -> float:
    """8 clients at once, each with its own keep-alive connection: creates/s."""
    client = api_client(api_url)
    failed = [0]

    def one(k: int) -> None:
        for i in range(k, n, CLIENTS):
            status, _ = client.raw("createSchedule", {"id": f"{tag}-{i}", "dueAt": time.time() + due_in_s,
                                                      "payload": {"i": i}})
            if status not in (200, 201):
                failed[0] += 1

    threads = [threading.Thread(target=one, args=(k,)) for k in range(CLIENTS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed[0]:
        raise RuntimeError(f"{failed[0]} creates failed")
    return n / (time.perf_counter() - start)


def creates(n: int, waiting: int, tag: str) -> dict:
    """Create rates by client kind and path, in one fresh engine with ``waiting`` long timers already in the table."""
    opts = EngineOptions(target=Collector(), sweep_interval=1.0)
    out: dict = {"waiting": waiting}
    with BenchEngine(opts, HandlerTimes()) as eng:
        if waiting:
            day = time.time() + 86_400
            bodies = [{"id": f"{tag}-w{i}", "dueAt": day + i * 8.64, "payload": {"i": i}} for i in range(waiting)]
            out["load_s"] = load_long(eng, bodies, opts.shard_count)
            # The bulk load leaves 20,000 stream records for the enqueuer's poller to read and filter out: a
            # backlog that timers created over time would not leave. Measure once it is read (the engine idles).
            out["settle_s"] = wait_until_idle(eng)
        _new_connection_creates(eng.api_url, 20, 600, f"{tag}-warm")
        for path, due_in in DUE_IN_S.items():
            for kind, creates_per_s, count in (("new_connection", _new_connection_creates, n), ("pooled", _pooled_creates, 2 * n)):
                engine0, moto0, t0 = _cpu_seconds(), _cpu_seconds(eng.moto_pid), time.monotonic()
                out[f"{kind}_{path}_per_s"] = creates_per_s(eng.api_url, count, due_in, f"{tag}-{kind}-{path}")
                wall = time.monotonic() - t0
                # where the time goes: each process's share of one core while it ran (1.0 = a core saturated)
                out.setdefault("core_share", {})[f"{kind}_{path}"] = {
                    "engine": (_cpu_seconds() - engine0) / wall, "moto": (_cpu_seconds(eng.moto_pid) - moto0) / wall}
    return out


# --- idle CPU and memory ---------------------------------------------------------------------
def wait_until_idle(eng, limit_s: float = 180.0, share: float = 0.1) -> float:
    """Seconds until the engine process and its moto each use under ``share`` of a core over one second."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        engine0, moto0 = _cpu_seconds(), _cpu_seconds(eng.moto_pid)
        time.sleep(1.0)
        if _cpu_seconds() - engine0 < share and _cpu_seconds(eng.moto_pid) - moto0 < share:
            break
    return time.monotonic() - start


def idle_cpu(seconds: float) -> dict:
    with BenchEngine(EngineOptions(target=Collector()), HandlerTimes()) as eng:
        time.sleep(2)
        engine0, moto0, t0 = _cpu_seconds(), _cpu_seconds(eng.moto_pid), time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - t0
        return {"seconds": wall, "engine_core_share": (_cpu_seconds() - engine0) / wall,
                "moto_core_share": (_cpu_seconds(eng.moto_pid) - moto0) / wall}


def soak(seconds: float, every_s: float) -> dict:
    opts = EngineOptions(target=Collector(), sweep_interval=1.0)
    samples = []
    with BenchEngine(opts, HandlerTimes()) as eng:
        day = time.time() + 86_400
        load_long(eng, [{"id": f"soak-{i}", "dueAt": day + i * 8.64, "payload": {"i": i}} for i in range(WAITING)],
                  opts.shard_count)
        wait_until_idle(eng)
        start = time.monotonic()
        while True:
            elapsed = time.monotonic() - start
            samples.append({"t_s": round(elapsed, 1), "engine_mb": round(_rss_mb(), 1), "moto_mb": round(_rss_mb(eng.moto_pid), 1)})
            if elapsed >= seconds:
                break
            time.sleep(min(every_s, seconds - elapsed + 0.01))
    total = [s["engine_mb"] + s["moto_mb"] for s in samples]
    half = len(total) // 2
    return {"waiting": WAITING, "seconds": seconds, "samples": samples, "peak_mb": max(total),
            "first_mb": total[0], "last_mb": total[-1],
            "growth_second_half_mb": total[-1] - total[half]}


def run(repeats: int, n: int, ceiling_s: float, idle_s: float, soak_s: float, soak_every_s: float) -> dict:
    out: dict = {"n": n, "clients": CLIENTS, "waiting": WAITING, "runs": []}
    for r in range(repeats):
        log(f"engine {r + 1}/{repeats}: moto's ceiling ({ceiling_s:.0f} s per call), then creates in an empty engine "
            f"and with {WAITING:,} waiting")
        res = {"ceiling": ceiling(ceiling_s), "empty": creates(n, 0, f"e{r}"), "full": creates(n, WAITING, f"f{r}")}
        res["full_over_empty"] = {k: res["full"][k] / res["empty"][k] for k in res["empty"] if k.endswith("_per_s")}
        c, e = res["ceiling"], res["empty"]
        log(f"  ceiling {c['timers_per_s']:.0f} timers/s; creates: new connection {e['new_connection_long_per_s']:.0f}/s, "
            f"{CLIENTS} clients {e['pooled_long_per_s']:.0f}/s (long); full/empty "
            + ", ".join(f"{k} {v:.2f}" for k, v in res["full_over_empty"].items()))
        out["runs"].append(res)
    out["summary"] = {k: spread([r["empty"][k] for r in out["runs"]]) for k in out["runs"][0]["empty"] if k.endswith("_per_s")}
    log(f"engine: idle CPU over {idle_s:.0f} s")
    out["idle"] = idle_cpu(idle_s)
    log(f"  engine {out['idle']['engine_core_share']:.1%} of a core, moto {out['idle']['moto_core_share']:.1%}")
    log(f"engine: memory with {WAITING:,} waiting timers and 1 s sweeps, over {soak_s:.0f} s")
    out["soak"] = soak(soak_s, soak_every_s)
    log(f"  peak {out['soak']['peak_mb']:.0f} MB; second half growth {out['soak']['growth_second_half_mb']:+.1f} MB")
    return out
