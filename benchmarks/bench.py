"""What the benchmark scripts share: the machine they ran on, their run files, and the toy task.

A script run as `python benchmarks/<name>.py` finds this module beside it (`import bench`); the tests find it
through pytest's `pythonpath` (pyproject.toml).

- The machine and the workers: `describe_machine`, `init_worker` (one torch thread, quiet transformers logs).
- Run files: `open_partial` (each finished run appended to `runs.partial.jsonl`, so a stopped study can go on),
  `write_results` / `read_results` (results.json with the per-run records, and the per-step curves in
  `curves.parquet`: the compact form under `benchmarks/results/`), `save_png` (a compact figure), `mean_std`.
- The toy task of sample_efficiency.py, staleness_sweep.py, gpu_suite.py and collapse.py: prompts "a+b=", reward 1
  when the reply starts with a (`task`, `make_rewards`), a 2-layer Qwen2 warm-started to answer one random digit
  (`warm_start`, `supervise`), the configurations (`CONFIGS`), the reuse levels (`LEVELS`), one training run
  (`run_one`) and the seed band of a plot (`plot_seed_band`).
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import platform
import random
import statistics
import time
from pathlib import Path

import torch

# --- the machine and the workers ------------------------------------------------------------------------------------


def describe_machine(workers: int | None = None) -> str:
    """The machine in one line: architecture, CPU model, cores, workers x 1 torch thread if given, torch version."""
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    pool = f"{workers} worker process(es) x 1 torch thread, " if workers is not None else ""
    return f"{platform.machine()} {cpu}, {os.cpu_count()} cores, {pool}torch {torch.__version__}"


def init_worker() -> None:
    """A worker process (or the main one, without workers): one torch thread, transformers' errors only."""
    torch.set_num_threads(1)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()


# --- run files ------------------------------------------------------------------------------------------------------

PARTIAL_FILE = "runs.partial.jsonl"
RESULTS_FILE = "results.json"
CURVES_FILE = "curves.parquet"  # one row per (run, logged step), one column per curve; null where not logged


def open_partial(out: Path, resume: bool) -> tuple[Path, list[dict]]:
    """`out/runs.partial.jsonl`, where each finished run is appended so that a stopped study can go on, and the runs
    it holds when resuming; a fresh start empties it."""
    partial = out / PARTIAL_FILE
    if resume and partial.exists():
        return partial, [json.loads(line) for line in partial.read_text().splitlines() if line.strip()]
    partial.unlink(missing_ok=True)
    return partial, []


