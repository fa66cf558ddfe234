"""An in-process profiler that names the limiter: CPU per thread role, plus sampled hot frames.

py-spy is not a dependency, and cProfile sees one thread only, so this module
combines two cheap observations of every thread of the process:

- CPU seconds per thread, read from ``/proc/self/task/*/stat`` before and after;
- stack samples (``sys._current_frames`` every few ms), which give each thread
  its role (moto server, API server, pollers, handlers, target endpoint) and
  the hottest frames of threads that are not blocked.

Since the pollers, the handlers and the HTTP servers share one interpreter
(and moto did too, before the engine moved it to a child process), the GIL caps
the process near one core: ``process CPU / wall`` near 1.0 means CPU-bound on
the GIL, and the split per role says who spends it.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time

from .common import process_cpu_seconds, thread_cpu_seconds

_IDLE_FUNCS = {
    "wait", "select", "poll", "accept", "recv", "recv_into", "readinto", "readline", "sleep",
    "_wait_for_tstate_lock", "get", "serve_forever", "_handle_request_noblock", "handle_request",
    "read", "_read_status", "begin", "getresponse", "connect", "create_connection", "_worker",
}
# Frames that mostly wait on a lock held by another thread (the C-level acquire has no frame).
_LOCK_WAIT_FUNCS = {"get_application"}


_POLLER_ROLES = {
    "stream:enqueuer": "stream poller + enqueuer handler",
    "sqs:dispatcher": "SQS poller (ReceiveMessage)",
    "invoke:dispatcher": "dispatcher handler (SQS mapping pool)",
    "rule:sweeper": "schedule rule + sweeper handler",
}


def _role(frames: list, thread_name: str = "") -> str:
    """Classify a thread by its name (pollers) or the code on its stack."""
    for prefix, role in _POLLER_ROLES.items():
        if thread_name.startswith(prefix):
            return role
    if thread_name.startswith("delivery"):
        return "dispatcher deliveries (the handler's thread pool)"
    files = [f.f_code.co_filename for f in frames]
    joined = "\n".join(files)
    if "moto" + os.sep in joined:
        return "moto server (DynamoDB, Streams, SQS)"
    if any(f.endswith(os.path.join("local", "servers.py")) for f in files):
        if any("handlers" + os.sep + "api.py" in f for f in files):
            return "API server + api handler"
        if "LambdaEndpoint" in joined or any("targets.py" in f for f in files):
            return "Lambda endpoint + target"
        return "local HTTP servers (idle/parsing)"
    if any("handlers" + os.sep + "sweeper.py" in f for f in files):
        return "sweeper claims (the handler's thread pool)"
    if any("aws" + os.sep + "create.py" in f for f in files):
        return "api record writes (the handler's thread pool)"
    if "concurrent" + os.sep + "futures" in joined:
        return "handler thread pools (claims, deliveries)"
    if any(os.sep + "bench" + os.sep in f for f in files):
        return "bench (load generator, profiler)"
    return "other"


def _package(filename: str) -> str:
    for key, label in (
        ("moto", "moto"), ("werkzeug", "werkzeug/flask"), ("flask", "werkzeug/flask"),
        ("botocore", "botocore (client)"), ("boto3", "botocore (client)"), ("urllib3", "urllib3 (client)"),
        ("scheduler_runtime", "scheduler_runtime (handlers)"), ("cdk_delayed_scheduler", "local engine"),
        ("http" + os.sep + "server", "http.server"), ("http" + os.sep + "client", "http.client"),
        ("json", "json"), ("copy.py", "copy.deepcopy"), ("xml", "xml"), ("email", "email (header parsing)"),
    ):
        if key in filename:
            return label
    return "stdlib/other"


class Profiler:
    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-profiler", daemon=True)
        self.roles: dict[int, str] = {}
        self.hot_frames: collections.Counter = collections.Counter()
        self.hot_packages: collections.Counter = collections.Counter()
        self.samples = 0
        self.busy_by_role: collections.Counter = collections.Counter()
        self.lock_waits: collections.Counter = collections.Counter()

    def __enter__(self) -> "Profiler":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._cpu0 = thread_cpu_seconds()
        self._pcpu0 = process_cpu_seconds()
        self._wall0 = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._cpu1 = thread_cpu_seconds()
        self._pcpu1 = process_cpu_seconds()
        self._wall1 = time.monotonic()

    def _run(self) -> None:
        me = threading.get_ident()
        native = {t.ident: t.native_id for t in threading.enumerate()}
        names = {t.ident: t.name for t in threading.enumerate()}
        while not self._stop.wait(self.interval):
            frames = sys._current_frames()
            if any(ident not in native for ident in frames):
                threads = threading.enumerate()
                native = {t.ident: t.native_id for t in threads}
                names = {t.ident: t.name for t in threads}
            self.samples += 1
            for ident, top in frames.items():
                if ident == me:
                    continue
                stack = []
                f = top
                while f is not None:
                    stack.append(f)
                    f = f.f_back
                stack.reverse()
                nid = native.get(ident)
                if nid is not None and nid not in self.roles:
                    role = _role(stack, names.get(ident, ''))
                    if role != "other" or len(stack) > 3:
                        self.roles[nid] = role
                elif nid is not None and self.roles.get(nid) in ("other", "local HTTP servers (idle/parsing)"):
                    role = _role(stack, names.get(ident, ''))
                    if role not in ("other", "local HTTP servers (idle/parsing)"):
                        self.roles[nid] = role
                if top.f_code.co_name in _IDLE_FUNCS:
                    continue
                code = top.f_code
                if code.co_name in _LOCK_WAIT_FUNCS:
                    self.lock_waits[f"{_short(code.co_filename)}:{code.co_name}"] += 1
                    continue
                role = self.roles.get(nid) or _role(stack, names.get(ident, ""))
                if role.startswith("bench"):
                    continue  # the load generator and the waiting main thread are not the system under test
                self.busy_by_role[role] += 1
                self.hot_frames[f"{_short(code.co_filename)}:{code.co_name}"] += 1
                self.hot_packages[_package(code.co_filename)] += 1

    def report(self) -> dict:
        wall = self._wall1 - self._wall0
        by_role: collections.Counter = collections.Counter()
        for tid, cpu1 in self._cpu1.items():
            delta = cpu1 - self._cpu0.get(tid, 0.0)
            if delta <= 0:
                continue
            by_role[self.roles.get(tid, "other (short-lived or unclassified threads)")] += delta
        total_busy = sum(self.hot_packages.values()) or 1
        pcpu = self._pcpu1 - self._pcpu0
        exited = pcpu - sum(by_role.values())
        if exited > 0:
            by_role["CPU not attributed to a thread alive at the end (exited threads: per-connection HTTP threads, among others)"] += exited
        role_samples = sum(self.busy_by_role.values()) or 1
        return {
            "busy_sample_share_by_role": {k: v / role_samples for k, v in self.busy_by_role.most_common()},
            "lock_wait_samples": dict(self.lock_waits),
            "wall_s": wall,
            "process_cpu_s": self._pcpu1 - self._pcpu0,
            "cpu_per_wall": (self._pcpu1 - self._pcpu0) / wall if wall else None,
            "cpu_s_by_role": dict(by_role.most_common()),
            "busy_sample_share_by_package": {k: v / total_busy for k, v in self.hot_packages.most_common(12)},
            "hot_frames": [(k, v / total_busy) for k, v in self.hot_frames.most_common(15)],
            "samples": self.samples,
        }


def _short(filename: str) -> str:
    for marker in ("site-packages" + os.sep, "lambda" + os.sep, "src" + os.sep, "lib" + os.sep + "python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return os.path.basename(filename)
