"""The GPU figures in one command (sized for about 11 minutes on one H200; not yet run there): what UP costs at a
~0.5B model, UP against its parent over several seeds, and what TRL's KL to the reference costs. Writes results.json
and suite.png under --output_dir (default outputs/benchmarks/gpu_suite, outside the source tree).

    python benchmarks/gpu_suite.py                 # on a GPU; stops starting new seeds at --time_budget_s
    python benchmarks/gpu_suite.py --dry_run       # tiny sizes on CPU, seconds (CI runs this)
    PYTHONPATH=src python benchmarks/gpu_suite.py --carry .whl   # the wheels the GPU image lacks (benchmarks/carry.py)

1. Overhead (benchmarks/overhead.py): Qwen2.5-0.5B's shape built from its config (random weights, bf16), a fixed
   off-policy batch of 16 x (64 prompt + 1024 completion) tokens, `up_mode="asymmetric"` against `"off"`
   interleaved: step_time_ratio, peak_memory_ratio (CUDA max allocated) and tokens/s, at the token level (DAPO)
   and the sequence level (GSPO).
2. A/B: the sparse-reward toy task of benchmarks/sample_efficiency.py (prompt "a+b=", reward 1 when the reply
   starts with the digit a), a Qwen2 built from a config and warm-started to answer one random digit, rollouts
   reused 4 times (steps_per_generation=4). Each seed is paired: the same warm start, data order and sampling
   seed for the parent and for UP; only `up_mode` differs. Pairs: DAPO / UP-DAPO and GSPO / UP-GSPO; opt-in,
   `--pairs "DAPO + safe"`: DAPO / UP-DAPO + safe (the `up_dapo` recipe's rare clip, docs/collapse.md).

3. KL cost (PRE-REGISTRATION 3, benchmarks/collapse_settings.py; on CPU: benchmarks/kl_cost.py): UPGRPOTrainer
   training steps (generation, TRL's reference forward, loss, update) on Qwen2.5-0.5B's shape saved to a folder
   (TRL reloads the reference from it), `beta=0.05` against `beta=0`, 2 interleaved pairs of 4 steps: the median
   step time and CUDA's peak allocated memory, as ratios.

Nothing is downloaded: every model is built from a config, the tokenizer in code (up_trl.models.offline).
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from bench import TOY_TRAINER, plot_seed_band, save_png, task, warm_start  # the CPU benchmarks' toy task

from up_trl.objective.guards import SAFE_UP

ROOT = Path(__file__).resolve().parent
PAIRS = {
    "DAPO": dict(loss_type="dapo", epsilon=0.2, epsilon_high=0.28),
    "GSPO": dict(loss_type="grpo", importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4),
}
# The rare clip (up_trl.objective.guards.SAFE_UP, docs/collapse.md), opt-in with --pairs "DAPO + safe": UP's own
# settings go to UP's arm only; any TRL setting it holds to both arms, so the twins stay twins.
PAIRS["DAPO + safe"] = {**PAIRS["DAPO"], **{k: v for k, v in SAFE_UP.items() if not k.startswith("up_")}}
UP_ONLY = {"DAPO + safe": {k: v for k, v in SAFE_UP.items() if k.startswith("up_")}}


def kl_cost(args) -> dict:
    """Section 3: beta 0.05 against beta 0, interleaved, each run a fresh UPGRPOTrainer on the same saved model."""
    from datasets import Dataset
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from up_trl import UPGRPOConfig, UPGRPOTrainer
    from up_trl.models.offline import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    if args.dry_run:
        config = Qwen2Config(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
        )
    else:  # Qwen2.5-0.5B's shape (the overhead section's), with the tokenizer's vocabulary
        config = Qwen2Config(
            vocab_size=len(tokenizer),
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
            tie_word_embeddings=True,
        )
    steps, runs = (2 if args.dry_run else 4), []
    with tempfile.TemporaryDirectory() as tmp:
        Qwen2ForCausalLM(config).save_pretrained(Path(tmp) / "model")
        tokenizer.save_pretrained(Path(tmp) / "model")
        prompts, _ = task(16)
        dataset = Dataset.from_dict({"prompt": prompts})
        for pair in range(1 if args.dry_run else 2):
            for beta in (0.0, 0.05) if pair % 2 == 0 else (0.05, 0.0):
                trainer = UPGRPOTrainer(
                    model=str(Path(tmp) / "model"),
                    reward_funcs=lambda completions, **kw: [float(len(c) % 2) for c in completions],
                    args=UPGRPOConfig(
                        output_dir=str(Path(tmp) / f"run{pair}-{beta}"),
                        beta=beta,
                        max_steps=steps,
                        per_device_train_batch_size=16,
                        num_generations=8,
                        max_completion_length=32 if args.dry_run else 256,
                        steps_per_generation=2,
                        logging_steps=1,
                        save_strategy="no",
                        report_to="none",
                        bf16=args.device == "cuda",
                        use_cpu=args.device == "cpu",
                        disable_tqdm=True,
                    ),
                    train_dataset=dataset,
                    processing_class=tokenizer,
                )
                if args.device == "cuda":
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                trainer.train()
                times = [h["step_time"] for h in trainer.state.log_history if "step_time" in h][1:] or [float("nan")]
                memory = torch.cuda.max_memory_allocated() if args.device == "cuda" else None
                runs.append({"pair": pair, "beta": beta, "step_time_s": statistics.median(times), "memory": memory})
                del trainer
    median = {b: statistics.median(r["step_time_s"] for r in runs if r["beta"] == b) for b in (0.0, 0.05)}
    result = {"runs": runs, "step_time_ratio": round(median[0.05] / median[0.0], 3)}
    if args.device == "cuda":
        peak = {b: statistics.median(r["memory"] for r in runs if r["beta"] == b) for b in (0.0, 0.05)}
        result["peak_memory_ratio"] = round(peak[0.05] / peak[0.0], 3)
    return result


def overhead(level: str, dry_run: bool) -> dict:
    """benchmarks/overhead.py at Qwen2.5-0.5B's shape in bf16 (a toy model on CPU for --dry_run), in a process of its
    own (a script is run, not imported)."""
    import subprocess

    if dry_run:
        argv = [
            "--hidden_size",
            "32",
            "--num_layers",
            "1",
            "--prompt_length",
            "8",
            "--completion_length",
            "16",
            "--steps",
            "2",
            "--threads",
            "1",
        ]
    else:
        argv = [
            "--preset",
            "qwen2.5-0.5b",
            "--bf16",
            "--batch_size",
            "16",
            "--prompt_length",
            "64",
            "--completion_length",
            "1024",
            "--steps",
            "10",
        ]
    argv += ["--level", level, "--loss_type", "dapo" if level == "token" else "grpo"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "overhead.py"), *argv], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchmarks/overhead.py {' '.join(argv)} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # its last line is the JSON result


def true_accuracy(completions, solution, **kwargs) -> list[float]:
    """1 when the reply's first character is the gold digit."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [float(text[:1] == gold) for text, gold in zip(texts, solution, strict=True)]