def write_results(out: Path, report: dict) -> None:
    """`report` as results.json, its runs' curves (the `*_curve` keys, [[step, value], ...]) as curves.parquet.

    results.json keeps every run's record without its curves, which `read_results` puts back. The curves are
    float32: about 7 significant digits, more than any figure or rule reads (the collapse study keeps 4); a mean
    logged as a float64 loses its last digits.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs = report.get("runs", [])
    names = sorted({key for run in runs for key in run if key.endswith("_curve")})
    rows: dict[str, list] = {"run": [], "config": [], "seed": [], "step": [], **{name: [] for name in names}}
    for index, run in enumerate(runs):
        by_step: dict[int, dict] = {}
        for name in names:
            for step, value in run.get(name) or []:
                by_step.setdefault(step, {})[name] = value
        for step in sorted(by_step):
            rows["run"].append(index)
            rows["config"].append(run.get("config"))
            rows["seed"].append(run.get("seed"))
            rows["step"].append(step)
            for name in names:
                rows[name].append(by_step[step].get(name))
    types = {"run": pa.int32(), "config": pa.string(), "seed": pa.int32(), "step": pa.int32()}
    table = pa.table({key: pa.array(values, type=types.get(key, pa.float32())) for key, values in rows.items()})
    pq.write_table(table, out / CURVES_FILE, compression="zstd", compression_level=19)
    records = [{key: value for key, value in run.items() if not key.endswith("_curve")} for run in runs]
    (out / RESULTS_FILE).write_text(dump_json({**report, "curve_keys": names, "runs": records}))


def dump_json(report: dict) -> str:
    """`report` as JSON with one line per top-level key and one per run record: compact, and a diff shows which
    runs changed."""
    lines = []
    for key, value in report.items():
        if key == "runs" and isinstance(value, list):
            body = "[\n" + ",\n".join("  " + json.dumps(run) for run in value) + "\n ]" if value else "[]"
        else:
            body = json.dumps(value)
        lines.append(f" {json.dumps(key)}: {body}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def read_results(out: Path) -> dict:
    """What `write_results` wrote, as it was given: the runs with their curves back ([[step, value], ...])."""
    import pyarrow.parquet as pq

    report = json.loads((out / RESULTS_FILE).read_text())
    names = report.pop("curve_keys", [])
    curves: dict[int, dict[str, list]] = {}
    if names:
        for row in pq.read_table(out / CURVES_FILE).to_pylist():
            mine = curves.setdefault(row["run"], {})
            for name in names:
                if row[name] is not None:
                    mine.setdefault(name, []).append([row["step"], row[name]])
    report["runs"] = [
        {**run, **{name: curves.get(i, {}).get(name, []) for name in names}}
        for i, run in enumerate(report.get("runs", []))
    ]
    return report


def save_png(fig, path: Path, dpi: int = 100) -> None:
    """`fig` as a PNG of 256 colours (a third of matplotlib's RGBA file for these line plots, the same to the eye)."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    image = Image.open(buffer).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    image.save(path, format="PNG", optimize=True)


def mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """(mean, sample standard deviation) of `values`; (None, None) when empty, a std of 0.0 for one value.

    >>> mean_std([1.0, 3.0])
    (2.0, 1.4142135623730951)
    """
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


# --- the toy task ---------------------------------------------------------------------------------------------------

PAIRS_SEED = 1234
TASK_ANSWER = lambda a, b: a  # noqa: E731

CONFIGS: dict[str, dict] = {
    "DAPO": dict(loss_type="dapo", epsilon=0.2, epsilon_high=0.28, up_mode="off"),
    "UP-DAPO": dict(loss_type="dapo", epsilon=0.2, epsilon_high=0.28, up_mode="asymmetric"),
    "GRPO": dict(loss_type="grpo", epsilon=0.2, up_mode="off"),
    "UP-GRPO": dict(loss_type="grpo", epsilon=0.2, up_mode="asymmetric"),
    "GSPO": dict(
        loss_type="grpo", importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4, up_mode="off"
    ),
    "UP-GSPO": dict(
        loss_type="grpo", importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4, up_mode="asymmetric"
    ),
    # RLOO (TRL's RLOOTrainer): one clipped ratio per completion, on its summed log-probability; off-policy the same
    # way as the pairs above (a rollout batch of 128 trained in 4 mini-batch updates: 0-3 updates stale).
    "RLOO": dict(trainer="rloo", epsilon=0.2, up_mode="off"),
    "UP-RLOO": dict(trainer="rloo", epsilon=0.2, up_mode="asymmetric"),
    # TRL's asynchronous GRPO (token-level clip, DAPO's eps_high, its own token-sum normalisation), sampling through
    # a vLLM server, so on a GPU only. Each sample is trained once, 32 a step, as above. The committed runs used an
    # in-process CPU sampler (now the tests' stand-in, tests/async_rollout.py) that generated 16 groups (128 samples,
    # 4 steps) per fill with the weights of its last sync (every 2 steps): a sample was trained 2-5 optimizer updates
    # after the policy that sampled it (0-2 versions stale, max_staleness=4 dropped none), 2 updates staler than the
    # synchronous pairs' 0-3. Behind a vLLM server the staleness is the server's pace, logged as sample/staleness_*.
    "AsyncGRPO": dict(trainer="async_grpo", epsilon=0.2, epsilon_high=0.28, up_mode="off"),
    "UP-AsyncGRPO": dict(trainer="async_grpo", epsilon=0.2, epsilon_high=0.28, up_mode="asymmetric"),
    # The paper's two failure ablations: unbounded on both signs, and the ratio left unclipped above.
    "UP both signs (ablation)": dict(loss_type="dapo", epsilon=0.2, epsilon_high=0.28, up_mode="both"),
    "DAPO eps_high=inf (ablation)": dict(loss_type="dapo", epsilon=0.2, epsilon_high=math.inf, up_mode="off"),
    # UP's optional rare clip (`up_positive_min_prob`, docs/collapse.md: positive tokens with pi_old < 0.05 keep the
    # parent's clip; not in the default set, name it with --configs). The committed reward-hacking runs of this name
    # (docs/benchmarks/index.md) ran the log-ratio guard (`up_positive_log_ratio_bound=0.5`), which left the API at
    # 2874de3: commit 05756b0 is the last that can rerun them.
    "UP-DAPO + guard": dict(
        loss_type="dapo", epsilon=0.2, epsilon_high=0.28, up_mode="asymmetric", up_positive_min_prob=0.05
    ),
}
ASYNC_CONFIGS = ("AsyncGRPO", "UP-AsyncGRPO")
ASYNC_WEIGHT_SYNC_STEPS, ASYNC_MAX_STALENESS = 2, 4

# Updates per rollout batch of 128 -> how the batch is reused (GA is 1): mini-batches x passes over them.
LEVELS: dict[int, dict] = {
    1: dict(per_device_train_batch_size=128, steps_per_generation=1, num_iterations=1),
    2: dict(per_device_train_batch_size=64, steps_per_generation=2, num_iterations=1),
    4: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=1),
    8: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=2),
    16: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=4),
}


