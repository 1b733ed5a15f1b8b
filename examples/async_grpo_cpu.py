"""UP on TRL's asynchronous GRPO trainer, on a CPU, without vLLM: a tiny model, an in-process rollout worker.

    python examples/async_grpo_cpu.py --steps 6

Trains the same tiny random model twice (up_mode="asymmetric", then "off" = TRL's AsyncGRPOTrainer objective) on
identical rollouts, and prints per-step reward, staleness, how far pi_theta has moved from the sampler
(mean ratio), and UP's capacity metrics. The reward (shorter replies score higher) is only there to give every group
a spread; the tiny model learns nothing useful. On GPUs, use vLLM instead (docs/trainers.md, "On
GPUs").
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
from datasets import Dataset
from transformers import AutoTokenizer

from up_trl import UPAsyncGRPOConfig, UPAsyncGRPOTrainer
from up_trl.data.models import save_tiny_model
from up_trl.trainers.async_rollout import in_process_rollout

COLUMNS = ("reward", "sample/staleness_max", "ratio", "up/would_clip_frac", "up/capacity_clipped_mean")


def length_reward(completions, **kwargs):
    return [-float(len(c[0]["content"])) for c in completions]


def train(checkpoint: str, up_mode: str, steps: int, output_dir: str) -> list[dict]:
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"{i} + {i} = "}] for i in range(16)]})
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    args = UPAsyncGRPOConfig(
        output_dir=output_dir,
        up_mode=up_mode,
        use_cpu=True,
        bf16=False,
        report_to="none",
        max_steps=steps,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        num_generations=4,
        max_completion_length=16,
        token_budget=0,
        learning_rate=1e-2,
        epsilon_high=0.28,
        weight_sync_steps=1,
        max_staleness=4,
        logging_steps=1,
        save_strategy="no",
        seed=0,
    )
    rollout = in_process_rollout(
        checkpoint,
        train_dataset=dataset,
        reward_funcs=length_reward,
        processing_class=tokenizer,
        args=args,
        groups_per_fill=4,  # 16 samples a fill, 8 a step: every second step trains one-version-old samples
    )
    trainer = UPAsyncGRPOTrainer(
        checkpoint, reward_funcs=length_reward, args=args, train_dataset=dataset, processing_class=tokenizer, **rollout
    )
    start = time.perf_counter()
    trainer.train()
    print(f"{up_mode}: {steps} steps, {(time.perf_counter() - start) / steps:.2f} s/step")
    return [record for record in trainer.state.log_history if "loss" in record]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    steps = parser.parse_args().steps
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = save_tiny_model(f"{tmp}/tiny", seed=0)
        for up_mode in ("asymmetric", "off"):
            logs = train(checkpoint, up_mode, steps, f"{tmp}/{up_mode}")
            print("step " + " ".join(f"{c:>24}" for c in COLUMNS))
            for step, record in enumerate(logs, 1):
                print(f"{step:>4} " + " ".join(f"{record.get(c, float('nan')):>24.4f}" for c in COLUMNS))


if __name__ == "__main__":
    main()
