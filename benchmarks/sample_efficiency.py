"""Sample efficiency: UP against its parents, side by side, on a sparse-reward task a tiny model learns on CPU.

    python benchmarks/sample_efficiency.py                          # 8 configurations x 5 seeds (~10 min, 2 cores)
    python benchmarks/sample_efficiency.py --quick                  # 1 seed, 40 steps: a smoke run
    python benchmarks/sample_efficiency.py --num_prompts 32 --learning_rate 3e-3 --max_steps 200   # our first try
    python benchmarks/sample_efficiency.py --corruption flip20      # reward hacking: 20% of labels flipped
    python benchmarks/sample_efficiency.py --corruption shortcut --configs DAPO UP-DAPO "UP-DAPO + guard"
    python benchmarks/sample_efficiency.py --configs RLOO UP-RLOO AsyncGRPO UP-AsyncGRPO   # the other trainers

The task: a prompt "a+b=" (16 fixed digit pairs by default); the reward is 1 when the reply's first character is
the digit a, else 0. The model is a 2-layer Qwen2 built in code, warm-started by a few supervised steps to answer
with one random digit, so a correct answer starts as a rare token (about 1 in 10) and most groups of 8 completions
hold one or two correct replies: the regime where the clip caps a rare correct token's Probability Capacity.
Rollouts are reused off-policy as in the paper: 4 mini-batch updates per rollout batch (steps_per_generation=4).
The RLOO pair (UPRLOOTrainer) is off-policy the same way; the async GRPO pair (UPAsyncGRPOTrainer, in-process sampler)
trains each sample once, off-policy because its sampler lags the policy (see the ASYNC_* settings and CONFIGS).

Writes results.json, curves.png and table.md under --output_dir (per corruption; default
outputs/benchmarks/sample_efficiency, outside the source tree; the published runs name benchmarks/results/...), and
prints the table.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

PAIRS_SEED = 1234
TASK_ANSWER = lambda a, b: a  # noqa: E731
NUM_PROMPTS = 32

CONFIGS: dict[str, dict] = {
    "DAPO": dict(loss_type="dapo", epsilon=0.2, epsilon_high=0.28, up_mode="off"),
    "UP-DAPO": dict(loss_type="dapo", epsilon=0.2, epsilon_high=0.28, up_mode="asymmetric"),
    "GRPO": dict(loss_type="grpo", epsilon=0.2, up_mode="off"),
    "UP-GRPO": dict(loss_type="grpo", epsilon=0.2, up_mode="asymmetric"),
    "GSPO": dict(
        loss_type="grpo", importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4, up_mode="off"
    ),  # fmt: skip
    "UP-GSPO": dict(
        loss_type="grpo", importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4, up_mode="asymmetric"
    ),  # fmt: skip
    # RLOO (TRL's RLOOTrainer): one clipped ratio per completion, on its summed log-probability; off-policy the same
    # way as the pairs above (a rollout batch of 128 trained in 4 mini-batch updates: 0-3 updates stale).
    "RLOO": dict(trainer="rloo", epsilon=0.2, up_mode="off"),
    "UP-RLOO": dict(trainer="rloo", epsilon=0.2, up_mode="asymmetric"),
    # TRL's asynchronous GRPO (token-level clip, DAPO's eps_high, its own token-sum normalisation), with the in-
    # process sampler (up_trl.trainers.async_rollout); each sample is trained once, 32 a step, as above. Off-policy
    # the async way: when its queue runs dry the sampler copy generates 16 groups (128 samples, 4 steps) with the
    # weights of its last sync (every 2 steps), and the trainer's data loader fetches one batch ahead, so a sample
    # is trained 2-5 optimizer updates after the policy that sampled it (from the 2nd fill on; measured: fills
    # after steps 0, 3, 7 with the weights synced after steps 0, 2, 6; 0-2 versions stale, max_staleness=4 drops
    # none). That is 2 updates staler than the synchronous pairs' 0-3.
    "AsyncGRPO": dict(trainer="async_grpo", epsilon=0.2, epsilon_high=0.28, up_mode="off"),
    "UP-AsyncGRPO": dict(trainer="async_grpo", epsilon=0.2, epsilon_high=0.28, up_mode="asymmetric"),
    # The paper's two failure ablations: unbounded on both signs, and the ratio left unclipped above.
    "UP both signs (ablation)": dict(loss_type="dapo", epsilon=0.2, epsilon_high=0.28, up_mode="both"),
    "DAPO eps_high=inf (ablation)": dict(loss_type="dapo", epsilon=0.2, epsilon_high=math.inf, up_mode="off"),
    # Our optional guard for the positive branch (not in the default set; name it with --configs).
    "UP-DAPO + guard": dict(
        loss_type="dapo", epsilon=0.2, epsilon_high=0.28, up_mode="asymmetric", up_positive_log_ratio_bound=0.5
    ),  # fmt: skip
}
# The default set is the published one; the guard and the RLOO / async pairs are run by naming them with --configs.
DEFAULT_CONFIGS = [
    name for name in CONFIGS if name not in ("UP-DAPO + guard", "RLOO", "UP-RLOO", "AsyncGRPO", "UP-AsyncGRPO")
]
ASYNC_GROUPS_PER_FILL, ASYNC_WEIGHT_SYNC_STEPS, ASYNC_MAX_STALENESS = 16, 2, 4
PAIRS_TO_PLOT = [
    ("DAPO", "UP-DAPO"),
    ("GRPO", "UP-GRPO"),
    ("GSPO", "UP-GSPO"),
    ("RLOO", "UP-RLOO"),
    ("AsyncGRPO", "UP-AsyncGRPO"),
    ("UP-DAPO", "UP both signs (ablation)", "DAPO eps_high=inf (ablation)", "UP-DAPO + guard"),
]


def task(num_prompts: int = 16):
    """`num_prompts` fixed prompts "a+b=" and their gold answers: the first digit, a. (A copy the tiny model can
    learn; the last digit of a + b proved too hard for it to learn by RL in a few hundred steps.)"""
    rng = random.Random(PAIRS_SEED)
    pairs = rng.sample([(a, b) for a in range(10) for b in range(10)], num_prompts)
    return [f"{a}+{b}=" for a, b in pairs], [str(TASK_ANSWER(a, b)) for a, b in pairs]


def first_char(completion) -> str:
    text = completion[0]["content"] if isinstance(completion, list) else completion
    return text[:1]


def make_rewards(corruption: str, seed: int):
    """(reward functions, weights): the training reward, plus the true accuracy at weight 0 (logged only)."""

    def true_accuracy(completions, solution, **kwargs):
        return [float(first_char(c) == s) for c, s in zip(completions, solution)]

    if corruption == "none":
        return [true_accuracy], [1.0]
    rng = random.Random(seed)

    def flip20(completions, solution, **kwargs):  # each label flipped with probability 0.2
        return [1.0 - r if rng.random() < 0.2 else r for r in true_accuracy(completions, solution)]

    def shortcut(completions, solution, **kwargs):  # a spurious reward: answering "0" always pays
        return [max(r, float(first_char(c) == "0")) for c, r in zip(completions, true_accuracy(completions, solution))]

    corrupted = {"flip20": flip20, "shortcut": shortcut}[corruption]
    return [corrupted, true_accuracy], [1.0, 0.0]


def chat_prompt_ids(tokenizer, n: int = 100) -> list[list[int]]:
    """The token ids of `n` of the task's prompts in the tokenizer's chat template (all of the same length)."""
    prompts, _ = task(n)
    texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                           add_generation_prompt=True) for p in prompts]  # fmt: skip
    return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]


def supervise(model, prompt_ids, reply, rng: random.Random, steps: int, device: torch.device | str = "cpu"):
    """`steps` supervised AdamW steps (lr 3e-3) on batches of 32 rows: a random prompt, then `reply()`'s ids, the loss
    on the reply only. Returns the model in eval mode."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        ids = torch.tensor([prompt_ids[rng.randrange(len(prompt_ids))] + reply() for _ in range(32)], device=device)
        labels = ids.clone()
        labels[:, : len(prompt_ids[0])] = -100
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def warm_start(seed: int, steps: int = 60, *, device: torch.device | str = "cpu", **model_kwargs):
    """The tiny model after `steps` supervised steps on random one-digit answers: digits become likely, none right.
    `model_kwargs` (hidden_size, num_layers) size the model; benchmarks/gpu_suite.py builds a larger one on a GPU."""
    from up_trl.data.models import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer(seed=seed, **model_kwargs)
    model.to(device)
    digit_ids = [tokenizer.convert_tokens_to_ids(str(d)) for d in range(10)]
    rng = random.Random(seed)

    def reply():
        return [rng.choice(digit_ids), tokenizer.eos_token_id]

    return supervise(model, chat_prompt_ids(tokenizer), reply, rng, steps, device), tokenizer