def updates_per_rollout(level: dict) -> int:
    """Optimizer updates fed by one rollout batch: its mini-batches x the passes over them (GA is 1 here)."""
    return level["steps_per_generation"] * level["num_iterations"]


# What every toy run's trainer config shares (run_one here, toy_runs.py, gpu_suite.py): a log line each step, nothing
# saved, a constant learning rate, 8 completions per prompt sampled at temperature 1 with no top-k, one minibatch per
# optimizer step.
TOY_TRAINER = dict(
    bf16=False,
    report_to="none",
    save_strategy="no",
    disable_tqdm=True,
    logging_steps=1,
    lr_scheduler_type="constant",
    num_generations=8,
    gradient_accumulation_steps=1,
    temperature=1.0,
    top_k=0,
)


def task(num_prompts: int = 16):
    """`num_prompts` fixed prompts "a+b=" and their gold answers: the first digit, a. (A copy the tiny model can
    learn; the last digit of a + b is too hard for it to learn by RL in a few hundred steps.)"""
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
    texts = [
        tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]
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
    from up_trl.models.offline import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer(seed=seed, **model_kwargs)
    model.to(device)
    digit_ids = [tokenizer.convert_tokens_to_ids(str(d)) for d in range(10)]
    rng = random.Random(seed)

    def reply():
        return [rng.choice(digit_ids), tokenizer.eos_token_id]

    return supervise(model, chat_prompt_ids(tokenizer), reply, rng, steps, device), tokenizer


@functools.lru_cache(maxsize=2)
def cached_warm_start(seed: int):
    """`warm_start(seed)`, kept for the next run of the same seed in this process (runs copy the model)."""
    return warm_start(seed)


