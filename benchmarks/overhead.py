"""What UP costs over its parent: the same model, batch and seed, `up_mode="asymmetric"` against `up_mode="off"`,
interleaved A B A B, median over optimizer steps. The last line printed is one JSON object with
`step_time_ratio` (UP / off) and `peak_memory_ratio`.

    python benchmarks/overhead.py --quick          # under a minute on a CPU
    python benchmarks/overhead.py                  # a larger model and batch
    python benchmarks/overhead.py --profile        # where UP's extra time goes (torch.profiler, top ops)
    python benchmarks/overhead.py --preset qwen2.5-0.5b --bf16 --batch_size 16 --completion_length 1024   # GPU

A step is compute_loss + backward + optimizer.step on a fixed off-policy batch (stale old log-probs, mixed-sign
advantages, loss_type dapo), so UP's positive branch really runs. Memory: on CUDA the peak allocated bytes; on CPU
the bytes autograd saves for backward (the activation memory, which is what a loss change can add to).
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import tempfile
import time

import torch


def build(mode: str, model, tokenizer, args, out_dir):
    from datasets import Dataset

    from up_trl import UPGRPOConfig, UPGRPOTrainer

    config = UPGRPOConfig(
        output_dir=out_dir,
        up_mode=mode,
        loss_type=args.loss_type,
        use_cpu=not torch.cuda.is_available(),
        bf16=args.bf16,
        report_to="none",
        per_device_train_batch_size=args.batch_size,
        num_generations=2,
        max_completion_length=args.completion_length,
        learning_rate=1e-5,
        save_strategy="no",
        importance_sampling_level=args.level,
    )
    dataset = Dataset.from_dict({"prompt": ["x"] * args.batch_size})
    trainer = UPGRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    optimizer = torch.optim.AdamW(trainer.model.parameters(), lr=1e-5)
    return trainer, optimizer


def make_batch(model, vocab_size, args, device):
    g = torch.Generator().manual_seed(0)
    b, p, t = args.batch_size, args.prompt_length, args.completion_length
    lengths = torch.randint(t // 2, t + 1, (b,), generator=g)
    batch = {
        "prompt_ids": torch.randint(4, vocab_size, (b, p), generator=g),
        "prompt_mask": torch.ones(b, p, dtype=torch.long),
        "completion_ids": torch.randint(4, vocab_size, (b, t), generator=g),
        "completion_mask": (torch.arange(t)[None, :] < lengths[:, None]).long(),
        "advantages": torch.randn(b, generator=g),
    }
    batch["num_items_in_batch"] = batch["completion_mask"].sum().float()
    batch = {k: v.to(device) for k, v in batch.items()}
    with torch.no_grad():
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
        logits = model.to(device)(ids, attention_mask=torch.ones_like(ids)).logits[:, p - 1 : -1].float()
        logps = torch.log_softmax(logits, -1).gather(-1, batch["completion_ids"][..., None]).squeeze(-1)
    batch["old_per_token_logps"] = logps + 0.3 * torch.randn(logps.shape, generator=g).to(device)
    return batch


def saved_bytes(fn):
    """Bytes autograd keeps for backward while `fn` runs (CPU stand-in for activation memory)."""
    total = 0

    def pack(tensor):
        nonlocal total
        total += tensor.numel() * tensor.element_size()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, total


def step(trainer, optimizer, batch, measure_memory=False):
    device = batch["advantages"].device
    optimizer.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    if measure_memory and device.type == "cpu":
        loss, memory = saved_bytes(lambda: trainer.compute_loss(trainer.model, batch))
    else:
        loss, memory = trainer.compute_loss(trainer.model, batch), None
    loss.backward()
    optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
        memory = torch.cuda.max_memory_allocated()
    return time.perf_counter() - start, memory


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="A small model and few steps: under a minute on CPU.")
    parser.add_argument(
        "--preset",
        choices=["qwen2.5-0.5b"],
        default=None,
        help="A real architecture built from its config (random weights), e.g. for the GPU figures.",
    )
    parser.add_argument("--hidden_size", type=int, default=512)
    parser.add_argument("--num_layers", type=int, default=4)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--prompt_length", type=int, default=64)
    parser.add_argument("--completion_length", type=int, default=256)
    parser.add_argument("--steps", type=int, default=12, help="Measured steps per mode (after warm-up).")
    parser.add_argument("--loss_type", default="dapo")
    parser.add_argument("--level", default="token", choices=["token", "sequence"])
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="Print torch.profiler's top ops for each mode.")
    args = parser.parse_args(argv)
    if args.quick:
        args.hidden_size, args.num_layers, args.completion_length, args.steps = 256, 2, 128, 8
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    from up_trl.models.offline import tiny_model_and_tokenizer

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    model, tokenizer = tiny_model_and_tokenizer(hidden_size=args.hidden_size, num_layers=args.num_layers, dtype=dtype)
    vocab_size = len(tokenizer)
    if args.preset == "qwen2.5-0.5b":  # Qwen2.5-0.5B's shape: 494 M parameters
        from transformers import Qwen2Config, Qwen2ForCausalLM

        config = Qwen2Config(
            vocab_size=151936,
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
            tie_word_embeddings=True,
            max_position_embeddings=4096,
        )
        model, vocab_size = Qwen2ForCausalLM(config).to(dtype), config.vocab_size
        args.hidden_size, args.num_layers = config.hidden_size, config.num_hidden_layers
    batch = make_batch(model, vocab_size, args, device)
    with tempfile.TemporaryDirectory() as tmp:
        runs = {mode: build(mode, copy.deepcopy(model), tokenizer, args, tmp) for mode in ("asymmetric", "off")}
        times = {mode: [] for mode in runs}
        memory = {mode: step(*runs[mode], batch, measure_memory=True)[1] for mode in runs}  # also warms up
        for _ in range(args.steps):
            for mode in ("asymmetric", "off"):  # interleaved: A B A B, so drift hits both alike
                times[mode].append(step(*runs[mode], batch)[0])
        if args.profile:
            from torch.profiler import ProfilerActivity, profile

            for mode in runs:
                with profile(activities=[ProfilerActivity.CPU]) as prof:
                    step(*runs[mode], batch)
                events = prof.key_averages()
                calls = sum(e.count for e in events if e.key.startswith("aten::"))
                print(
                    f"--- {mode}: {calls} aten op calls in one step\n"
                    + events.table(sort_by="self_cpu_time_total", row_limit=12)
                )
    median = {mode: statistics.median(v) for mode, v in times.items()}
    tokens = int(batch["completion_mask"].sum()) + batch["prompt_ids"].numel()
    result = {
        "step_time_ratio": round(median["asymmetric"] / median["off"], 4),
        "peak_memory_ratio": round(memory["asymmetric"] / memory["off"], 4),
        "step_time_s": {m: round(v, 4) for m, v in median.items()},
        "step_time_spread": {m: [round(min(v), 4), round(max(v), 4)] for m, v in times.items()},
        "memory_bytes": memory,
        "memory_measure": "cuda max_memory_allocated" if device.type == "cuda" else "bytes saved for backward",
        "tokens_per_s": {m: round(tokens / v, 1) for m, v in median.items()},
        "model": f"Qwen2 hidden {args.hidden_size} x {args.num_layers} layers "
        f"({sum(p.numel() for p in model.parameters()) / 1e6:.1f} M params, {str(dtype).removeprefix('torch.')})",
        "batch": f"{args.batch_size} x ({args.prompt_length} prompt + {args.completion_length} completion) tokens",
        "loss_type": args.loss_type,
        "level": args.level,
        "steps_per_mode": args.steps,
        "machine": f"{platform.machine()} {device.type}"
        + (f" {torch.cuda.get_device_name()}" if device.type == "cuda" else f", {args.threads} torch threads"),
        "torch": torch.__version__,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
