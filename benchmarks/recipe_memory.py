"""Does each GPU recipe fit the GPUs it names? Memory per GPU by arithmetic, from a table of model sizes (nothing is
downloaded, nothing runs on a GPU): the table of docs/launching.md#memory, checked by tests/test_recipe_memory.py.

    python benchmarks/recipe_memory.py

A GPU recipe's first line names its hardware ("... for 8 x H100 80 GB ..."), its `# Launch` line the accelerate
config (ZeRO stage, process count). Per GPU, in GiB:

- **vLLM's share** (colocate: vLLM and training share each GPU): `vllm_gpu_memory_utilization` x the GPU's memory.
  It holds the bf16 weights over `vllm_tensor_parallel_size`, vLLM's working memory (`VLLM_WORKING_GIB` plus the
  sampler's fp32 logits for `max_num_seqs` sequences) and the KV cache; the KV cache must hold the stated budget:
  `KV_SEQUENCES` sequences of prompt + completion tokens, and at least one of vLLM's `max_model_len` (vLLM refuses
  to start otherwise).
- **the training peak**: model states under the recipe's ZeRO stage (`STATE_BYTES`), the ZeRO-3 gathered layers, a
  reference model when `beta > 0`, activations with gradient checkpointing for `per_device_train_batch_size` x
  (prompt + completion) tokens (`PROMPT_TOKENS`: the longest prompt we assume in a micro-batch), and TRL's fused
  LM head (its fp32 weight-gradient buffer; TRL 1.16 never materialises the batch x sequence x vocab logits).
- **fits**: the KV budget fits in vLLM's share, and training peak + vLLM's share + `HEADROOM_GIB` <= the GPU.

The model is simple and meant to err high; it is an estimate, not a measurement. The first-run recipe's time is
estimated the same way (`estimate_minutes`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "src" / "up_trl" / "recipes"
ACCELERATE = ROOT / "configs" / "accelerate"
GIB = 2**30


@dataclass(frozen=True)
class ModelSize:
    """What the arithmetic needs of a model, from its public config.json (the Hub page of each, read by hand)."""

    params: float  # all parameters (vision tower included)
    layers: int
    hidden: int
    heads: int  # query heads (of head_dim each)
    mlp_width: int  # intermediate size a token passes through (MoE: experts per token x expert width)
    kv_heads: int
    head_dim: int
    vocab: int
    max_position: int  # max_position_embeddings: vLLM's max_model_len when the recipe sets none
    tied: bool  # tie_word_embeddings


MODELS = {
    # Qwen3 technical report (arXiv 2505.09388) and config.json: 40 layers, hidden 5120, 17408 MLP, 8 KV heads x 128.
    "Qwen/Qwen3-14B-Base": ModelSize(14.77e9, 40, 5120, 40, 17408, 8, 128, 151936, 40960, False),
    # config.json: 36 layers, hidden 4096, 12288 MLP, 8 KV heads x 128.
    "Qwen/Qwen3-8B": ModelSize(8.19e9, 36, 4096, 32, 12288, 8, 128, 151936, 40960, False),
    # config.json: 48 layers, hidden 2048, 128 experts of 768, 8 per token, 4 KV heads x 128; 30.5B in all.
    "Qwen/Qwen3-30B-A3B-Base": ModelSize(30.53e9, 48, 2048, 32, 8 * 768, 4, 128, 151936, 40960, False),
    # config.json text_config: as Qwen3-8B, 262144 positions; 8.77B with the vision tower.
    "Qwen/Qwen3-VL-8B-Instruct": ModelSize(8.77e9, 36, 4096, 32, 12288, 8, 128, 151936, 262144, False),
    # config.json: 24 layers, hidden 896, 4864 MLP, 2 KV heads x 64, tied embeddings; 0.49B.
    "Qwen/Qwen2.5-0.5B-Instruct": ModelSize(0.494e9, 24, 896, 14, 4864, 2, 64, 151936, 32768, True),
}

GPUS = {"H100 80 GB": 78.0, "H200 141 GB": 139.0}  # GiB that CUDA offers a process (about; the rest is reserved)
GPUS |= (SMALL_GPUS := {"L4 or A10 24 GB": 22.0, "T4 16 GB": 14.7})  # a notebook's, for the first run alone

# The longest prompt (chat template and system prompt included) we assume in a micro-batch: TRL 1.16 does not
# truncate prompts, and a micro-batch is padded to its longest one. Geometry3K's includes its image's tokens.
PROMPT_TOKENS = {"dapo-math-17k": 1024, "math-lvl3to5": 1024, "geometry3k": 2048, "gsm8k": 512}

# Bytes a parameter, training side. ZeRO-3 (over N GPUs): bf16 weights 2 + fp32 gradients 4 (DeepSpeed's bf16
# optimizer accumulates in fp32; 2 would do, 4 errs high) + fp32 master weights 4 + Adam's two moments 8 = 18.
# One process without DeepSpeed: the weights in the recipe's dtype, gradients and AdamW's moments in that dtype too
# (torch.optim.AdamW keeps its state in the parameter's dtype); float32 adds autocast's bf16 copies of the weights.
STATE_BYTES = {"zero3": 18, "float32": 4 + 4 + 8 + 2, "bfloat16": 2 + 2 + 4}
ZERO3_LIVE_PARAMS = 1e9  # DeepSpeed's stage3_max_live_parameters default: gathered bf16 weights held at once
HEADROOM_GIB = 4.0  # CUDA context, NCCL buffers, allocator fragmentation
VLLM_WORKING_GIB = 2.0  # vLLM's activations at TRL's max_num_batched_tokens=4096, CUDA graphs, non-torch memory
KV_SEQUENCES = 8  # the stated KV budget: this many prompt + completion sequences at once (the rest wait their turn)
TRL_BETA = {"grpo": 0.0, "rloo": 0.05, "async_grpo": 0.0}  # TRL 1.16's default KL coefficients (async has none)
LOGPROB_TILE_BYTES = 2 * 4096 * 32768 * 2  # TRL's fused LM head: a bf16 4096-token x 32768-vocab tile, and its grad


@dataclass(frozen=True)
class Hardware:
    gpus: int  # training processes (one a GPU); the async recipes add one GPU for the vLLM server
    gpu: str
    zero_stage: int  # 0: no DeepSpeed


@dataclass(frozen=True)
class Estimate:
    """Per-GPU figures of one recipe, GiB (fits_* are the two checks)."""

    recipe: str
    hardware: str
    vllm_share: float  # utilization x GPU memory (the whole server GPU in the async recipes)
    vllm_weights: float
    kv_room: float  # what vLLM's share leaves for the KV cache
    kv_budget: float  # the stated budget the KV cache must hold
    kv_sequences: float  # prompt + completion sequences the KV room holds at once
    train_states: float  # weights, gradients, optimizer states (+ ZeRO-3 gathered layers, + reference model)
    train_activations: float  # checkpoints, one layer's recompute, the fused LM head
    train_peak: float
    gpu_memory: float
    colocated: bool  # vLLM shares the training GPUs

    @property
    def used(self) -> float:
        return self.train_peak + (self.vllm_share if self.colocated else 0.0) + HEADROOM_GIB

    @property
    def fits_vllm(self) -> bool:
        return self.kv_room >= self.kv_budget

    @property
    def fits_gpu(self) -> bool:
        return self.used <= self.gpu_memory


def first_line(name: str) -> str:
    return (RECIPES / f"{name}.yaml").read_text().splitlines()[0]


def hardware(name: str) -> Hardware:
    """The hardware a recipe names: GPU kind and count from its first line, ZeRO stage and processes from the
    accelerate config on its `# Launch` line (none: one process, no DeepSpeed)."""
    text = (RECIPES / f"{name}.yaml").read_text()
    match = re.search(r"for (\d+) x (H100 80 GB|H200 141 GB)", first_line(name))
    if not match:
        raise ValueError(f"{name}.yaml: its first line names no hardware ('... for 8 x H100 80 GB ...')")
    launch = next((line for line in text.splitlines() if "up-trl train" in line and line.startswith("#")), "")
    config = re.search(r"--accelerate_config (\w+)", launch)
    if not config:
        return Hardware(1, match.group(2), 0)
    accelerate = yaml.safe_load((ACCELERATE / f"{config.group(1)}.yaml").read_text())
    processes = re.search(r"--num_processes (\d+)", launch)
    processes = int(processes.group(1)) if processes else accelerate["num_processes"]
    stage = accelerate.get("deepspeed_config", {}).get("zero_stage", 0)
    machines = accelerate.get("num_machines", 1)
    if processes != int(match.group(1)) * machines:
        gpus = f"{match.group(1)} x {match.group(2)}"
        raise ValueError(f"{name}.yaml: {processes} processes launched on {gpus} a machine, {machines} machine(s)")
    return Hardware(processes, match.group(2), stage)


def estimate(name: str, recipe: dict | None = None, hw: Hardware | None = None) -> Estimate:
    """The per-GPU figures of recipe `name` (its YAML and hardware, or `recipe` and `hw`: e.g. a changed copy)."""
    recipe = recipe if recipe is not None else yaml.safe_load((RECIPES / f"{name}.yaml").read_text())
    hw = hw or hardware(name)
    model = MODELS[recipe["model_name_or_path"]]
    gpu = GPUS[hw.gpu]
    async_grpo = recipe.get("trainer") == "async_grpo"
    sequence = PROMPT_TOKENS[recipe["dataset_name"]] + recipe["max_completion_length"]
    checkpointing = recipe.get("activation_checkpointing", recipe.get("gradient_checkpointing", True))
    if not checkpointing:
        raise ValueError(f"{name}: the arithmetic assumes gradient checkpointing (TRL's default)")

    # vLLM: colocated in each training process, or (async) a server on a GPU of its own with its own defaults.
    if async_grpo:
        # trl vllm-serve's defaults, and vLLM's max_num_seqs on a GPU of 70 GiB or more
        utilization, tp, max_seqs, max_model_len = 0.9, 1, 1024, model.max_position
    else:
        utilization = recipe.get("vllm_gpu_memory_utilization", 0.3)  # TRL 1.16's defaults
        tp = recipe.get("vllm_tensor_parallel_size", 1)
        max_seqs = recipe["per_device_train_batch_size"] * tp * recipe["steps_per_generation"]  # as TRL sets it
        max_model_len = recipe.get("vllm_max_model_length") or model.max_position
    share = utilization * gpu
    weights = model.params * 2 / tp / GIB
    sampler = max_seqs * model.vocab * 4 * 4 / GIB  # fp32 logits, log-probs and two sampler copies per sequence
    kv_room = share - weights - VLLM_WORKING_GIB - sampler
    kv_per_token = 2 * model.layers * -(-model.kv_heads // tp) * model.head_dim * 2  # K and V, bf16
    kv_budget = max(KV_SEQUENCES * sequence, max_model_len) * kv_per_token / GIB

    # Training side: states, then activations of one micro-batch of `tokens`.
    n = hw.gpus
    dtype = recipe.get("dtype", "float32" if async_grpo else "bfloat16")
    if hw.zero_stage == 3:
        states = model.params * STATE_BYTES["zero3"] / n + min(model.params, ZERO3_LIVE_PARAMS) * 2
        ref = model.params * 2 / n
    elif hw.zero_stage == 0 and n == 1:
        states = model.params * STATE_BYTES[dtype]
        ref = model.params * (4 if dtype == "float32" else 2)
    else:
        raise ValueError(f"{name}: ZeRO stage {hw.zero_stage} on {n} GPUs is not in this arithmetic")
    states += ref if recipe.get("beta", TRL_BETA[recipe.get("trainer", "grpo")]) > 0 else 0  # a reference model
    tokens = recipe["token_budget"] if async_grpo else recipe["per_device_train_batch_size"] * sequence
    residual = 4 if dtype == "float32" else 2  # checkpointed layer inputs, in the weights' dtype
    checkpoints = model.layers * tokens * model.hidden * residual
    # One layer recomputed and back-propagated: attention (Q, K, V, output, norms ~14 h) and the MLP (gate, up, act,
    # product ~6 w) in bf16, doubled for fp32 temporaries and the gradients of the same shapes.
    layer = tokens * (14 * model.hidden + 6 * model.mlp_width) * 2 * 2
    head = model.vocab * model.hidden * (4 + 2) + LOGPROB_TILE_BYTES + tokens * model.hidden * 4  # fp32 grad, bf16 W
    activations = checkpoints + layer + head
    return Estimate(
        recipe=name,
        hardware=f"{n + async_grpo} x {hw.gpu}" + (f", ZeRO-{hw.zero_stage}" if hw.zero_stage else ""),
        vllm_share=share,
        vllm_weights=weights,
        kv_room=kv_room,
        kv_budget=kv_budget,
        kv_sequences=kv_room * GIB / kv_per_token / sequence,
        train_states=states / GIB,
        train_activations=activations / GIB,
        train_peak=(states + activations) / GIB,
        gpu_memory=gpu,
        colocated=not async_grpo,
    )


def memory_lines(e: Estimate) -> list[str]:
    """The two comment lines a recipe carries with its figures (tests/test_recipe_memory.py checks they are these)."""
    working = e.vllm_share - e.vllm_weights - e.kv_room
    if e.colocated:
        where, gpu, beside = "Memory per GPU", "", f" + vLLM {e.vllm_share:.1f}"
    else:
        where, gpu, beside = "Memory", "the server's GPU: ", ""
    return [
        f"# {where} (estimated): {gpu}vLLM {e.vllm_share:.1f} GiB = weights {e.vllm_weights:.1f} + working "
        f"{working:.1f} + KV room {e.kv_room:.1f} (budget {e.kv_budget:.1f});",
        f"#   {'the training GPU: ' if not e.colocated else ''}training {e.train_peak:.1f} GiB (states "
        f"{e.train_states:.1f} + activations {e.train_activations:.1f}){beside} + headroom {HEADROOM_GIB:.0f} "
        f"= {e.used:.1f} of {e.gpu_memory:.0f} GiB.",
    ]


# The first-run recipe's time, by the same arithmetic. Assumptions (not measured): a rollout's generation lasts
# max_completion_length decode steps (its longest reply) at DECODE_STEP_S each; training runs at TRAIN_FLOPS_PER_S
# (about a tenth of an H100's dense bf16 peak: a 0.5B model keeps it poorly busy), every sequence padded to the
# longest prompt + max_completion_length; each rollout also pays ROLLOUT_OVERHEAD_S (weight sync, scoring, logging).
DECODE_STEP_S = 0.010
TRAIN_FLOPS_PER_S = 100e12
ROLLOUT_OVERHEAD_S = 3.0
STARTUP_MIN = 5.0  # download (~1 GB), vLLM engine start and CUDA graph capture


def estimate_minutes(name: str) -> float:
    """Wall minutes of recipe `name` on its GPU: startup + rollouts x (generate + train + overhead). Training
    FLOPs per token: 2 x params for the old log-probs (off-policy) + 8 x params (forward, recomputed forward,
    backward) for each of num_iterations passes."""
    recipe = yaml.safe_load((RECIPES / f"{name}.yaml").read_text())
    model = MODELS[recipe["model_name_or_path"]]
    per_rollout = recipe["per_device_train_batch_size"] * recipe["steps_per_generation"]  # sequences a GPU trains
    tokens = per_rollout * (PROMPT_TOKENS[recipe["dataset_name"]] + recipe["max_completion_length"])
    flops = (2 + 8 * recipe.get("num_iterations", 1)) * model.params * tokens
    rollouts = recipe["max_steps"] * recipe["gradient_accumulation_steps"] / recipe["steps_per_generation"]
    seconds = recipe["max_completion_length"] * DECODE_STEP_S + flops / TRAIN_FLOPS_PER_S + ROLLOUT_OVERHEAD_S
    return STARTUP_MIN + rollouts * seconds / 60


def gpu_recipes() -> list[str]:
    """Every packaged recipe but the CPU default."""
    return sorted(path.stem for path in RECIPES.glob("*.yaml") if path.stem != "quickstart")


def twins() -> list[tuple[str, str]]:
    """(UP recipe, its baseline twin) for every GPU recipe: the twins differ only in UP's own keys, so their figures
    are the same (tests/test_recipe_memory.py checks it)."""
    return [(name, name.removeprefix("up_")) for name in gpu_recipes() if name.startswith("up_")]


def table() -> str:
    """The markdown table of docs/launching.md#memory: one row per pair of twins, GiB per GPU."""
    rows = [
        "| recipes | hardware | vLLM share | vLLM weights | KV room (budget) | training peak | in all / GPU | fits |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for up, base in twins():
        e = estimate(up)
        where = "" if e.colocated else " (own GPU)"
        rows.append(
            f"| `{up}`, `{base}` | {e.hardware} | {e.vllm_share:.1f}{where} | {e.vllm_weights:.1f} | "
            f"{e.kv_room:.1f} ({e.kv_budget:.1f}), {e.kv_sequences:.0f} seqs | {e.train_peak:.1f} | "
            f"{e.used:.1f} / {e.gpu_memory:.0f} | {'yes' if e.fits_vllm and e.fits_gpu else 'NO'} |"
        )
    return "\n".join(rows)


FIRST_RUN = "up_gsm8k_small"  # the first GPU run (docs/launching.md#first-gpu-run)


def first_run_on_small_gpus() -> list[str]:
    """The first run on a notebook's GPU, as written and with micro-batches of 4 (the same rollout batches and
    optimizer steps: gradient_accumulation_steps and steps_per_generation 4 x larger); one line each."""
    written = yaml.safe_load((RECIPES / f"{FIRST_RUN}.yaml").read_text())
    scale = written["per_device_train_batch_size"] // 4
    small = written | {
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": written["gradient_accumulation_steps"] * scale,
        "steps_per_generation": written["steps_per_generation"] * scale,
    }
    lines = []
    for gpu in SMALL_GPUS:
        for label, recipe in (("as written", written), ("micro-batches of 4", small)):
            e = estimate(FIRST_RUN, recipe, Hardware(1, gpu, 0))
            lines.append(
                f"{gpu}, {label}: training {e.train_peak:.1f} + vLLM {e.vllm_share:.1f} + headroom "
                f"{HEADROOM_GIB:.0f} = {e.used:.1f} of {e.gpu_memory:.1f} GiB, "
                + ("fits" if e.fits_vllm and e.fits_gpu else "does not fit")
            )
    return lines


def main() -> None:
    print(table())
    print(f"\n{FIRST_RUN}: about {estimate_minutes(FIRST_RUN):.0f} minutes on its GPU (estimated, not measured)")
    print("\n".join(first_run_on_small_gpus()))


if __name__ == "__main__":
    main()