def run_one(name: str, seed: int, base_model, tokenizer, args, out_dir: str, **overrides) -> dict:
    """One training run of configuration `name` from `base_model`; `overrides` replace the trainer config's settings
    (e.g. per_device_train_batch_size, steps_per_generation, num_iterations: how a rollout batch is reused).
    The config's `trainer` key picks UPGRPOTrainer (default), UPRLOOTrainer or UPAsyncGRPOTrainer."""
    from datasets import Dataset
    from transformers import PrinterCallback

    prompts, golds = task(args.num_prompts)
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": p}] for p in prompts], "solution": golds})
    reward_funcs, weights = make_rewards(args.corruption, seed)
    config = dict(CONFIGS[name])
    kind = config.pop("trainer", "grpo")
    settings = dict(
        output_dir=out_dir, seed=seed, use_cpu=True, bf16=False, report_to="none", save_strategy="no",
        disable_tqdm=True, logging_steps=1, max_steps=args.max_steps, learning_rate=args.learning_rate,
        lr_scheduler_type="constant", num_generations=8, per_device_train_batch_size=32,
        gradient_accumulation_steps=1, max_completion_length=3, temperature=1.0, top_k=0, **config,
    )  # fmt: skip
    if kind == "async_grpo":
        trainer = _async_trainer(name, seed, base_model, tokenizer, args, out_dir, dataset, settings, overrides)
    else:
        from up_trl import UPGRPOConfig, UPGRPOTrainer, UPRLOOConfig, UPRLOOTrainer

        rloo = kind == "rloo"
        config_class, trainer_class = (UPRLOOConfig, UPRLOOTrainer) if rloo else (UPGRPOConfig, UPGRPOTrainer)
        settings |= dict(steps_per_generation=4, num_iterations=args.num_iterations, beta=0.0, reward_weights=weights)
        trainer = trainer_class(model=copy.deepcopy(base_model), reward_funcs=reward_funcs,
                                args=config_class(**{**settings, **overrides}), train_dataset=dataset,
                                processing_class=tokenizer)  # fmt: skip
    trainer.remove_callback(PrinterCallback)  # one summary line per run instead of every log
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    logs = trainer.state.log_history

    def curve(key):
        return [(h["step"], h[key]) for h in logs if isinstance(h.get(key), (int, float))]

    accuracy = curve("rewards/true_accuracy/mean") or curve("rewards/true_accuracy")  # the async trainer's name
    reward = curve("reward")
    reached = next((step for step, value in accuracy if value >= args.threshold), None)
    # Under a corrupted reward: how fast the policy learns to collect it (for "shortcut", to hack it).
    hacked = next((step for step, value in reward if value >= 0.9), None)
    tail = [v for _, v in accuracy[-3:]]

    def mean_of(key):
        values = [v for _, v in curve(key) if math.isfinite(v)]
        return statistics.fmean(values) if values else None

    return {
        "config": name,
        "seed": seed,
        "accuracy_curve": accuracy,
        "reward_curve": reward,
        "loss_curve": curve("loss"),
        "steps_to_threshold": reached,
        "steps_to_training_reward_0.9": hacked,
        "final_accuracy": statistics.fmean(tail),
        "max_grad_norm": max((v for _, v in curve("grad_norm")), default=None),
        "final_entropy": statistics.fmean([v for _, v in curve("entropy")[-3:]]),
        "capacity_clipped_mean": mean_of("up/capacity_clipped_mean"),
        "capacity_up_mean": mean_of("up/capacity_up_mean"),
        "would_clip_frac_mean": mean_of("up/would_clip_frac"),
        "positive_abs_log_ratio_mean": mean_of("up/positive_abs_log_ratio_mean"),
        "staleness_mean": mean_of("sample/staleness_mean"),  # async only: policy versions behind, per step
        "seconds": round(seconds, 1),
    }


