"""UP on TRL's asynchronous GRPO trainer: a CUDA GPU for training, a vLLM server for sampling.

    trl vllm-serve --model Qwen/Qwen3-0.6B --port 8000                # on its own GPU (CUDA_VISIBLE_DEVICES=1)
    CUDA_VISIBLE_DEVICES=0 python examples/async_grpo.py --model Qwen/Qwen3-0.6B --steps 50

Trains UP-GRPO (or the parent's objective with --up_mode off) on the bundled `arithmetic` problems with the
math-verify reward. The sampler keeps generating while the trainer updates, so each step trains on samples up to
`max_staleness` policy versions old: the off-policy setting where UP differs from its parent. On a machine without
a CUDA GPU it stops with one line: TRL's asynchronous GRPO samples only through vLLM and packs rows with a
flash-attention-3 kernel (on a CPU, train with UPGRPOTrainer, examples/quickstart.py).
"""

from __future__ import annotations

import argparse
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="Qwen/Qwen3-0.6B")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--up_mode", default="asymmetric", choices=("asymmetric", "off"))
    parser.add_argument("--vllm_server_base_url", default="http://127.0.0.1:8000")
    parser.add_argument("--output_dir", default="outputs/async-grpo")
    options = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit(
            "examples/async_grpo.py needs a CUDA GPU and a vLLM server (`trl vllm-serve --model MODEL`); "
            "on a CPU run examples/quickstart.py (UPGRPOTrainer)."
        )
    from up_trl import UPAsyncGRPOConfig, UPAsyncGRPOTrainer
    from up_trl.data import load_math_dataset
    from up_trl.rewards import math_accuracy_reward

    args = UPAsyncGRPOConfig(
        output_dir=options.output_dir,
        up_mode=options.up_mode,
        vllm_server_base_url=options.vllm_server_base_url,
        max_steps=options.steps,
        per_device_train_batch_size=8,
        num_generations=8,
        max_completion_length=256,
        learning_rate=1e-6,
        epsilon_high=0.28,
        max_staleness=4,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
    )
    dataset = load_math_dataset("arithmetic", limit=2048, seed=0)
    trainer = UPAsyncGRPOTrainer(options.model, reward_funcs=math_accuracy_reward, args=args, train_dataset=dataset)
    trainer.train()
    trainer.save_model(options.output_dir)


if __name__ == "__main__":
    main()
