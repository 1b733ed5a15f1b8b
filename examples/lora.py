"""UP with LoRA: only the adapters train (PEFT), as `up-trl train --use_peft true --lora_r 16` does.

    python examples/lora.py                                   # CPU: a tiny Qwen2 built in code, seconds
    python examples/lora.py --model Qwen/Qwen3-0.6B           # a GPU: the same, on a real model

`peft_config` goes to the UP trainer as to TRL's GRPOTrainer; `num_iterations=2` reuses each rollout batch, so the
second pass is off-policy and UP differs from GRPO. Prints the trainable share and the rewards, as one JSON line.
"""

import argparse
import json

from datasets import Dataset
from peft import LoraConfig

from up_trl import UPGRPOConfig, UPGRPOTrainer


def brevity_reward(completions, **kwargs):
    """1 for an immediate end of turn, falling linearly to 0 at 16 characters."""
    return [max(0.0, 1.0 - len(c[0]["content"]) / 16) for c in completions]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="a Hub id or folder; default: a tiny Qwen2 built in code (CPU)")
    parser.add_argument("--output_dir", default="outputs/lora-example")
    parser.add_argument("--max_steps", type=int, default=8)
    args = parser.parse_args()
    on_cpu = args.model is None
    if on_cpu:
        import torch

        from up_trl.models.offline import tiny_model_and_tokenizer

        torch.set_num_threads(1)
        model, tokenizer = tiny_model_and_tokenizer(seed=0)
    else:
        model, tokenizer = args.model, None
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    config = UPGRPOConfig(
        output_dir=args.output_dir,
        num_iterations=2,  # 2 passes over each rollout batch: the 2nd is off-policy, where UP acts
        per_device_train_batch_size=16,
        num_generations=8,
        max_completion_length=16,
        learning_rate=5e-3 if on_cpu else 1e-5,  # adapters take a larger rate than full fine-tuning
        max_steps=args.max_steps,
        logging_steps=2,
        use_cpu=on_cpu,
        bf16=not on_cpu,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    prompts = [[{"role": "user", "content": f"What is {i} + {i}?"}] for i in range(64)]
    trainer = UPGRPOTrainer(
        model=model,
        reward_funcs=brevity_reward,
        args=config,
        train_dataset=Dataset.from_dict({"prompt": prompts}),
        processing_class=tokenizer,
        peft_config=lora,
    )
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in trainer.model.parameters())
    trainer.train()
    trainer.save_model()  # the adapter (adapter_model.safetensors), not the base weights
    rewards = [round(h["reward"], 3) for h in trainer.state.log_history if "reward" in h]
    print(json.dumps({"trainable_share": round(trainable / total, 4), "rewards": rewards}))


if __name__ == "__main__":
    main()