def _async_trainer(name, seed, base_model, tokenizer, args, out_dir, dataset, settings, overrides):
    """UPAsyncGRPOTrainer on `base_model` (saved once per seed: the trainer and its sampler copy load a path), with
    the in-process rollout worker. Its rollout is its own: no steps_per_generation / num_iterations (the staleness
    comes from the sampler, see ASYNC_*), no reward weights (TRL's worker sums every reward function)."""
    from up_trl import UPAsyncGRPOConfig, UPAsyncGRPOTrainer
    from up_trl.trainers.async_rollout import in_process_rollout

    if args.corruption != "none" or args.num_iterations != 1:
        raise ValueError(
            f"{name} runs with --corruption none and --num_iterations 1 only: TRL's async worker sums every reward "
            "function (no weight-0 accuracy column) and reuses no rollout batch; drop it from --configs."
        )
    path = Path(out_dir) / f"warm_start_seed{seed}"
    if not (path / "config.json").exists():
        base_model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    settings = settings | dict(token_budget=0, weight_sync_steps=ASYNC_WEIGHT_SYNC_STEPS,
                               max_staleness=ASYNC_MAX_STALENESS)  # fmt: skip
    config = UPAsyncGRPOConfig(**{**settings, **overrides})
    reward_funcs = make_rewards(args.corruption, seed)[0]
    rollout = in_process_rollout(
        str(path),
        train_dataset=dataset,
        reward_funcs=reward_funcs,
        processing_class=tokenizer,
        args=config,
        groups_per_fill=ASYNC_GROUPS_PER_FILL,
    )
    return UPAsyncGRPOTrainer(str(path), reward_funcs=reward_funcs, args=config, train_dataset=dataset,
                              processing_class=tokenizer, **rollout)  # fmt: skip


