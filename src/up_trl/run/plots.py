"""One PNG of a run: reward, entropy and UP's capacity metrics against the optimizer step."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

PANELS = (
    ("reward", ("reward",)),
    ("entropy", ("entropy",)),
    ("probability capacity (positive tokens)", ("up/capacity_up_mean", "up/capacity_clipped_mean")),
    ("positive tokens past the clip / drift", ("up/would_clip_frac", "up/positive_abs_log_ratio_mean")),
)


def read_metrics(path: str | Path) -> list[dict]:
    """The records of a metrics.jsonl file (lines that fail to parse are skipped: a run may have been killed)."""
    records = []
    for line in Path(path).read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            records.append(json.loads(line))
    return records


def series(records: list[dict], key: str) -> tuple[list[int], list[float]]:
    points = [(r["step"], r[key]) for r in records if isinstance(r.get(key), (int, float))]
    return [p[0] for p in points], [p[1] for p in points]


def plot_metrics(metrics_path: str | Path, png_path: str | Path, title: str | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for ax, (panel_title, keys) in zip(axes.flat, PANELS):
        for key in keys:
            steps, values = series(records, key)
            if steps:
                ax.plot(steps, values, marker="o", markersize=3, label=key)
        ax.set_title(panel_title)
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
    for ax in axes[1]:
        ax.set_xlabel("optimizer step")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    png_path = Path(png_path)
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return png_path
