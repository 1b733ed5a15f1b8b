"""Where a training step's time goes on the offline default (`up-trl train` with no flags), and old settings against
new ones side by side.

    python benchmarks/step_profile.py                       # breakdown of the offline default
    python benchmarks/step_profile.py --flags "--bf16 true --threads 1"   # ... with other settings
    python benchmarks/step_profile.py --compare             # A (TRL's path) vs B (share_prompt_prefix), interleaved
    python benchmarks/step_profile.py --compare --a_flags "" --b_flags "--bf16 true"   # try a lever
    python benchmarks/step_profile.py --kernels             # generate and forward+backward alone, fp32 vs bf16
    python benchmarks/step_profile.py --generation --threads 2   # one rollout batch, each way of generating

The trainer's own methods are timed by wrapping them on the instance: `_generate` (tokenise, `generate`, decode),
`_calculate_rewards` (scoring), `_get_per_token_logps_and_entropies` without gradients (the old-log-prob pass) and
with them (the policy forward), `accelerator.backward`, and the optimizer step (between the Trainer's
`on_pre_optimizer_step` and `on_optimizer_step` callbacks). "other" is the rest of the step (loss maths, clipping,
logging). Generation happens once every `steps_per_generation` steps, so figures are seconds per step averaged
over whole generation cycles, after one warm-up cycle.

`--compare` runs two training processes (A = `--a_flags`, default the offline default on TRL's own computation,
`--share_prompt_prefix false`; B = `--b_flags`, default `--share_prompt_prefix true`, the opt-in saving the offline
default recipe switches on) and lets them take turns, one generation cycle each, so that the shared machine's drift
hits both alike. It reports the median cycle time of each and their ratio, and
whether the two runs logged the same rewards (same sampled completions) for the fixed seed. The last line
printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

from bench import describe_machine, git_commit

PHASES = ("generation", "scoring", "old_logps", "policy_forward", "backward", "optimizer", "other")

# A: the offline default on TRL's own computation; B: with the opt-in saving `share_prompt_prefix`.
A_FLAGS = "--share_prompt_prefix false"
B_FLAGS = "--share_prompt_prefix true"


def split_flags(flags: str) -> tuple[list[str], dict]:
    """(flags for `up-trl train`, process settings this script applies itself: --threads)."""
    argv, process = shlex.split(flags), {}
    if "--threads" in argv:
        i = argv.index("--threads")
        process["threads"] = int(argv[i + 1])
        del argv[i : i + 2]
    return argv, process


def build_trainer(argv: list[str], output_dir: str):
    """The trainer `up-trl train <argv>` builds (same parser, data, rewards and model), without its callbacks."""
    from up_trl.cli import parse_train_args
    from up_trl.data import load_math_dataset, system_prompt_from_flag
    from up_trl.models.offline import smollm2_path
    from up_trl.rewards import get_reward_funcs
    from up_trl.run.parts import attach_parts, with_parts
    from up_trl.trainers.grpo_trainer import UPGRPOTrainer

    recipe = [] if "--config" in argv else ["--config", "quickstart"]  # what `up-trl train` runs with no model named
    script_args, training_args, model_args = parse_train_args([*recipe, *argv, "--output_dir", output_dir])
    dataset = load_math_dataset(
        script_args.dataset_name,
        script_args.dataset_train_split,
        limit=script_args.dataset_limit,
        seed=training_args.seed,
        shuffle=script_args.dataset_limit is not None,
        system_prompt=system_prompt_from_flag(script_args.system_prompt),
    )
    options = {"max_completion_length": training_args.max_completion_length}
    reward_funcs = get_reward_funcs(
        script_args.reward_funcs, **(options if "soft_overlong" in script_args.reward_funcs else {})
    )
    init = {"attn_implementation": model_args.attn_implementation, "dtype": model_args.dtype}
    training_args.model_init_kwargs = {**init, **(training_args.model_init_kwargs or {})}
    trainer = with_parts(UPGRPOTrainer, script_args.share_prompt_prefix)(  # as `up-trl train` builds it
        model=model_args.model_name_or_path or smollm2_path(),
        reward_funcs=reward_funcs,
        args=training_args,
        train_dataset=dataset,
    )
    attach_parts(trainer)
    return trainer


class StepTimer:
    """Seconds per phase for each optimizer step, by wrapping the trainer's methods on the instance."""

    def __init__(self, trainer):
        from transformers import TrainerCallback

        self.steps: list[dict[str, float]] = []
        self.current: dict[str, float] = defaultdict(float)
        self._wrap(trainer, "_generate", lambda: "generation")
        self._wrap(trainer, "_calculate_rewards", lambda: "scoring")
        self._wrap(
            trainer,
            "_get_per_token_logps_and_entropies",
            lambda: "policy_forward" if _grad_enabled() else "old_logps",
        )
        self._wrap(trainer.accelerator, "backward", lambda: "backward")
        timer = self

        class Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                timer.current = defaultdict(float)
                timer.current["_start"] = time.perf_counter()
                timer.current["_cpu"] = time.process_time()

            def on_pre_optimizer_step(self, args, state, control, **kwargs):
                timer.current["_opt"] = time.perf_counter()

            def on_optimizer_step(self, args, state, control, **kwargs):
                timer.current["optimizer"] += time.perf_counter() - timer.current.pop("_opt")

            def on_step_end(self, args, state, control, **kwargs):
                step = dict(timer.current)
                step["total"] = time.perf_counter() - step.pop("_start")
                cpu = time.process_time() - step.pop("_cpu")
                step["other"] = step["total"] - sum(step.get(p, 0.0) for p in PHASES if p != "other")
                timer.steps.append({**{p: step.get(p, 0.0) for p in (*PHASES, "total")}, "cpu": cpu})

        trainer.add_callback(Callback())

    def _wrap(self, owner, name, phase):
        inner = getattr(owner, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.current[phase()] += time.perf_counter() - start

        setattr(owner, name, timed)


def _grad_enabled() -> bool:
    import torch

    return torch.is_grad_enabled()


def mean_per_step(steps: list[dict[str, float]]) -> dict[str, float]:
    return {p: round(statistics.fmean(s[p] for s in steps), 3) for p in (*PHASES, "total", "cpu") if p in steps[0]}


def run(flags: str, max_steps: int, conn=None, steps_per_turn: int = 2) -> dict:
    """Train with `flags` for `max_steps` steps and time each step. With `conn`, wait for "go" before each turn of
    `steps_per_turn` steps and send that turn's step times back (the --compare baton)."""
    argv, process = split_flags(flags)
    import torch
    from transformers import TrainerCallback

    if process.get("threads"):
        torch.set_num_threads(process["threads"])
    with tempfile.TemporaryDirectory() as tmp:
        trainer = build_trainer([*argv, "--max_steps", str(max_steps), "--plot", "false"], tmp)
        timer = None
        if conn is not None:  # the baton first: waiting for the other process's turn is not timed

            class WaitForTurn(TrainerCallback):
                def on_step_begin(self, args, state, control, **kwargs):
                    if state.global_step % steps_per_turn == 0:
                        assert conn.recv() == "go"

            class EndTurn(TrainerCallback):  # after the timer's own on_step_end
                def on_step_end(self, args, state, control, **kwargs):
                    if state.global_step % steps_per_turn == 0:
                        conn.send(timer.steps[-steps_per_turn:])

            trainer.add_callback(WaitForTurn())
        timer = StepTimer(trainer)
        if conn is not None:
            trainer.add_callback(EndTurn())
            conn.send("loaded")
        trainer.train()
        rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
        completion_length = [h["completions/mean_length"] for h in trainer.state.log_history if "reward" in h]
    result = {
        "flags": flags,
        "torch_threads": torch.get_num_threads(),
        "dtype": str(next(trainer.model.parameters()).dtype).removeprefix("torch."),
        "bf16_autocast": trainer.args.bf16,
        "generation_kwargs": {k: v for k, v in trainer.generation_kwargs.items() if v is not None},
        "steps": timer.steps,
        "rewards": rewards,
        "mean_completion_length": completion_length,
    }
    if conn is not None:
        conn.send(result)
    return result


def compare(a_flags: str, b_flags: str, turns: int, steps_per_turn: int) -> dict:
    """A and B in two processes taking turns (A B, then B A, ...), one turn = `steps_per_turn` steps; the first
    turn of each is a warm-up."""
    from multiprocessing.connection import Listener

    pipes, procs = {}, {}
    with Listener(family="AF_UNIX") as listener:
        for name, flags in (("A", a_flags), ("B", b_flags)):
            argv = ["--worker", listener.address, f"--flags={flags}", f"--cycles={turns}", f"--worker_name={name}"]
            procs[name] = subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv])
        for _ in procs:
            conn = listener.accept()
            pipes[conn.recv()] = conn
    for name in pipes:
        assert pipes[name].recv() == "loaded"
    cycles = {"A": [], "B": []}
    for turn in range(turns):
        for name in ("A", "B") if turn % 2 == 0 else ("B", "A"):  # alternate who goes first, too
            pipes[name].send("go")
            steps = pipes[name].recv()
            print(f"turn {turn} {name}: {sum(s['total'] for s in steps):.1f} s", flush=True)
            cycles[name].append(steps)
    results = {name: pipes[name].recv() for name in pipes}
    for proc in procs.values():
        proc.wait()
    report = {}
    for name in ("A", "B"):
        measured = [s for cycle in cycles[name][1:] for s in cycle]  # first turn: warm-up
        cycle_times = [sum(s["total"] for s in cycle) / len(cycle) for cycle in cycles[name][1:]]
        cycle_cpu = [sum(s.get("cpu", 0.0) for s in cycle) / len(cycle) for cycle in cycles[name][1:]]
        report[name] = {
            "flags": results[name]["flags"],
            "torch_threads": results[name]["torch_threads"],
            "dtype": results[name]["dtype"],
            "bf16_autocast": results[name]["bf16_autocast"],
            "generation_kwargs": results[name]["generation_kwargs"],
            "median_step_s": round(statistics.median(cycle_times), 2),
            "step_s_per_cycle": [round(t, 2) for t in cycle_times],
            "median_step_cpu_s": round(statistics.median(cycle_cpu), 2),
            "breakdown_s_per_step": mean_per_step(measured),
            "rewards": results[name]["rewards"],
            "mean_completion_length": results[name]["mean_completion_length"],
        }
    report["speedup"] = round(report["A"]["median_step_s"] / report["B"]["median_step_s"], 2)
    if report["B"]["median_step_cpu_s"]:  # process CPU seconds: less sensitive to the other jobs on the machine
        report["speedup_cpu"] = round(report["A"]["median_step_cpu_s"] / report["B"]["median_step_cpu_s"], 2)
    report["paired_speedups"] = [
        round(a / b, 2) for a, b in zip(report["A"]["step_s_per_cycle"], report["B"]["step_s_per_cycle"], strict=True)
    ]
    report["same_rewards"] = report["A"]["rewards"] == report["B"]["rewards"]
    return report


