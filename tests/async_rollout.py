"""A test stand-in, not part of up-trl: TRL's async GRPO on CPU, its vLLM sampler replaced by an in-process copy of the
policy whose sampled tokens' log-probs are `old_log_probs` (what `trl vllm-serve` returns), scored by TRL's own
`_score_group` and refreshed at each sync; generated on demand with a per-group seed (reproducible, really stale)."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import torch
from transformers import AutoModelForCausalLM
from tree_attention import register_reference_tree_attention
from trl.experimental.async_grpo.async_rollout_worker import (
    RolloutGroup,
    RolloutSample,
    TrainingSequence,
    _AsyncRolloutLoop,
)
from trl.trainer.utils import get_callable_name

from up_trl.run.parts import METRIC, record_scorable


@contextlib.contextmanager
def async_grpo_on_cpu() -> Iterator[None]:
    """While an `AsyncGRPOTrainer` is built without CUDA: `register_tree_attention` registers
    `tree_attention.tree_attention_reference` instead of the FA3 kernel, and `get_peak_flops_per_device` returns None
    (MFU metrics disabled, as TRL reads it)."""
    from trl.experimental.async_grpo import async_grpo_trainer as module

    saved = module.register_tree_attention, module.get_peak_flops_per_device
    module.register_tree_attention = register_reference_tree_attention
    module.get_peak_flops_per_device = lambda accelerator, dtype: None
    try:
        yield
    finally:
        module.register_tree_attention, module.get_peak_flops_per_device = saved


class _FillOnGet(queue.Queue):
    """A `queue.Queue` that calls `fill()` (in the caller's thread) when asked for an item while empty."""

    def __init__(self, fill: Callable[[], None]):
        super().__init__()
        self._fill = fill

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if self.empty():
            self._fill()
        return super().get(block, timeout)


class InProcessRolloutWorker:
    """TRL's `RolloutWorkerProtocol` without vLLM: samples from its own copy of the policy at `model`."""

    def __init__(self, model: str, *, train_dataset, reward_funcs, processing_class, args, groups_per_fill: int = 1):
        if groups_per_fill < 1:
            raise ValueError(f"groups_per_fill={groups_per_fill} must be at least 1.")
        dtype = args.dtype if args.dtype == "auto" else getattr(torch, args.dtype)
        self.sampler = AutoModelForCausalLM.from_pretrained(model, dtype=dtype, attn_implementation="sdpa")
        self.sampler.eval().requires_grad_(False)
        self.tokenizer = processing_class
        self.args = args
        self.groups_per_fill = groups_per_fill
        reward_funcs = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs]
        reward_funcs, self._scorable = record_scorable(reward_funcs)  # up/unscorable_frac (`run.parts`)
        # The attributes TRL's `_AsyncRolloutLoop._score_group` reads (pinned by tests/test_async_grpo.py).
        names = [get_callable_name(f) for f in reward_funcs]
        self._scorer = SimpleNamespace(reward_funcs=reward_funcs, reward_func_names=names, _env_reward_types=[])
        self._scorer._provides_rollout_reward = False
        eos = self.sampler.generation_config.eos_token_id
        eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        self.eos_token_ids = [processing_class.eos_token_id, *[e for e in eos if e != processing_class.eos_token_id]]
        self.dataset = train_dataset
        self._work = self._groups()
        self.rollout_buffer = _FillOnGet(self._fill)
        self.metrics_queue: queue.Queue = queue.Queue()
        self.model_version = 0
        self.started = False

    # RolloutWorkerProtocol
    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.started = False

    def update_model_version(self, model_version: int) -> None:
        self.model_version = model_version

    def check_health(self, stale_after_s: float) -> None:
        """Nothing to watch: generation runs in the trainer's thread, so a failure raises there."""

    @torch.no_grad()
    def load_weights(self, weights: Iterator[tuple[str, torch.Tensor]]) -> None:
        """Copy `(name, tensor)` pairs (TRL's checkpoint names) into the sampler; every parameter must be sent."""
        params = dict(self.sampler.named_parameters())
        received = set()
        for name, tensor in weights:
            if name not in params:
                raise KeyError(f"The trainer sent weight {name!r}, which the sampler copy does not have.")
            params[name].copy_(tensor)
            received.add(name)
        if missing := sorted(set(params) - received):
            raise ValueError(f"The weight sync left sampler parameters unchanged: {missing[:5]}")

    def _groups(self) -> Iterator[tuple[int, dict]]:
        group_id = 0
        while True:
            for row in self.dataset:
                yield group_id, row
                group_id += 1

    def _fill(self) -> None:
        if not self.started:
            raise RuntimeError("InProcessRolloutWorker was asked for rollouts before start().")
        for _ in range(self.groups_per_fill):
            for sample in self.generate_group(*next(self._work)):
                sample.enqueued_at = time.time()
                self.rollout_buffer.put(sample)

    def generate_group(self, group_id: int, row: dict) -> list[RolloutSample]:
        """Sample `num_generations` completions of one prompt from the sampler copy, then score them with TRL."""
        prompt = row["prompt"]
        if isinstance(prompt, str):
            raise ValueError("The async GRPO trainer takes conversational prompts ([{'role': 'user', ...}]).")
        args, n, pad = self.args, self.args.num_generations, self.tokenizer.pad_token_id
        prompt_ids = self.tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, return_dict=False, **(args.chat_template_kwargs or {})
        )
        t0 = time.monotonic()
        input_ids = torch.tensor([prompt_ids] * n, device=self.sampler.device)
        sampling = {k: getattr(args, k) for k in ("temperature", "top_k", "top_p", "min_p", "repetition_penalty")}
        ends = dict(max_new_tokens=args.max_completion_length, eos_token_id=self.eos_token_ids)
        # output_scores: the logits after temperature and filtering, vLLM's processed logprobs
        fixed = dict(do_sample=True, output_scores=True, return_dict_in_generate=True, pad_token_id=pad)
        with torch.random.fork_rng(devices=[]):  # a per-group seed: reproducible, and leaves the trainer's RNG alone
            torch.manual_seed(args.seed + group_id)
            out = self.sampler.generate(
                input_ids, attention_mask=torch.ones_like(input_ids), **sampling, **ends, **fixed
            )
        generated = out.sequences[:, len(prompt_ids) :]
        logps = torch.log_softmax(torch.stack(out.scores, 1).float(), -1)
        logps = logps.gather(-1, generated.unsqueeze(-1)).squeeze(-1)

        completions, completions_ids, sequences = [], [], []
        for i in range(n):
            ids = generated[i].tolist()
            length = next((t + 1 for t, token in enumerate(ids) if token in self.eos_token_ids), len(ids))
            ids = ids[:length]
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            completions.append([{"role": "assistant", "content": text}])
            completions_ids.append(ids)
            old, mask = [0.0] * len(prompt_ids) + logps[i, :length].tolist(), [0] * len(prompt_ids) + [1] * length
            sequence = TrainingSequence(
                prompt_ids + ids, completion_mask=mask, old_log_probs=old, rollout_id=f"{group_id}-{i}"
            )
            sequences.append([sequence])
        kwargs = {k: [v] * n for k, v in row.items() if k not in {"prompt", "completion", "completion_ids"}}
        made = dict(completions=completions, completions_ids=completions_ids, completions_sequences=sequences)
        no_tools = dict(tool_call_counts=[0] * n, tool_failure_counts=[0] * n, env_rewards=[None] * n)
        version = dict(model_version=self.model_version, group_id=group_id, rollout_rewards=[None] * n)
        group = RolloutGroup(prompts=[prompt] * n, reward_kwargs=kwargs, **made, **no_tools, **version)
        samples = asyncio.run(_AsyncRolloutLoop._score_group(self._scorer, group))
        eos_and_pad = (*self.eos_token_ids, pad)
        metrics = {
            "rollout/duration_s": time.monotonic() - t0,
            "completions/mean_length": (float(sum(map(len, completions_ids))), float(n)),
            "completions/clipped_ratio": (float(sum(ids[-1] not in eos_and_pad for ids in completions_ids)), n),
        }
        if (unscorable := self._scorable.take()) is not None:  # None: no reward is a function
            metrics[METRIC] = (float(unscorable[0]), float(unscorable[1]))
        self.metrics_queue.put(metrics)
        return samples


class InProcessWeightTransfer:
    """TRL's `WeightTransferProtocol`: each sync copies the trainer's weights into the worker's sampler."""

    def __init__(self, worker: InProcessRolloutWorker):
        self.worker = worker

    def send_weights(self, iterator: Iterator[tuple[str, torch.Tensor]]) -> None:
        self.worker.load_weights(iterator)

    def _nothing(self) -> None: ...

    init_weight_transfer = pause = resume = destroy = _nothing  # nothing to set up, pause or tear down in process


def in_process_rollout(model: str, **kwargs) -> dict[str, Any]:
    """`rollout_worker` and `weight_transfer` for `AsyncGRPOTrainer(..., **in_process_rollout(...))`; `kwargs`: those
    of `InProcessRolloutWorker` (train_dataset, reward_funcs, processing_class, args; groups_per_fill)."""
    worker = InProcessRolloutWorker(model, **kwargs)
    return {"rollout_worker": worker, "weight_transfer": InProcessWeightTransfer(worker)}
