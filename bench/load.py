"""Load: 10,000 schedules through the HTTP API of ``cdk-delayed-scheduler local``, as a user runs it.

The engine runs in a process of its own (the CLI, default options, its moto forked by a child), so its
memory is its own and the load generator does not share its GIL. Two runs, each in a fresh engine:

- **single**: 8 clients at once, each on its own keep-alive connection, ``POST /schedules``;
- **batch**: the same 8 clients, ``POST /schedule-batches`` with 10 schedules a request.

The schedules are due hours ahead (timer items waiting for the sweeper), so no delivery runs
meanwhile. A 9th client, in a process of its own, issues ``GET /schedules/{id}`` of an already
created id at a steady rate from before the load starts until it ends: its latency idle and under
load. Peak memory is each process's high-water mark (``VmHWM`` in ``/proc/<pid>/status``), the
engine's and its moto child's, read after the load.
"""

from __future__ import annotations

import collections
import multiprocessing
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .common import BATCH_SIZE, api_client, distribution, item_statuses, log, spread

CLIENTS = 8
DUE_IN_S = 3 * 3600  # hours ahead: the schedules wait as timers, none is delivered during the run
GET_RATE_PER_S = 10.0
IDLE_S = 3.0  # the prober's GETs before the load starts: the idle latency