def kernels(rounds: int, threads: int) -> dict:
    """The two big pieces of a step alone, float32 against bf16 autocast, interleaved, on SmolLM2-135M: `generate`
    for 32 prompts x 16 new tokens (4 arithmetic prompts x 8, as a rollout batch) and forward + backward on 4 x 102
    tokens. Process CPU seconds as well as wall seconds: on a shared machine CPU time drifts less."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from up_trl.models.offline import smollm2_path

    torch.set_num_threads(threads)
    path = smollm2_path()
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    chats = [[{"role": "user", "content": f"What is {a} x {b}?"}] for a, b in [(3, 4), (7, 8), (6, 9), (2, 5)]]
    texts = [tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) for chat in chats]
    prompts = tokenizer([t for t in texts for _ in range(8)], return_tensors="pt", padding=True)
    config = GenerationConfig(
        max_new_tokens=16,
        min_new_tokens=16,
        do_sample=True,
        top_k=0,
        disable_compile=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    ids = torch.randint(100, 40000, (4, 102), generator=torch.Generator().manual_seed(0))

    def generate():
        model.eval()
        with torch.no_grad():
            model.generate(**prompts, generation_config=config)

    def forward_backward():
        model.train()
        model(input_ids=ids, labels=ids).loss.backward()
        model.zero_grad()

    times = defaultdict(list)
    for r in range(rounds):
        for name, fn in (("generate", generate), ("forward_backward", forward_backward)):
            for dtype in ("float32", "bf16_autocast"):
                autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype != "float32")
                wall, cpu = time.perf_counter(), time.process_time()
                with autocast:
                    fn()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                print(f"round {r} {name} {dtype}: wall {wall:.2f} s, cpu {cpu:.2f} s", flush=True)
                if r:  # round 0: warm-up
                    times[f"{name} {dtype}"].append((wall, cpu))
    report = {
        key: {
            "wall_s": round(statistics.median(w for w, _ in v), 2),
            "cpu_s": round(statistics.median(c for _, c in v), 2),
        }
        for key, v in times.items()
    }
    for name in ("generate", "forward_backward"):
        for clock in ("wall_s", "cpu_s"):
            report[f"{name} speedup ({clock})"] = round(
                report[f"{name} float32"][clock] / report[f"{name} bf16_autocast"][clock], 2
            )
    return {"kernels": report, "rounds_measured": rounds - 1, "torch_threads": threads}


def generation_options(rounds: int, threads: int) -> dict:
    """One rollout batch of the offline default (4 arithmetic prompts x 8, up to 64 new tokens, temperature 1) with
    each way of generating that transformers and TRL offer on CPU, interleaved round by round: TRL's default
    (`generate`, dynamic cache, compile disabled), with each prompt prefilled once (`share_prompt_prefix`), a static
    cache compiled with torch.compile (transformers compiles only on CUDA-like devices unless told to; the first
    round holds the compilation and is reported apart), and continuous batching (`generate_batch`, TRL's
    `use_transformers_continuous_batching`). Wall seconds; round 0 is a warm-up. Then one more TRL-default round
    under torch.profiler: the operators' shares of self CPU time. Each option samples with the same seed per round,
    but continuous batching samples its own way, so its completions (and lengths) differ."""
    import functools

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, CompileConfig, GenerationConfig

    from up_trl.data import load_math_dataset
    from up_trl.models.offline import smollm2_path
    from up_trl.speedups.shared_prompt import shared_prompt_generate

    torch.set_num_threads(threads)
    path = smollm2_path()
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    paged = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="paged|sdpa").eval()
    prompts = [
        row["prompt"]
        for row in load_math_dataset("arithmetic", "train", limit=4, seed=42, shuffle=True, system_prompt=None)
    ]
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    batch = tokenizer([t for t in texts for _ in range(8)], return_tensors="pt", padding=True)
    common = dict(
        max_new_tokens=64,
        do_sample=True,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    compile_config = CompileConfig()
    compile_config._compile_all_devices = True  # transformers' own switch for compiling on CPU
    configs = {
        "trl_default": GenerationConfig(**common, disable_compile=True),
        "static_compiled": GenerationConfig(**common, cache_implementation="static", compile_config=compile_config),
    }
    ids = [[int(t) for t, m in zip(row, mask) if m] for row, mask in zip(batch["input_ids"], batch["attention_mask"])]
    options = {
        "trl_default": lambda: model.generate(**batch, generation_config=configs["trl_default"]),
        "share_prompt_prefix": lambda: shared_prompt_generate(
            model.generate, model, **batch, generation_config=configs["trl_default"]
        ),
        "static_compiled": lambda: model.generate(**batch, generation_config=configs["static_compiled"]),
        "continuous_batching": functools.partial(
            paged.generate_batch, ids, configs["trl_default"], progress_bar=False
        ),
    }
    times, first = defaultdict(list), {}
    for r in range(rounds):
        for name, generate in options.items():
            torch.manual_seed(r)
            start = time.perf_counter()
            with torch.no_grad():
                generate()
            seconds = time.perf_counter() - start
            print(f"round {r} {name}: {seconds:.2f} s", flush=True)
            if r:
                times[name].append(seconds)
            else:
                first[name] = round(seconds, 2)
    report = {name: round(statistics.median(v), 2) for name, v in times.items()}
    ratios = {name: round(report["trl_default"] / report[name], 2) for name in report}
    # Where TRL's default spends its time: the operators with the largest share of self CPU time, one more round.
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile, torch.no_grad():
        options["trl_default"]()
    ops = sorted(profile.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in ops)
    top = {e.key: round(e.self_cpu_time_total / total, 3) for e in ops[:6]}
    return {
        "generate_s": report,
        "speedup_vs_trl_default": ratios,
        "first_round_s": first,
        "rounds_measured": rounds - 1,
        "torch_threads": threads,
        "trl_default_self_cpu_share_by_op": top,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flags", default="", help="Extra `up-trl train` flags (and --threads N) to profile.")
    parser.add_argument("--cycles", type=int, default=3, help="Generation cycles, the first one a warm-up.")
    parser.add_argument("--compare", action="store_true", help="A vs B side by side, interleaved.")
    parser.add_argument("--a_flags", default=A_FLAGS)
    parser.add_argument("--b_flags", default=B_FLAGS)
    parser.add_argument("--kernels", action="store_true", help="generate and forward+backward alone, fp32 vs bf16.")
    parser.add_argument("--generation", action="store_true", help="one rollout batch with each way of generating.")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for --kernels and --generation.")
    parser.add_argument("--output", default=None, help="Write the JSON here too.")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # --compare's address for its workers
    parser.add_argument("--worker_name", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    steps_per_turn = 2  # the offline default's steps_per_generation

    if args.worker:
        from multiprocessing.connection import Client

        conn = Client(args.worker, family="AF_UNIX")
        conn.send(args.worker_name)
        return run(args.flags, args.cycles * steps_per_turn, conn, steps_per_turn)
    if args.kernels:
        report = kernels(args.cycles, args.threads)
    elif args.generation:
        report = generation_options(args.cycles, args.threads)
    elif args.compare:
        report = compare(args.a_flags, args.b_flags, args.cycles, steps_per_turn)
        for name in ("A", "B"):
            print(
                f"{name} ({report[name]['flags'] or 'offline default'}): median {report[name]['median_step_s']} "
                f"s/step; per step: {report[name]['breakdown_s_per_step']}"
            )
        print(
            f"speedup A/B = {report['speedup']} (paired {report['paired_speedups']}); "
            f"same rewards: {report['same_rewards']}"
        )
    else:
        result = run(args.flags, args.cycles * steps_per_turn)
        measured = result.pop("steps")[steps_per_turn:]
        report = {**result, "breakdown_s_per_step": mean_per_step(measured), "measured_steps": len(measured)}
        total = report["breakdown_s_per_step"]["total"]
        for phase in (*PHASES, "total"):
            seconds = report["breakdown_s_per_step"][phase]
            print(f"{phase:>15}: {seconds:7.2f} s/step  {100 * seconds / total:5.1f}%")
    report["machine"], report["commit"] = describe_machine(), git_commit()
    if args.output:
        os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
        with open(args.output, "w") as f:
            json.dump(report, f, indent=1)
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
