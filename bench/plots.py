"""The PNG plots of docs/benchmarks.md: lateness CDF and lateness over time (precision), deliveries over time (burst)."""

from __future__ import annotations

from pathlib import Path


def plots(data: dict, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    prec = data.get("precision", {})
    if prec.get("runs"):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        paths: dict = {}
        for run in prec["runs"]:
            for path, values in run.get("raw", {}).items():
                paths.setdefault(path, []).extend(values)
        early = sum(1 for values in paths.values() for x in values if x < 0)
        for path, values in sorted(paths.items()):
            v = sorted(max(x, 1.0) for x in values)
            ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], label=f"{path} (n={len(v)})")
        ax.axvline(100, color="grey", ls="--", lw=0.8)
        ax.text(100, 0.02, " p99 target 100 ms", color="grey", fontsize=8)
        ax.set_xscale("log")
        ax.set_xlim(left=1)
        ax.set_xlabel(f"lateness at the target (ms, receive time - dueAt; early deliveries: {early})")
        ax.set_ylabel("fraction delivered")
        ax.set_title(f"Lateness CDF per path ({prec['n']} timers over {prec['span_s']:.0f} s, all repeats)")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "bench-lateness-cdf.png", dpi=110)
        plt.close(fig)
        made.append("bench-lateness-cdf.png")
    if prec.get("runs") and any(r.get("series") for r in prec["runs"]):
        fig, axes = plt.subplots(len(prec["runs"]), 1, figsize=(7, 1.8 * len(prec["runs"]) + 1), sharex=True, squeeze=False)
        for i, run in enumerate(prec["runs"]):
            ax = axes[i][0]
            paths = sorted({p for _, _, p in run.get("series", [])}, key=lambda p: (p != "short", p))
            for path, colour in zip(paths, ("tab:blue", "tab:orange", "tab:green", "tab:grey")):
                pts = [(d, l) for d, l, p in run.get("series", []) if p == path]
                if pts:
                    ax.scatter([d for d, _ in pts], [max(l, 1) for _, l in pts], s=3, color=colour, label=path)
            ax.set_yscale("log")
            ax.axhline(100, color="grey", ls="--", lw=0.8)
            ax.set_ylabel(f"#{i + 1} ms")
            ax.grid(alpha=0.3)
        axes[0][0].legend(loc="upper right", fontsize=8)
        axes[0][0].set_title("Precision: lateness of each timer against its due time")
        axes[-1][0].set_xlabel("due time (s from the first due)")
        fig.tight_layout()
        fig.savefig(out / "bench-lateness-over-time.png", dpi=110)
        plt.close(fig)
        made.append("bench-lateness-over-time.png")
    burst = data.get("burst", {})
    if burst.get("runs"):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for i, run in enumerate(burst["runs"]):
            t = sorted(run.get("timeline_s", []))
            if t:
                ax.plot(t, range(1, len(t) + 1), label=f"repeat {i + 1}: {run['delivered']:,} delivered")
        ax.axhline(burst["n"], color="grey", ls=":", lw=0.8)
        ax.set_xlim(left=0)
        ax.axvline(10, color="red", ls="--", lw=0.8)
        ax.text(10, burst["n"] * 0.5, " 10 s target", color="red", fontsize=8)
        ax.set_xlabel("seconds after the due second")
        ax.set_ylabel("deliveries (cumulative)")
        ax.set_title(f"Burst: {burst['n']:,} timers due in one second (cap {burst['cap_s']:.0f} s)")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "bench-burst.png", dpi=110)
        plt.close(fig)
        made.append("bench-burst.png")
    return made