def summarise(runs: list[dict], names: list[str], args) -> list[dict]:
    rows = []
    for name in names:
        mine = [r for r in runs if r["config"] == name]
        reached = [r["steps_to_threshold"] for r in mine if r["steps_to_threshold"] is not None]

        def mean_std(key, mine=mine):
            values = [r[key] for r in mine if r[key] is not None]
            if not values:
                return None, None
            return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)

        row = {"config": name, "seeds": len(mine), "reached": len(reached)}
        row["steps_to_threshold_median"] = statistics.median(reached) if reached else None
        hacked = [r["steps_to_training_reward_0.9"] for r in mine if r["steps_to_training_reward_0.9"] is not None]
        row["steps_to_training_reward_0.9_median"] = statistics.median(hacked) if hacked else None
        row["reached_training_reward_0.9"] = len(hacked)
        for key in ("final_accuracy", "max_grad_norm", "final_entropy", "capacity_clipped_mean",
                    "capacity_up_mean", "would_clip_frac_mean"):  # fmt: skip
            row[key], row[key + "_std"] = mean_std(key)
        rows.append(row)
    return rows


def markdown(rows: list[dict], args, machine: str) -> str:
    def fmt(row, key, digits=3):
        if row[key] is None:
            return "n/a"
        std = row.get(key + "_std")
        return f"{row[key]:.{digits}f} ± {std:.{digits}f}" if std is not None else f"{row[key]:.{digits}f}"

    lines = [
        f"Task: answer a to the prompt a+b=, sparse 0/1 reward ({args.corruption} corruption), tiny Qwen2 "
        f"warm-started to random digits; {args.num_prompts} prompts, {args.max_steps} optimizer steps, "
        f"{4 * args.num_iterations} updates per rollout batch of 128; "
        f"{len(args.seeds)} seeds; lr {args.learning_rate}. Machine: {machine}.",
        "",
        f"| config | final true accuracy | steps to accuracy ≥ {args.threshold} (median; reached) | max grad norm "
        "| final entropy | capacity, clipped rule | capacity, UP rule | positive tokens past the clip |",
        "|---|---|---|---|---|---|---|---|",
    ]
    if args.corruption != "none":
        lines[2] += " training reward ≥ 0.9 at step (median; reached) |"
        lines[3] += "---|"
    for row in rows:
        steps = row["steps_to_threshold_median"]
        steps = f"{steps:.0f}" if steps is not None else f"> {args.max_steps}"
        hacked = row["steps_to_training_reward_0.9_median"]
        hacked = f"{hacked:.0f}" if hacked is not None else f"> {args.max_steps}"
        hacked = (
            f" {hacked} ({row['reached_training_reward_0.9']}/{row['seeds']}) |" if args.corruption != "none" else ""
        )
        lines.append(
            f"| {row['config']} | {fmt(row, 'final_accuracy')} | {steps} ({row['reached']}/{row['seeds']}) | "
            f"{fmt(row, 'max_grad_norm', 2)} | {fmt(row, 'final_entropy', 2)} | "
            f"{fmt(row, 'capacity_clipped_mean', 4)} | {fmt(row, 'capacity_up_mean', 3)} | "
            f"{fmt(row, 'would_clip_frac_mean', 3)} |" + hacked
        )
    return "\n".join(lines) + "\n"