# --- the engine, a process of its own -----------------------------------------------------------
class EngineProcess:
    """``cdk-delayed-scheduler local --port 0`` with default options; its API URL, pid and moto's pid."""

    def __enter__(self) -> "EngineProcess":
        self.process = subprocess.Popen([sys.executable, "-m", "cdk_delayed_scheduler.local.cli", "local", "--port", "0"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            match = re.search(r"API on (http://\S+) ", line)
            if match:
                self.api_url = match.group(1)
                break
        else:
            raise RuntimeError(f"the engine did not start: {''.join(self.stderr[-10:])}")
        threading.Thread(target=self.stderr.extend, args=(self.process.stderr,), daemon=True).start()
        self.moto_pid = _child_pid(_child_pid(self.process.pid))  # the server its moto zygote forked
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def memory_mb(self) -> dict:
        """Each process's resident set now and its high-water mark, in MB."""
        return {name: {"rss": _status_mb(pid, "VmRSS"), "peak": _status_mb(pid, "VmHWM")}
                for name, pid in (("engine", self.process.pid), ("moto", self.moto_pid))}

    def errors_logged(self) -> int:
        return sum(1 for line in list(self.stderr) if " ERROR " in line or "Traceback" in line)


def _child_pid(pid: int) -> int:
    """The one child of ``pid``, from ``/proc``: the engine's moto zygote, or the server that forked."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                return int(stat.parent.name)
        except (OSError, IndexError, ValueError):
            continue
    raise RuntimeError(f"process {pid} has no child")


def _status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- the 9th client: GETs at a steady rate, in a process of its own --------------------------------
def _probe(api_url: str, ids: Any, stop: Any, rate: float, out: Any) -> None:
    """GET a random already-created id every 1/rate s until ``stop``; put ``[(wall time sent, ms, status)]``."""
    client, known, samples, rng = api_client(api_url), [], [], random.Random(1)
    tick = time.monotonic()
    while not stop.is_set():
        while not ids.empty():
            known.extend(ids.get())
        if known:
            sent, started = time.time(), time.perf_counter()
            status, _ = client.raw("getSchedule", id=rng.choice(known))
            samples.append((sent, (time.perf_counter() - started) * 1000, status))
        tick += 1 / rate
        time.sleep(max(0.0, tick - time.monotonic()))
    out.put(samples)


# --- one run ----------------------------------------------------------------------------------------
def one_run(mode: str, n: int, tag: str) -> dict:
    """``n`` creates from 8 clients (``single`` or ``batch`` of 10) in a fresh engine, probed by the 9th."""
    ctx = multiprocessing.get_context("spawn")
    with EngineProcess() as engine:
        client = api_client(engine.api_url)
        due = time.time() + DUE_IN_S
        bodies = [{"id": f"{tag}-{mode}-{i}", "dueAt": round(due + i % 3600, 3), "payload": {"i": i}} for i in range(n)]
        warm = [{"id": f"{tag}-{mode}-warm-{i}", "dueAt": round(due, 3), "payload": {}} for i in range(BATCH_SIZE)]
        warmed = client.raw("createScheduleBatch", {"schedules": warm})
        assert warmed.status == 200
        ids, stop, out = ctx.Queue(), ctx.Event(), ctx.Queue()
        ids.put([b["id"] for b in warm])
        prober = ctx.Process(target=_probe, args=(engine.api_url, ids, stop, GET_RATE_PER_S, out), daemon=True)
        prober.start()
        time.sleep(IDLE_S + 2.0)  # the prober's start (a fresh interpreter), then its idle samples
        before = engine.memory_mb()
        size = BATCH_SIZE if mode == "batch" else 1
        units = [bodies[k:k + size] for k in range(0, n, size)]
        lock, failed, latencies, statuses = threading.Lock(), [0], [], collections.Counter([warmed.status])

        def send(mine: list) -> None:
            for unit in mine:
                started = time.perf_counter()
                if mode == "batch":
                    answer = client.raw("createScheduleBatch", {"schedules": unit})
                    items = item_statuses(answer)
                    ok = answer.status == 200 and len(items) == len(unit) and all(s in (200, 201) for s in items)
                else:
                    answer = client.raw("createSchedule", unit[0])
                    ok = answer.status in (200, 201)
                elapsed = (time.perf_counter() - started) * 1000
                if ok:
                    ids.put([b["id"] for b in unit])
                with lock:
                    latencies.append(elapsed)
                    failed[0] += 0 if ok else len(unit)
                    statuses[answer.status] += 1

        threads = [threading.Thread(target=send, args=(units[c::CLIENTS],), daemon=True) for c in range(CLIENTS)]
        load_start = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        load_end = time.time()
        stop.set()
        samples = out.get(timeout=60)
        prober.join(timeout=30)
        after = engine.memory_mb()
        errors_logged = engine.errors_logged()
    idle = [ms for t, ms, _ in samples if t < load_start]
    loaded = [ms for t, ms, _ in samples if load_start <= t <= load_end]
    seconds = load_end - load_start
    return {
        "mode": mode, "n": n, "clients": CLIENTS, "per_request": size, "seconds": seconds,
        "creates_per_s": n / seconds, "failed_creates": failed[0], "statuses": dict(statuses),
        "request_latency_ms": distribution(latencies),
        "get_idle_ms": distribution(idle), "get_loaded_ms": distribution(loaded),
        "get_not_200": sum(1 for _, _, status in samples if status != 200),
        "get_rate_per_s": len(loaded) / seconds if seconds else None,
        "memory_mb": {"before_load": before, "after_load": after}, "engine_errors_logged": errors_logged,
    }


def run(repeats: int, n: int) -> dict:
    out: dict = {"n": n, "clients": CLIENTS, "batch": BATCH_SIZE, "due_in_s": DUE_IN_S,
                 "get_rate_per_s": GET_RATE_PER_S, "runs": []}
    for r in range(repeats):
        res = {}
        for mode in ("single", "batch"):
            log(f"load {r + 1}/{repeats}: {n:,} creates ({mode}) from {CLIENTS} clients, GETs at {GET_RATE_PER_S:.0f}/s")
            x = res[mode] = one_run(mode, n, f"l{r}")
            mem = x["memory_mb"]["after_load"]
            log(f"  {x['creates_per_s']:.0f} creates/s ({x['failed_creates']} failed); GET p50/p99/max "
                f"{x['get_loaded_ms'].get('p50', 0):.1f}/{x['get_loaded_ms'].get('p99', 0):.1f}/"
                f"{x['get_loaded_ms'].get('max', 0):.1f} ms (idle p50 {x['get_idle_ms'].get('p50', 0):.1f}); peak "
                f"engine {mem['engine']['peak']:.0f} MB, moto {mem['moto']['peak']:.0f} MB")
        out["runs"].append(res)
    out["summary"] = {mode: spread([r[mode]["creates_per_s"] for r in out["runs"]]) for mode in ("single", "batch")}
    return out
