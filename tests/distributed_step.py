"""Two SGD steps of UPGRPOTrainer on one fixed global batch of 8 stale completions, split across the processes that
run `python tests/distributed_step.py OUT.pt` (or `accelerate launch ... tests/distributed_step.py OUT.pt`); rank 0
saves the losses and parameters to OUT.pt. Also home of `length_reward` for `tests/test_distributed.py`."""

from __future__ import annotations

import os
import sys
import zlib

import torch

BATCH, PROMPT_LEN, COMPLETION_LEN = 8, 3, 6
LOSS_TYPES = ("dapo", "grpo", "dr_grpo")


def length_reward(completions, **kwargs):
    """Shorter replies score higher; a checksum of the text, the same in every process, breaks ties."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [-float(len(t)) + zlib.crc32(t.encode()) / 2**32 for t in texts]


def global_batch(model, vocab_size: int) -> dict[str, torch.Tensor]:
    """The same 8 rows in every process: left-padded prompts, completions of different lengths, stale old logps."""
    g = torch.Generator().manual_seed(0)
    prompt_mask = torch.tensor([[1, 1, 1], [0, 1, 1], [1, 1, 1], [0, 0, 1]] * 2)
    lengths = torch.tensor([6, 3, 5, 1, 4, 6, 2, 5])
    completion_mask = (torch.arange(COMPLETION_LEN) < lengths.unsqueeze(1)).long()
    # num_items_in_batch as TRL's gather(completion_mask.sum()).sum(): the generation batch's tokens over all ranks.
    prompt_ids = torch.randint(4, vocab_size, (BATCH, PROMPT_LEN), generator=g)
    completion_ids = torch.randint(4, vocab_size, (BATCH, COMPLETION_LEN), generator=g)
    advantages = torch.tensor([1.2, -0.7, 0.5, -1.5, 0.9, -0.3, 1.5, -1.1])
    batch = dict(prompt_ids=prompt_ids, prompt_mask=prompt_mask, completion_ids=completion_ids, advantages=advantages)
    batch |= dict(completion_mask=completion_mask, num_items_in_batch=completion_mask.sum().float())
    with torch.no_grad():
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
        attn = torch.cat([batch["prompt_mask"], completion_mask], 1)
        logits = model(input_ids=ids, attention_mask=attn).logits[:, PROMPT_LEN - 1 : -1]
        logps = logits.log_softmax(-1).gather(-1, batch["completion_ids"].unsqueeze(-1)).squeeze(-1)
    # Stale by up to ~e^1: ratios leave [1 - eps, 1 + eps_high] on both sides, so UP and the clip both act.
    batch["old_per_token_logps"] = logps + 0.6 * torch.randn(BATCH, COMPLETION_LEN, generator=g)
    return batch


def run(loss_type: str, out_dir: str) -> dict:
    from datasets import Dataset

    from up_trl import UPGRPOConfig, UPGRPOTrainer
    from up_trl.models.offline import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    initial = {n: p.detach().clone() for n, p in model.state_dict().items()}
    batch = global_batch(model, len(tokenizer))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    rows = slice(rank * BATCH // world, (rank + 1) * BATCH // world)

    class FixedBatchTrainer(UPGRPOTrainer):
        def _generate_and_score_completions(self, inputs):
            return {k: v if k == "num_items_in_batch" else v[rows] for k, v in batch.items()}

    # The same global batch of 8 for every process count; num_iterations=2: step 2 reuses it with the updated policy.
    cpu = dict(use_cpu=True, bf16=False, report_to="none", save_strategy="no", seed=0, max_steps=2, logging_steps=1)
    sgd = dict(optim="sgd", learning_rate=1.0, lr_scheduler_type="constant", max_grad_norm=0.0)
    shape = dict(per_device_train_batch_size=BATCH // world, num_generations=4, max_completion_length=COMPLETION_LEN)
    up = dict(loss_type=loss_type, up_mode="asymmetric", epsilon_high=0.28, num_iterations=2)
    args = UPGRPOConfig(output_dir=os.path.join(out_dir, loss_type), **cpu, **sgd, **shape, **up)
    dataset = Dataset.from_dict({"prompt": ["1 + 1 = "] * 16})
    trainer = FixedBatchTrainer(model, length_reward, args=args, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    state = trainer.accelerator.get_state_dict(trainer.model_wrapped)  # ZeRO-3: gathered on rank 0 only
    zero_stage = trainer.accelerator.state.deepspeed_plugin.zero_stage if trainer.is_deepspeed_enabled else None
    logged = {key: [h[key] for h in trainer.state.log_history if key in h] for key in ("loss", "grad_norm")}
    final = {n: t.detach().float().cpu().clone() for n, t in (state or {}).items()}
    world_size = trainer.accelerator.num_processes
    return logged | dict(initial=initial, final=final, world_size=world_size, zero_stage=zero_stage)


def main(out_path: str) -> None:
    torch.set_num_threads(1)
    results = {loss_type: run(loss_type, os.path.dirname(os.path.abspath(out_path))) for loss_type in LOSS_TYPES}
    if int(os.environ.get("RANK", "0")) == 0:
        torch.save(results, out_path)
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
        # Gloo can still abort a rank in C++ teardown after all this ("terminate called without an active exception",
        # SIGABRT, ~1 launch in 10 with several DeepSpeed engines): the results are saved, so skip the teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