def plot_seed_band(ax, runs: list[dict], config: str) -> None:
    """One config's true-accuracy curve on `ax`: mean over its seeds, ± one std as a band (steps every seed logged)."""
    curves = [dict(r["accuracy_curve"]) for r in runs if r["config"] == config]
    if not curves:
        return
    steps = sorted(set.intersection(*(set(c) for c in curves)))
    values = [[c[s] for c in curves] for s in steps]
    mean = [statistics.fmean(v) for v in values]
    std = [statistics.stdev(v) if len(v) > 1 else 0.0 for v in values]
    ax.plot(steps, mean, label=config)
    ax.fill_between(steps, [m - s for m, s in zip(mean, std)], [m + s for m, s in zip(mean, std)], alpha=0.2)


def plot(runs: list[dict], names: list[str], path: Path, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [[n for n in group if n in names] for group in PAIRS_TO_PLOT]
    panels = [p for p in panels if p]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), sharey=True, squeeze=False)
    for ax, group in zip(axes[0], panels):
        for name in group:
            plot_seed_band(ax, runs, name)
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("true accuracy (rollout batch)")
    fig.suptitle(f"UP vs parents, sparse reward ({args.corruption}), mean ± std over {len(args.seeds)} seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=DEFAULT_CONFIGS, choices=list(CONFIGS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--num_prompts", type=int, default=16, help="distinct prompts (at least 16)")
    parser.add_argument("--max_steps", type=int, default=300)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--num_iterations", type=int, default=1, help="extra passes over each rollout batch")
    parser.add_argument("--threshold", type=float, default=0.3, help="3x the starting accuracy of about 0.1")
    parser.add_argument("--corruption", choices=["none", "flip20", "shortcut"], default="none")
    parser.add_argument("--quick", action="store_true", help="1 seed, 40 steps")
    parser.add_argument("--output_dir", default="outputs/benchmarks/sample_efficiency")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.max_steps = args.seeds[:1], 40
    torch.set_num_threads(1)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()

    machine = f"{platform.machine()} CPU, {torch.get_num_threads()} torch thread, torch {torch.__version__}"
    out = Path(args.output_dir) / args.corruption
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            base, tokenizer = warm_start(seed)
            for name in args.configs:  # every configuration on the same warm start, in one process
                runs.append(run_one(name, seed, base, tokenizer, args, tmp))
                r = runs[-1]
                print(
                    f"seed {seed} {name:30s} final accuracy {r['final_accuracy']:.3f} "
                    f"steps to {args.threshold}: {r['steps_to_threshold']} ({r['seconds']} s)",
                    flush=True,
                )
    rows = summarise(runs, args.configs, args)
    table = markdown(rows, args, machine)
    report = {
        "command": "python benchmarks/sample_efficiency.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine,
        "wall_seconds": round(time.perf_counter() - start, 1),
        "settings": {k: v for k, v in vars(args).items() if k != "output_dir"},
        "summary": rows,
        "runs": runs,
    }
    (out / "results.json").write_text(json.dumps(report, indent=1))
    (out / "table.md").write_text(table)
    plot(runs, args.configs, out / "curves.png", args)
    print(table)
    return report


if __name__ == "__main__":
    main()
