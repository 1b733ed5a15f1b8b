"""A test stand-in: TRL's asynchronous GRPO trainer without vLLM and without a GPU, through an in-process rollout
worker. It is not part of up-trl (the package runs async GRPO only with vLLM on a CUDA GPU, as TRL does); the tests
use it to train `UPAsyncGRPOTrainer` on CPU, as TRL's own tests keep their stubs.

`AsyncGRPOTrainer` takes a `rollout_worker` (TRL's `RolloutWorkerProtocol`) and a `weight_transfer`
(`WeightTransferProtocol`). `InProcessRolloutWorker` plays the vLLM server's part: it holds its OWN copy of the policy
(loaded from the same checkpoint, attention "sdpa"), samples each group with transformers `generate`, records the
sampler's log-probabilities of the sampled tokens as `old_log_probs`,

    old_log_probs_t = log softmax(processed_logits_t)[y_t] = log softmax(logits_t / temperature)[y_t]
                      (the second form when no top_k / top_p / min_p / repetition_penalty is set)

which is what `trl vllm-serve` returns (it starts vLLM with `--logprobs-mode processed_logprobs`),

scores the group with TRL's own `_AsyncRolloutLoop._score_group` (same rewards, advantages, metrics and
`RolloutSample` format as the vLLM worker), and queues the samples tagged with its policy version. Its reward
functions are wrapped by `unscorable.record_scorable`, so it also logs `up/unscorable_frac` (TRL's worker cannot).
`InProcessWeightTransfer` refreshes the copy when the trainer syncs (every `weight_sync_steps` optimizer steps), so
the policy being trained drifts away from the one that sampled: pi_old != pi_theta, as with vLLM.

What differs from TRL's worker: generation runs on demand in the trainer's thread (when the trainer asks for a sample
and the queue is empty it generates `groups_per_fill` groups), with a per-group seed. That makes runs reproducible
(two trainers see identical rollouts) while the staleness stays real: a group generated just before a sync is
trained after it, and with `groups_per_fill > 1` groups wait several optimizer steps. Single-turn, conversational
prompts only; no tools or environments (use TRL's worker with vLLM for those).

`async_grpo_on_cpu()` covers the two CUDA-only lines the trainer's constructor runs (see its docstring).

The worker scores with TRL's `_AsyncRolloutLoop._score_group` (a TRL change there shows in tests/test_async_grpo.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import torch
from transformers import AutoModelForCausalLM, PreTrainedTokenizerBase
from tree_attention import register_reference_tree_attention
from trl.experimental.async_grpo import AsyncGRPOConfig
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
    """While constructing an `AsyncGRPOTrainer` on a machine without CUDA (the tests), replace its two CUDA-only
    calls:

    - `packing.register_tree_attention()` registers the FA3 kernel (fetched from the Hub, CUDA only) for the packed
      forward: register `tree_attention.tree_attention_reference` under the same name instead;
    - `get_peak_flops_per_device` calls `torch.cuda.get_device_name` (trl/trainer/utils.py), which raises "Torch not
      compiled with CUDA enabled": return None, which TRL itself reads as "MFU metrics disabled".
    """
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
    """TRL's `RolloutWorkerProtocol` without vLLM: samples from an in-process copy of the policy.

    Args:
        model: the checkpoint the trainer loads (a path); the worker loads its own copy from it.
        train_dataset: rows with a conversational `"prompt"`; other columns go to the reward functions.
        reward_funcs: TRL reward functions (summed; None means unscorable, as in TRL).
        processing_class: the tokenizer (its chat template renders the prompts).
        args: the trainer's `AsyncGRPOConfig` (num_generations, max_completion_length, sampling settings, seed).
        groups_per_fill: groups generated each time the queue runs dry (more = staler samples).
    """

    def __init__(
        self,
        model: str,
        *,
        train_dataset,
        reward_funcs: Callable | list[Callable],
        processing_class: PreTrainedTokenizerBase,
        args: AsyncGRPOConfig,
        groups_per_fill: int = 1,
    ):
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
        self._scorer = SimpleNamespace(
            reward_funcs=reward_funcs,
            reward_func_names=[get_callable_name(f) for f in reward_funcs],
            _env_reward_types=[],
            _provides_rollout_reward=False,
        )
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
        args, n = self.args, self.args.num_generations
        prompt_ids = self.tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, return_dict=False, **(args.chat_template_kwargs or {})
        )
        t0 = time.monotonic()
        input_ids = torch.tensor([prompt_ids] * n, device=self.sampler.device)
        with torch.random.fork_rng(devices=[]):  # a per-group seed: reproducible, and leaves the trainer's RNG alone
            torch.manual_seed(args.seed + group_id)
            out = self.sampler.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                do_sample=True,
                max_new_tokens=args.max_completion_length,
                temperature=args.temperature,
                top_k=args.top_k,
                top_p=args.top_p,
                min_p=args.min_p,
                repetition_penalty=args.repetition_penalty,
                eos_token_id=self.eos_token_ids,
                pad_token_id=self.tokenizer.pad_token_id,
                output_scores=True,  # the logits after temperature and filtering: vLLM's processed logprobs
                return_dict_in_generate=True,
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
            sequences.append(
                [
                    TrainingSequence(
                        input_ids=prompt_ids + ids,
                        completion_mask=[0] * len(prompt_ids) + [1] * length,
                        old_log_probs=[0.0] * len(prompt_ids) + logps[i, :length].tolist(),
                        rollout_id=f"{group_id}-{i}",
                    )
                ]
            )
        group = RolloutGroup(
            prompts=[prompt] * n,
            reward_kwargs={k: [v] * n for k, v in row.items() if k not in {"prompt", "completion", "completion_ids"}},
            completions=completions,
            completions_ids=completions_ids,
            completions_sequences=sequences,
            tool_call_counts=[0] * n,
            tool_failure_counts=[0] * n,
            model_version=self.model_version,
            group_id=group_id,
            env_rewards=[None] * n,
            rollout_rewards=[None] * n,
        )
        samples = asyncio.run(_AsyncRolloutLoop._score_group(self._scorer, group))
        eos_and_pad = (*self.eos_token_ids, self.tokenizer.pad_token_id)
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
    """TRL's `WeightTransferProtocol` for `InProcessRolloutWorker`: a sync copies the trainer's weights into its
    sampler (TRL calls it on train begin and every `weight_sync_steps` optimizer steps)."""

    def __init__(self, worker: InProcessRolloutWorker):
        self.worker = worker

    def init_weight_transfer(self) -> None:
        pass

    def pause(self) -> None:
        pass

    def send_weights(self, iterator: Iterator[tuple[str, torch.Tensor]]) -> None:
        self.worker.load_weights(iterator)

    def resume(self) -> None:
        pass

    def destroy(self) -> None:
        pass


def in_process_rollout(
    model: str, *, train_dataset, reward_funcs, processing_class, args: AsyncGRPOConfig, groups_per_fill: int = 1
) -> dict[str, Any]:
    """`rollout_worker` and `weight_transfer` for `AsyncGRPOTrainer(..., **in_process_rollout(...))`."""
    worker = InProcessRolloutWorker(
        model,
        train_dataset=train_dataset,
        reward_funcs=reward_funcs,
        processing_class=processing_class,
        args=args,
        groups_per_fill=groups_per_fill,
    )
    return {"rollout_worker": worker, "weight_transfer": InProcessWeightTransfer(worker)}
