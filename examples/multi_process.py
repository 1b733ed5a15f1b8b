"""UP from a Python script under `accelerate launch`, on as many processes as it starts: the same script runs on 8
GPUs (DeepSpeed ZeRO-3 or FSDP2) and, with a tiny model built in code, on 2 CPU processes (ZeRO-3 over gloo).

    accelerate launch --config_file configs/accelerate/fsdp2.yaml examples/multi_process.py --model Qwen/Qwen3-0.6B
    accelerate launch --config_file configs/accelerate/zero3.yaml examples/multi_process.py --model Qwen/Qwen3-0.6B
    accelerate launch --config_file configs/accelerate/zero3_cpu.yaml examples/multi_process.py   # CPU, tiny model

Each process builds the same trainer; accelerate shards the model and splits every batch. `steps_per_generation=2`
gives 2 optimizer steps per rollout batch, the second off-policy (where UP acts). Rank 0 prints one JSON line.
"""

import argparse
import json

from datasets import Dataset

from up_trl import UPGRPOConfig, UPGRPOTrainer


def brevity_reward(completions, **kwargs):
    """1 for an immediate end of turn, falling linearly to 0 at 16 characters."""
    return [max(0.0, 1.0 - len(c[0]["content"]) / 16) for c in completions]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="a Hub id or folder; default: a tiny Qwen2 built in code (CPU)")
    parser.add_argument("--output_dir", default="outputs/multi-process-example")
    parser.add_argument("--max_steps", type=int, default=4)
    args = parser.parse_args()
    on_cpu = args.model is None
    if on_cpu:
        from up_trl.models.offline import tiny_model_and_tokenizer

        model, tokenizer = tiny_model_and_tokenizer(seed=0)
    else:
        model, tokenizer = args.model, None  # TRL loads it (and its tokenizer) in each process
    prompts = [[{"role": "user", "content": f"What is {i} + {i}?"}] for i in range(64)]
    config = UPGRPOConfig(
        output_dir=args.output_dir,
        per_device_train_batch_size=8,  # completions per process per step
        num_generations=8,
        steps_per_generation=2,  # 2 optimizer steps per rollout batch: the 2nd is off-policy
        max_completion_length=16,
        learning_rate=5e-3 if on_cpu else 1e-6,
        max_steps=args.max_steps,
        logging_steps=1,
        use_cpu=on_cpu,
        bf16=not on_cpu,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    trainer = UPGRPOTrainer(
        model=model,
        reward_funcs=brevity_reward,
        args=config,
        train_dataset=Dataset.from_dict({"prompt": prompts}),
        processing_class=tokenizer,
    )
    trainer.train()
    trainer.save_model()  # the full weights, gathered from every process
    if trainer.is_world_process_zero():
        rewards = [round(h["reward"], 3) for h in trainer.state.log_history if "reward" in h]
        parameter = next(trainer.model_wrapped.parameters())
        sharding = "fsdp" if trainer.is_fsdp_enabled else "deepspeed" if trainer.is_deepspeed_enabled else "none"
        shard = {"sharding": sharding, "parameter": type(parameter).__name__}
        print(json.dumps({"processes": trainer.accelerator.num_processes, **shard, "rewards": rewards}))
    trainer.accelerator.wait_for_everyone()  # rank 0 may still be writing: none destroys the group before it ends
    if hasattr(trainer, "end"):  # transformers >= 5.18: trackers finished, the process group destroyed
        trainer.end()


if __name__ == "__main__":
    main()
    from up_trl.run.ending import exit_launched_process, launched_with_others

    if launched_with_others():  # skip the interpreter's teardown, where a late gloo thread can abort a finished rank
        exit_launched_process(0)  # (docs/reliability.md, "Multi-process runs end cleanly")
