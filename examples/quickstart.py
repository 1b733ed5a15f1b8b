"""UP on a tiny model, offline, in well under a minute on a laptop CPU.

    python examples/quickstart.py

A 2-layer Qwen2 built in code learns to give short answers (reward: shorter is better). num_iterations=2
reuses every rollout batch twice, so the ratio pi_theta/pi_old really moves and UP differs from GRPO.
"""

import time

import torch
from datasets import Dataset

from up_trl import UPGRPOConfig, UPGRPOTrainer
from up_trl.models.offline import tiny_model_and_tokenizer

torch.set_num_threads(1)


def brevity_reward(completions, **kwargs):
    """1 for an immediate end of turn, falling linearly to 0 at 16 characters."""
    return [max(0.0, 1.0 - len(c[0]["content"]) / 16) for c in completions]


model, tokenizer = tiny_model_and_tokenizer(seed=0)
dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"What is {i} + {i}?"}] for i in range(64)]})
args = UPGRPOConfig(
    output_dir="outputs/quickstart-example",  # its own folder: outputs/quickstart is `up-trl train`'s
    up_mode="asymmetric",  # "off" trains plain GRPO with the same settings
    num_iterations=2,  # off-policy reuse: where UP differs from its parent
    per_device_train_batch_size=16,
    num_generations=8,
    max_completion_length=16,
    learning_rate=5e-3,
    max_steps=20,
    logging_steps=5,
    use_cpu=True,
    bf16=False,
    report_to="none",
    save_strategy="no",
    seed=0,
)
trainer = UPGRPOTrainer(
    model=model, reward_funcs=brevity_reward, args=args, train_dataset=dataset, processing_class=tokenizer
)
start = time.perf_counter()
trainer.train()
seconds = time.perf_counter() - start
trainer.save_model()  # the tiny model, in args.output_dir
trainer.create_model_card()  # and TRL's model card (README.md), naming the UP objective and its settings
rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
print(f"reward {rewards[0]:.3f} -> {rewards[-1]:.3f} in {args.max_steps} steps, {seconds / args.max_steps:.2f} s/step")
print(f"model and model card in {args.output_dir}")
