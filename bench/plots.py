"""The PNG plots of docs/benchmarks.md: lateness CDF and lateness over time (precision), deliveries over time (burst,
one plot per size), memory over the engine's soak."""

from __future__ import annotations

from pathlib import Path

from .report_timing import BURST_TARGET_S, precision_sets


def plots(data: dict, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made: list[str] = []

    def save(fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append(name)

    prec = data.get("precision") or {}
    sets = precision_sets(prec) if prec.get("runs") else []
    if any(r.get("series") for _, runs in sets for r in runs):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        early = 0
        for label, runs in sets:
            paths: dict = {}
            for run in runs:
                for _, lateness, path in run.get("series", []):
                    paths.setdefault(path, []).append(lateness)
            early += sum(1 for values in paths.values() for x in values if x < 0)
            for path, values in sorted(paths.items(), key=lambda kv: kv[0] != "short"):
                v = sorted(max(x, 1.0) for x in values)
                ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], label=f"{label}: {path} (n={len(v)})")
        ax.axvline(100, color="grey", ls="--", lw=0.8)
        ax.text(100, 0.02, " p99 target 100 ms", color="grey", fontsize=8)
        ax.set_xscale("log")
        ax.set_xlim(left=1)
        ax.set_xlabel(f"lateness at the target (ms, receive time - dueAt; early deliveries: {early})")
        ax.set_ylabel("fraction delivered")
        ax.set_title(f"Lateness CDF per window and path ({prec['n']} timers over {prec['span_s']:.0f} s, all repeats)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "bench-lateness-cdf.png")
    series = [(f"{label} #{i + 1}", run["series"]) for label, runs in sets for i, run in enumerate(runs) if run.get("series")]
    if series:
        fig, axes = plt.subplots(len(series), 1, figsize=(7, 1.8 * len(series) + 1), sharex=True, squeeze=False)
        for (label, points), row in zip(series, axes):
            ax = row[0]
            for path, colour in (("short", "tab:blue"), ("long", "tab:orange"), ("unknown", "tab:grey")):
                pts = [(d, lat) for d, lat, p in points if p == path]
                if pts:
                    ax.scatter([d for d, _ in pts], [max(lat, 1) for _, lat in pts], s=3, color=colour, label=path)
            ax.set_yscale("log")
            ax.axhline(100, color="grey", ls="--", lw=0.8)
            ax.set_ylabel(f"{label}\nms", fontsize=8)
            ax.grid(alpha=0.3)
            ax.legend(loc="upper right", fontsize=7)
        axes[0][0].set_title("Precision: lateness of each timer against its due time")
        axes[-1][0].set_xlabel("due time (s from the first due)")
        save(fig, "bench-lateness-over-time.png")
    burst = data.get("burst") or {}
    for size, runs in (burst.get("by_size") or {}).items():
        n, cap = int(size), float(burst["cap_s"].get(size, 0))
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for i, run in enumerate(runs):
            if run.get("curve"):
                ax.plot(*zip(*run["curve"]), label=f"repeat {i + 1}: {run['delivered']:,} delivered")
        ax.axhline(n, color="grey", ls=":", lw=0.8)
        goal = BURST_TARGET_S.get(n)
        ax.set_xlim(0, max([cap, goal or 0] + [r["curve"][-1][0] for r in runs if r.get("curve")]) * 1.02)
        if goal:
            ax.axvline(goal, color="red", ls="--", lw=0.8)
            ax.text(goal, n * 0.5, f" {goal} s target", color="red", fontsize=8)
        ax.set_xlabel("seconds after the due second")
        ax.set_ylabel("deliveries (cumulative)")
        ax.set_title(f"Burst: {n:,} timers due in one second (cap {cap:.0f} s)")
        ax.grid(alpha=0.3)
        ax.legend()
        save(fig, f"bench-burst-{n}.png")
    soak = (data.get("engine") or {}).get("soak")
    if soak and soak.get("samples"):
        fig, ax = plt.subplots(figsize=(7, 3.6))
        t = [s["t_s"] / 60 for s in soak["samples"]]
        for key, label in (("engine_mb", "engine process"), ("moto_mb", "moto child")):
            ax.plot(t, [s[key] for s in soak["samples"]], marker=".", label=label)
        ax.plot(t, [s["engine_mb"] + s["moto_mb"] for s in soak["samples"]], marker=".", label="total")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("minutes into the soak")
        ax.set_ylabel("resident set (MB)")
        ax.set_title(f"Engine memory with {soak['waiting']:,} waiting timers, 1 s sweeps")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
        save(fig, "bench-memory.png")
    return made

