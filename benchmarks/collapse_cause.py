"""Which tokens drive UP's entropy runaway: per-token statistics on a collapsing seed against its parent, and routing
counterfactuals (UP's unclipped branch given to only some of the positive tokens), on the stress task of collapse.py.

    python benchmarks/collapse_cause.py --output_dir benchmarks/results/collapse_cause     # ~15 min, 2 workers

Part 1 (per-token statistics): one seed of the parent and of UP (DAPO by default) at the stress setting, recording at
every optimizer step, for each class of completion token and each advantage sign: how many, their mean log r =
log pi_theta - log pi_old (drift since sampling) and the policy's mean entropy at those positions (TRL's own
per-position entropy of the training forward). Token classes: the answer (the first completion token, the only one
the reward reads), the tail tokens that were likely at sampling time (pi_old >= RARE), the rare ones (pi_old < RARE),
and EOS.

Part 2 (counterfactuals): the same seeds with UP's unclipped branch restricted to one class of positive tokens; the
others keep the parent's clip (advantages stay per sequence, only the routing changes): "answer only", "tail only",
"all but rare", "rare only". A class drives the runaway if giving it alone the unclipped branch reproduces it and
withholding it alone prevents it.

Writes under --output_dir: results.json (one record per run) with curves.parquet (their per-step curves; read both
with `collapse_report.read_report`), tokens.parquet (part 1's per-token statistics: one row per run and optimizer
step) and cause.png; the last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import collapse_report
import collapse_settings
import torch
import toy_runs
from bench import describe_machine, git_commit, save_png
from bench import init_worker as _init_worker

TOKENS_FILE = "tokens.parquet"
RARE = 0.05  # pi_old below this: a rare token
CLASSES = ("answer", "tail likely", "tail rare", "eos")
# Which positive tokens take UP's unclipped branch, as a function of (class of each token) -> bool.
ROUTINGS = {
    "UP (all positive tokens)": lambda c: c >= 0,
    "answer only": lambda c: c == 0,
    "tail only": lambda c: (c == 1) | (c == 2),
    "all but rare": lambda c: c != 2,
    "rare only": lambda c: c == 2,
}


def token_classes(completion_ids, old_per_token_logps, eos_token_id) -> torch.Tensor:
    """(B, T) class index into CLASSES: 0 the first completion token, 3 EOS, else 1 (pi_old >= RARE) or 2 (rare)."""
    classes = torch.where(old_per_token_logps.exp() >= RARE, 1, 2)
    classes[:, 0] = 0
    return torch.where((completion_ids == eos_token_id) & (classes != 0), 3, classes)


def install(routing: str | None, records: list | None):
    """Patch the UP trainer in this process: restrict the routing (None: the paper's) and/or record statistics.

    The routing: `UPGRPOTrainer._routes` (where pi_old is anchored to sg(pi_theta), i.e. UP's unclipped branch) is
    ANDed with the routing's class mask, where the batch has old log-probs (off-policy) and UP routes at all; the other
    positive tokens keep the parent's clip. The statistics: `UPGRPOTrainer._compute_loss` records, per loss call, the
    parent forward's per-token log-probs and entropies (`_get_per_token_logps_and_entropies`, wrapped on the instance
    for the duration of the call) against the batch's pi_old. Installing again replaces an earlier install."""
    import functools

    from up_trl.models.offline import tiny_tokenizer
    from up_trl.trainers.grpo_trainer import UPGRPOTrainer

    # the trainer's own methods, also when an earlier install patched them (functools.wraps keeps them as __wrapped__)
    original_routes = getattr(UPGRPOTrainer._routes, "__wrapped__", UPGRPOTrainer._routes)
    original_loss = getattr(UPGRPOTrainer._compute_loss, "__wrapped__", UPGRPOTrainer._compute_loss)
    eos = tiny_tokenizer().eos_token_id

    @functools.wraps(original_routes)
    def _routes(self, inputs):
        routes = original_routes(self, inputs)  # (B, 1) per sequence or (B, T) per token; None under "off"
        old = inputs.get("old_per_token_logps")
        if routing is None or routes is None or old is None:
            return routes
        return routes & ROUTINGS[routing](token_classes(inputs["completion_ids"], old, eos))  # (B, T)

    @functools.wraps(original_loss)
    def _compute_loss(self, model, inputs):
        if records is None:
            return original_loss(self, model, inputs)
        seen = {}
        forward = self._get_per_token_logps_and_entropies  # the class's: UP's anchor hook stays in it

        def recording_forward(*args, **kwargs):
            out = forward(*args, **kwargs)
            if not seen:  # the policy forward: the first inside the parent's loss
                seen["logps"], seen["entropies"] = out[0], out[1]
            return out

        self.__dict__["_get_per_token_logps_and_entropies"] = recording_forward
        try:
            loss = original_loss(self, model, inputs)
        finally:
            del self.__dict__["_get_per_token_logps_and_entropies"]
        per_token_logps = seen["logps"].detach()
        old = inputs.get("old_per_token_logps")
        old = per_token_logps if old is None else old
        advantages = inputs["advantages"]
        advantages = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
        mask = self._loss_mask(inputs).bool()
        classes = token_classes(inputs["completion_ids"], old, eos)
        log_r = per_token_logps - old
        sign = advantages.expand_as(log_r)
        entropies = seen["entropies"]
        row = {"step": self.state.global_step}
        for k, name in enumerate(CLASSES):
            for label, selected in (("positive", sign > 0), ("negative", sign < 0)):
                where = (classes == k) & selected & mask
                if where.any():
                    row[f"{name}/{label}/n"] = int(where.sum())
                    row[f"{name}/{label}/log_r"] = round(log_r[where].mean().item(), 4)
            where = (classes == k) & mask
            if where.any() and entropies is not None:
                row[f"{name}/entropy"] = round(entropies.detach()[where].mean().item(), 4)
        records.append(row)
        return loss

    UPGRPOTrainer._routes = _routes
    UPGRPOTrainer._compute_loss = _compute_loss


def _job(job):
    kind, name, routing, seed, settings = job
    records = [] if kind == "tokens" else None
    install(routing, records)
    run = toy_runs.toy_run(name, seed, settings["level"], settings)
    run.update(kind=kind, routing=routing or ("parent" if not name.startswith("UP") else "UP (all positive tokens)"))
    if records is not None:
        run["token_stats"] = records
    return run


def write_cause(out: Path, report: dict) -> None:
    """`report` as results.json + curves.parquet (`collapse_report.write_report`) and its runs' token statistics as
    tokens.parquet (one row per run and step; null where a class had no token)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"run": i, **row} for i, run in enumerate(report["runs"]) for row in run.get("token_stats", [])]
    runs = [{key: value for key, value in run.items() if key != "token_stats"} for run in report["runs"]]
    collapse_report.write_report(out, {**report, "runs": runs})
    pq.write_table(pa.Table.from_pylist(rows), out / TOKENS_FILE, compression="zstd")


def read_cause(out: Path) -> dict:
    """What `write_cause` wrote, each run with its `token_stats` back."""
    import pyarrow.parquet as pq

    report = collapse_report.read_report(out)
    for row in pq.read_table(out / TOKENS_FILE).to_pylist():
        run = report["runs"][row.pop("run")]
        run.setdefault("token_stats", []).append({key: value for key, value in row.items() if value is not None})
    return report


def plot(runs: list[dict], path: Path, family: str, seed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    token_runs = {r["config"]: r for r in runs if r["kind"] == "tokens"}
    styles = {"answer": "-", "tail likely": "--", "tail rare": ":"}
    for config, color in ((family, "tab:blue"), (f"UP-{family}", "tab:red")):
        stats = token_runs[config]["token_stats"]
        for name, style in styles.items():
            points = [(r["step"], r[f"{name}/entropy"]) for r in stats if f"{name}/entropy" in r]
            steps, values = zip(*points)
            axes[0].plot(steps, values, style, color=color, lw=1, label=f"{config}: {name}")
            points = [(r["step"], r[f"{name}/positive/log_r"]) for r in stats if f"{name}/positive/log_r" in r]
            if points:
                steps, values = zip(*points)
                smooth = [statistics.fmean(values[max(0, i - 24) : i + 1]) for i in range(len(values))]
                axes[1].plot(steps, smooth, style, color=color, lw=1, label=f"{config}: {name}")
    axes[0].set_title(f"policy entropy at the positions of each token class\n(seed {seed}, stress task)", fontsize=10)
    axes[0].set_ylabel("entropy (nats)")
    axes[1].set_title("positive tokens' drift when trained: log(pi/pi_old),\nrolling mean of 25 steps", fontsize=10)
    axes[1].axhline(0.0, color="grey", lw=0.5)
    axes[1].axhline(float(torch.log(torch.tensor(1.28))), color="grey", lw=0.5, ls="--")
    for ax in axes[:2]:
        ax.set_xlabel("optimizer step")
        ax.legend(fontsize=6)
        ax.grid(alpha=0.3)
    counter = [r for r in runs if r["kind"] == "routing"]
    labels = ["parent"] + list(ROUTINGS)
    for i, label in enumerate(labels):
        values = [r["final_entropy"] for r in counter if r["routing"] == label]
        axes[2].scatter([i] * len(values), values, color="tab:blue" if label == "parent" else "tab:red", s=14)
        if values:
            axes[2].hlines(statistics.fmean(values), i - 0.3, i + 0.3, color="black")
    axes[2].set_xticks(range(len(labels)), labels, rotation=25, ha="right", fontsize=7)
    axes[2].axhline(collapse_settings.COLLAPSE_ENTROPY, color="grey", ls="--", lw=0.8)
    axes[2].set_ylabel("final entropy (nats)")
    axes[2].set_title(
        f"final entropy when only some positive tokens get\nUP's unclipped branch ({family}; dots: seeds)", fontsize=10
    )
    axes[2].grid(alpha=0.3)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", choices=["DAPO", "GRPO"], default="DAPO")
    parser.add_argument("--token_seed", type=int, default=0, help="the seed of part 1")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="the seeds of part 2")
    parser.add_argument("--task", choices=["toy", "tail"], default="tail")
    parser.add_argument("--updates_per_rollout", type=int, default=16)
    parser.add_argument("--max_steps", type=int, default=collapse_settings.STRESS_STEPS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output_dir", default="outputs/collapse_cause")
    parser.add_argument("--plot_only", action="store_true", help="redraw cause.png from the results in output_dir")
    args = parser.parse_args(argv)
    if args.plot_only:
        report = read_cause(Path(args.output_dir))
        settings = report["settings"]
        plot(report["runs"], Path(args.output_dir) / "cause.png", settings["family"], settings["token_seed"])
        return report
    settings = dict(
        task=args.task,
        level=args.updates_per_rollout,
        max_steps=args.max_steps,
        learning_rate=1e-3,
        final_window=collapse_settings.FINAL_WINDOW,
    )
    family = args.family
    jobs = [
        ("tokens", family, None, args.token_seed, settings),
        ("tokens", f"UP-{family}", None, args.token_seed, settings),
    ]
    jobs += [("routing", family, None, s, settings) for s in args.seeds]
    jobs += [("routing", f"UP-{family}", routing, s, settings) for routing in ROUTINGS for s in args.seeds]
    start = time.perf_counter()
    runs = []
    with multiprocessing.get_context("fork").Pool(args.workers, initializer=_init_worker, maxtasksperchild=1) as pool:
        for run in pool.imap_unordered(_job, jobs):
            runs.append(run)
            print(
                f"[{time.perf_counter() - start:6.0f} s] {run['kind']:8s} {run['config']:8s} {run['routing']:26s} "
                f"seed {run['seed']} acc {run['final_accuracy']:.3f} H {run['final_entropy']:.2f}",
                flush=True,
            )
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for label in ["parent"] + list(ROUTINGS):
        mine = [r for r in runs if r["kind"] == "routing" and r["routing"] == label]
        summary[label] = {
            "seeds": len(mine),
            "final_entropy": [round(r["final_entropy"], 3) for r in sorted(mine, key=lambda r: r["seed"])],
            "final_accuracy": [round(r["final_accuracy"], 3) for r in sorted(mine, key=lambda r: r["seed"])],
            "collapsed": sum(r["collapsed"] for r in mine),
        }
    report = {
        "command": "python benchmarks/collapse_cause.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": describe_machine(args.workers),
        "commit": git_commit(),
        "wall_seconds": round(time.perf_counter() - start, 1),
        "settings": vars(args),
        "rare": RARE,
        "summary": summary,
        "runs": runs,
    }
    write_cause(out, report)
    plot(runs, out / "cause.png", family, args.token_seed)
    print(json.dumps(summary), flush=True)
    return report


if __name__ == "__main__":
    main()