def run_one(pair: str, up_mode: str, seed: int, base_model, tokenizer, args, out_dir: str) -> dict:
    from datasets import Dataset
    from transformers import PrinterCallback

    from up_trl import UPGRPOConfig, UPGRPOTrainer

    prompts, golds = task(args.num_prompts)
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": p}] for p in prompts], "solution": golds})
    config = UPGRPOConfig(
        output_dir=out_dir,
        seed=seed,
        use_cpu=args.device == "cpu",
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=32,
        steps_per_generation=4,
        max_completion_length=3,
        up_mode=up_mode,
        **TOY_TRAINER,
        **{"beta": 0.0, **PAIRS[pair], **(UP_ONLY.get(pair, {}) if up_mode != "off" else {})},
    )
    model = copy.deepcopy(base_model)
    if config.beta > 0:  # TRL loads the reference model from a path (both arms alike)
        base_model.save_pretrained(Path(out_dir) / "warm_start")
        model = str(Path(out_dir) / "warm_start")
    trainer = UPGRPOTrainer(
        model=model,
        reward_funcs=[true_accuracy],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.remove_callback(PrinterCallback)
    start = time.perf_counter()
    trainer.train()
    curve = [
        (h["step"], h["rewards/true_accuracy/mean"])
        for h in trainer.state.log_history
        if "rewards/true_accuracy/mean" in h
    ]
    reached = next((step for step, value in curve if value >= args.threshold), None)
    return {
        "config": pair if up_mode == "off" else f"UP-{pair}",
        "pair": pair,
        "up_mode": up_mode,
        "beta": config.beta,
        "up_positive_min_prob": config.up_positive_min_prob,
        "seed": seed,
        "accuracy_curve": curve,
        "final_accuracy": statistics.fmean(v for _, v in curve[-3:]),
        "steps_to_threshold": reached,
        "seconds": round(time.perf_counter() - start, 1),
    }


def ab(args) -> dict:
    """Paired seeds, parent then UP on the same warm start; stops starting a seed that would overrun the budget."""
    device = torch.device(args.device)
    runs, seed_seconds, deadline = [], [], time.perf_counter() + args.time_budget_s
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            if seed_seconds and time.perf_counter() + max(seed_seconds) > deadline:
                print(f"A/B: time budget reached, {len(seed_seconds)} of {len(args.seeds)} seeds run", flush=True)
                break
            start = time.perf_counter()
            base, tokenizer = warm_start(
                seed, args.warm_start_steps, device=device, hidden_size=args.hidden_size, num_layers=args.num_layers
            )
            for pair in args.pairs:
                for up_mode in ("off", "asymmetric"):
                    runs.append(run_one(pair, up_mode, seed, base, tokenizer, args, tmp))
                    r = runs[-1]
                    print(
                        f"seed {seed} {r['config']:8s} final accuracy {r['final_accuracy']:.3f} steps to "
                        f"{args.threshold}: {r['steps_to_threshold']} ({r['seconds']} s)",
                        flush=True,
                    )
            seed_seconds.append(time.perf_counter() - start)
    summary = []
    for pair in args.pairs:
        parent = {r["seed"]: r for r in runs if r["pair"] == pair and r["up_mode"] == "off"}
        up = {r["seed"]: r for r in runs if r["pair"] == pair and r["up_mode"] == "asymmetric"}
        seeds = sorted(set(parent) & set(up))
        deltas = [up[s]["final_accuracy"] - parent[s]["final_accuracy"] for s in seeds]
        summary.append(
            {
                "pair": pair,
                "seeds": seeds,
                "parent_final_accuracy": [round(parent[s]["final_accuracy"], 4) for s in seeds],
                "up_final_accuracy": [round(up[s]["final_accuracy"], 4) for s in seeds],
                "mean_delta_up_minus_parent": round(statistics.fmean(deltas), 4) if deltas else None,
                "std_delta": round(statistics.stdev(deltas), 4) if len(deltas) > 1 else None,
                "up_won": sum(d > 0 for d in deltas),
                "ties": sum(d == 0 for d in deltas),
            }
        )
    return {"summary": summary, "runs": runs, "seeds_run": len(seed_seconds)}


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = [row["pair"] for row in report["ab"]["summary"]]
    fig, axes = plt.subplots(1, 1 + len(pairs), figsize=(4.2 * (1 + len(pairs)), 3.6), squeeze=False)
    ax = axes[0][0]
    levels = list(report["overhead"])
    for i, key in enumerate(("step_time_ratio", "peak_memory_ratio")):
        ax.bar(
            [j + 0.4 * i for j in range(len(levels))], [report["overhead"][lv][key] for lv in levels], 0.4, label=key
        )
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_xticks([j + 0.2 for j in range(len(levels))], levels)
    ax.set_title("UP / parent, " + report["overhead"][levels[0]]["model"].split(" (")[0], fontsize=8)
    ax.legend(fontsize=7)
    runs = report["ab"]["runs"]
    for ax, pair in zip(axes[0][1:], pairs, strict=True):
        for config in (pair, f"UP-{pair}"):
            plot_seed_band(ax, runs, config)
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("true accuracy (rollout batch)")
        ax.set_title(f"{pair} vs UP-{pair}, {report['ab']['seeds_run']} paired seeds", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(report["machine"], fontsize=8)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry_run", action="store_true", help="Tiny sizes on CPU: checks the suite end to end.")
    parser.add_argument("--output_dir", default="outputs/benchmarks/gpu_suite")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(8)))
    parser.add_argument("--pairs", nargs="+", choices=list(PAIRS), default=list(PAIRS))
    parser.add_argument("--max_steps", type=int, default=200)
    parser.add_argument("--num_prompts", type=int, default=16)
    parser.add_argument("--hidden_size", type=int, default=64)
    parser.add_argument("--num_layers", type=int, default=2)
    parser.add_argument("--warm_start_steps", type=int, default=60)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--threshold", type=float, default=0.3, help="3x the starting accuracy of about 0.1")
    parser.add_argument("--time_budget_s", type=float, default=330, help="For the A/B part: no seed starts past it.")
    parser.add_argument(
        "--carry",
        metavar="FOLDER",
        help="Write the wheels the GPU image lacks (benchmarks/carry.py) "
        "into FOLDER and stop: run it where the image's packages stand in (.ci/gpu_image).",
    )
    parser.add_argument("--python_version", default="3.12", help="With --carry: the image's Python.")
    args = parser.parse_args(argv)
    if args.carry:
        from carry import carry

        carry(args.carry, args.python_version)
        return {}
    args.device = "cuda" if torch.cuda.is_available() and not args.dry_run else "cpu"
    if args.dry_run:
        args.seeds, args.max_steps, args.warm_start_steps = args.seeds[:1], 4, 2
        torch.set_num_threads(1)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    start = time.perf_counter()
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else None
    machine = f"{platform.machine()} {gpu or 'CPU'}, torch {torch.__version__}"
    report = {
        "command": "python benchmarks/gpu_suite.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine,
        "dry_run": args.dry_run,
    }
    report["overhead"] = {level: overhead(level, args.dry_run) for level in ("token", "sequence")}
    if args.device == "cuda":
        torch.cuda.empty_cache()
    report["ab"] = ab(args)
    report["kl_cost"] = kl_cost(args)
    report["settings"] = {k: v for k, v in vars(args).items() if k != "output_dir"}
    report["wall_seconds"] = round(time.perf_counter() - start, 1)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=1))
    plot(report, out / "suite.png")
    for level, r in report["overhead"].items():
        print(
            f"overhead ({level}): step_time_ratio {r['step_time_ratio']}, peak_memory_ratio "
            f"{r['peak_memory_ratio']}, tokens/s {r['tokens_per_s']}"
        )
    print(f"KL cost (beta 0.05 / 0): { ({k: v for k, v in report['kl_cost'].items() if k != 'runs'}) }")
    for row in report["ab"]["summary"]:
        print(
            f"A/B {row['pair']}: UP won {row['up_won']}/{len(row['seeds'])} seeds, mean final accuracy "
            f"UP - parent = {row['mean_delta_up_minus_parent']}"
        )
    print(
        json.dumps(
            {k: report[k] for k in ("machine", "wall_seconds")}
            | {
                "overhead": {
                    lv: {k: r[k] for k in ("step_time_ratio", "peak_memory_ratio", "tokens_per_s")}
                    for lv, r in report["overhead"].items()
                },
                "ab": report["ab"]["summary"],
            }
        )
    )
    return report


if __name__ == "__main__":
    main()