def run_one(name: str, seed: int, base_model, tokenizer, args, out_dir: str, **overrides) -> dict:
    """One training run of configuration `name` from `base_model`; `overrides` replace the trainer config's settings
    (e.g. per_device_train_batch_size, steps_per_generation, num_iterations: how a rollout batch is reused).
    The config's `trainer` key picks UPGRPOTrainer (default), UPRLOOTrainer or UPAsyncGRPOTrainer. `args` carries
    num_prompts, corruption, num_iterations, max_steps, learning_rate and threshold."""
    from datasets import Dataset
    from transformers import PrinterCallback

    prompts, golds = task(args.num_prompts)
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": p}] for p in prompts], "solution": golds})
    reward_funcs, weights = make_rewards(args.corruption, seed)
    config = dict(CONFIGS[name])
    kind = config.pop("trainer", "grpo")
    settings = dict(
        output_dir=out_dir,
        seed=seed,
        use_cpu=True,
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=32,
        max_completion_length=3,
        **TOY_TRAINER,
        **config,
    )
    if kind == "async_grpo":
        trainer = _async_trainer(name, seed, base_model, tokenizer, args, out_dir, dataset, settings, overrides)
    else:
        from up_trl import UPGRPOConfig, UPGRPOTrainer, UPRLOOConfig, UPRLOOTrainer
        from up_trl.run.parts import attach_parts, with_parts

        rloo = kind == "rloo"
        config_class, trainer_class = (UPRLOOConfig, UPRLOOTrainer) if rloo else (UPGRPOConfig, UPGRPOTrainer)
        settings |= dict(steps_per_generation=4, num_iterations=args.num_iterations, beta=0.0, reward_weights=weights)
        trainer = with_parts(trainer_class)(  # the opt-in parts the committed figures ran with (`up_trl.run.parts`)
            model=copy.deepcopy(base_model),
            reward_funcs=reward_funcs,
            args=config_class(**{**settings, **overrides}),
            train_dataset=dataset,
            processing_class=tokenizer,
        )
        attach_parts(trainer)
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


def async_refusal(corruption: str, num_iterations: int) -> str | None:
    """Why the async GRPO pair cannot run here with these settings, or None: it needs a GPU and a vLLM server, and
    TRL's async worker sums every reward function (no weight-0 accuracy column) and reuses no rollout batch."""
    import torch

    if not torch.cuda.is_available():
        return (
            "AsyncGRPO and UP-AsyncGRPO need a CUDA GPU and a vLLM server serving the warm start (`trl vllm-serve "
            "--model OUTPUT_DIR/warm_start_seedN`, at $VLLM_SERVER_URL or localhost:8000): TRL's asynchronous GRPO "
            "samples only through vLLM; drop them from --configs on a CPU."
        )
    if corruption != "none" or num_iterations != 1:
        return (
            "AsyncGRPO and UP-AsyncGRPO run with --corruption none and --num_iterations 1 only: TRL's async worker "
            "sums every reward function (no weight-0 accuracy column) and reuses no rollout batch; drop them from "
            "--configs."
        )
    return None


def _async_trainer(name, seed, base_model, tokenizer, args, out_dir, dataset, settings, overrides):
    """UPAsyncGRPOTrainer on `base_model` (saved once per seed: the trainer and the vLLM server load a path), sampling
    through TRL's own worker from the server at $VLLM_SERVER_URL. Its rollout is its own: no steps_per_generation /
    num_iterations (the staleness comes from the sampler, see ASYNC_*), no reward weights (TRL's worker sums every
    reward function)."""
    import os

    from up_trl import UPAsyncGRPOConfig, UPAsyncGRPOTrainer

    refusal = async_refusal(args.corruption, args.num_iterations)
    if refusal:
        raise ValueError(refusal)
    path = Path(out_dir) / f"warm_start_seed{seed}"
    if not (path / "config.json").exists():
        base_model.save_pretrained(path)
        tokenizer.save_pretrained(path)
    settings = settings | dict(weight_sync_steps=ASYNC_WEIGHT_SYNC_STEPS, max_staleness=ASYNC_MAX_STALENESS)
    settings["vllm_server_base_url"] = os.environ.get("VLLM_SERVER_URL", "http://localhost:8000")
    config = UPAsyncGRPOConfig(**{**settings, **overrides})
    reward_funcs = make_rewards(args.corruption, seed)[0]
    from up_trl.run.parts import attach_parts, with_parts

    trainer = with_parts(UPAsyncGRPOTrainer)(  # the opt-in parts the committed figures ran with
        str(path), reward_funcs=reward_funcs, args=config, train_dataset=dataset, processing_class=tokenizer
    )
    attach_parts(trainer)
    return trainer


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


def git_commit() -> str | None:
    """The commit the script runs from (None outside a git checkout), with "+dirty" when tracked files differ."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
