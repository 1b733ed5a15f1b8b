"""A real-model comparison on CPU: SmolLM2-135M-Instruct (offline) trained with DAPO and with UP-DAPO on a bundled
math set, each scored before and after with `up-trl eval` on a fixed test subset.

    python benchmarks/real_model.py                                  # GSM8K train -> GSM8K test, about an hour
    python benchmarks/real_model.py --dataset arithmetic --benchmark arithmetic --max_completion_length 64 \
        --max_steps 12 --output_dir benchmarks/results/real_model_arithmetic           # the offline task

Both runs share the model, data order, seed and settings; only up_mode differs. Writes results.json and
curves.png under --output_dir. Budget: --max_steps optimizer steps per run (about 40 s each on 2 CPU cores at the
default sizes) plus the evaluation.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="gsm8k", help="training set (an up_trl.data name)")
    parser.add_argument("--max_steps", type=int, default=30)
    parser.add_argument("--max_completion_length", type=int, default=192)
    parser.add_argument("--benchmark", default="gsm8k")
    parser.add_argument("--benchmark_limit", type=int, default=50, help="test problems scored (0: skip evaluation)")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--output_dir", default="benchmarks/results/real_model")
    args = parser.parse_args(argv)

    from up_trl.cli import train
    from up_trl.evaluate import main as evaluate
    from up_trl.models import smollm2_path
    from up_trl.plots import read_metrics, series

    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = smollm2_path()
    report = {
        "command": "python benchmarks/real_model.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": f"{platform.machine()} CPU, {torch.get_num_threads()} torch threads",
        "model": "SmolLM2-135M-Instruct",
        "settings": vars(args),
        "runs": {},
    }

    def score(path, name):
        if not args.benchmark_limit:
            return None
        evaluate(["--model", path, "--benchmarks", args.benchmark, "--limit", str(args.benchmark_limit), "--k",
                  str(args.k), "--max_new_tokens", str(args.max_completion_length), "--seed", str(args.seed),
                  "--system_prompt", "none", "--temperature", "1.0", "--top_p", "1.0",
                  "--output_dir", str(out / f"eval-{name}")])  # fmt: skip
        return json.loads((out / f"eval-{name}" / "eval.json").read_text())["benchmarks"][args.benchmark]

    start = time.perf_counter()
    report["before"] = score(model, "before")
    for name, up_mode in (("DAPO", "off"), ("UP-DAPO", "asymmetric")):
        run_dir = out / name
        t0 = time.perf_counter()
        train([
            "--model_name_or_path", model, "--dataset_name", args.dataset, "--dataset_limit", "2000",
            "--output_dir", str(run_dir), "--up_mode", up_mode, "--loss_type", "dapo", "--epsilon_high", "0.28",
            "--num_generations", "8", "--per_device_train_batch_size", "16", "--steps_per_generation", "2",
            "--max_completion_length", str(args.max_completion_length), "--learning_rate", "3e-5",
            "--max_steps", str(args.max_steps), "--seed", str(args.seed), "--system_prompt", "none",
            "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true", "--bf16", "false",
            "--temperature", "1.0", "--top_k", "0", "--logging_steps", "1", "--plot", "false",
        ])  # fmt: skip
        records = read_metrics(run_dir / "metrics.jsonl")
        report["runs"][name] = {
            "train_minutes": round((time.perf_counter() - t0) / 60, 1),
            "reward_curve": list(zip(*series(records, "reward"))),
            "after": score(str(run_dir), name),
        }
    report["wall_minutes"] = round((time.perf_counter() - start) / 60, 1)
    (out / "results.json").write_text(json.dumps(report, indent=1))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, run in report["runs"].items():
        if run["reward_curve"]:
            steps, values = zip(*run["reward_curve"])
            ax.plot(steps, values, marker="o", label=name)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(f"training reward ({args.dataset})")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=100)
    print(json.dumps({k: v for k, v in report.items() if k != "runs"} | {
        name: {"after": run["after"], "train_minutes": run["train_minutes"]} for name, run in report["runs"].items()
    }))  # fmt: skip
    return report


if __name__ == "__main__":
    main()
