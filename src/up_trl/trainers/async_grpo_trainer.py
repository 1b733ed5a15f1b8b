"""UPAsyncGRPOTrainer: TRL's asynchronous GRPO trainer (`trl.experimental.async_grpo`) with UP's objective.

Where async GRPO is off-policy: a background worker samples from a vLLM copy of the policy that is refreshed every
`weight_sync_steps` optimizer steps, and a sample may be trained up to `max_staleness` policy versions later. So
pi_old (`old_log_probs`, the sampler's log-probabilities) differs from pi_theta on every step, and the clip
withholds probability capacity from positive tokens all the time, not only when a batch is reused.

Why this one override is not the substitution GRPO and RLOO use (pi_old := sg(pi_theta) on the routed entries): the
parent's `compute_loss` (TRL 1.16, one ~130-line method with the forward inline) copies `old_log_probs` out of the
batch *before* its forward, so no hook can anchor it to pi_theta. It reads the advantages from the packed batch it is
handed (`inputs["advantages"][selected]`), forwards `model(...)` once, then

    L_parent = sum_t -min(r_t A_t, clip(r_t, 1 - eps_low, 1 + eps_high) A_t) / max(1, N / world) / GA  (+ MoE aux)

over the M trained tokens of the row (N: trained tokens of the micro-batch over all ranks). So, with no line of it
copied:

1. the parent computes everything (forward, loss, aux loss, metrics, timing) on a copy of the batch whose routed
   advantages are zeroed, so its clipped term vanishes exactly there (value 0, gradient 0);
2. a forward hook on the model records the per-position log-probabilities of that same forward (no second forward);
3. UP adds sum_{routed t} -A_t * exp(logp_t - sg(logp_t)) through the same normalisation
   (`losses.packed_token_sum_loss`), and logs the `up/*` metrics as (numerator, denominator) rates.

The two terms touch disjoint tokens, so loss and gradient are exact; `tests/test_async_grpo.py` checks both against
a closed form, checks `up_mode="off"` against the parent bit for bit, and pins the lines of `compute_loss` this
relies on. As under GRPO and RLOO, the parent's `clip_ratio/*` count only what was clipped: routed tokens never are;
`up/would_clip_frac` says how many positive tokens the clip would have stopped.

On a machine without CUDA the trainer registers `tree_attention.tree_attention_reference` in place of the FA3 kernel
and skips TRL's CUDA-only peak-FLOPs probe (`async_rollout.async_grpo_on_cpu`); vLLM is replaced by passing
`rollout_worker` / `weight_transfer` from `async_rollout.in_process_rollout`.
Its `__init__` and `compute_loss` are pinned whole in `tests/trl_pins.json` ('objective' pins).
"""

from __future__ import annotations

import torch
from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer
from trl.trainer.utils import get_callable_name

from ..objective.guards import is_rare
from ..objective.losses import packed_token_sum_loss, self_anchored_ratio, up_routes
from .async_grpo_config import UPAsyncGRPOConfig
from .async_rollout import async_grpo_on_cpu
from .shared import UPTrainerMixin, default_output_dir


class UPAsyncGRPOTrainer(UPTrainerMixin, AsyncGRPOTrainer):
    """A drop-in replacement for `trl.experimental.async_grpo.AsyncGRPOTrainer` that trains with UP (arXiv 2607.06987).

    Takes exactly AsyncGRPOTrainer's arguments; `args` may be a `UPAsyncGRPOConfig` (for `up_mode`) or a plain
    `AsyncGRPOConfig` (then `up_mode="asymmetric"`).

    Example (GPUs, with `trl vllm-serve --model Qwen/Qwen3-0.6B` running):
    ```python
    from up_trl import UPAsyncGRPOConfig, UPAsyncGRPOTrainer
    args = UPAsyncGRPOConfig(output_dir="out", epsilon_high=0.28, max_staleness=4, weight_sync_steps=1)
    trainer = UPAsyncGRPOTrainer(model="Qwen/Qwen3-0.6B", reward_funcs=my_reward, args=args, train_dataset=ds)
    trainer.train()
    ```
    Without vLLM (CPU, tests): pass `**in_process_rollout(...)` from `up_trl.trainers.async_rollout`.
    """

    _tag_names = ["trl", "async-grpo", "up"]
    _name = "UP-AsyncGRPO"
    up_parent_objective = "GRPO (async)"

    def __init__(self, model: str, reward_funcs=None, args: AsyncGRPOConfig | None = None, *pargs, **kwargs):
        args = UPAsyncGRPOConfig(default_output_dir(model, "-UP-AsyncGRPO")) if args is None else args
        self._read_up_args(args)
        # GRPOTrainer's attribute, which the parent (scoring in its rollout worker) lacks: the model card names them.
        funcs = reward_funcs if isinstance(reward_funcs, list) else [reward_funcs] if reward_funcs is not None else []
        self.reward_func_names = [f if isinstance(f, str) else get_callable_name(f) for f in funcs]
        if torch.cuda.is_available() and not args.use_cpu:
            super().__init__(model, reward_funcs, args, *pargs, **kwargs)
        else:  # no FA3 kernel and no CUDA device: the pure-PyTorch tree attention, no peak-FLOPs probe
            with async_grpo_on_cpu():
                super().__init__(model, reward_funcs, args, *pargs, **kwargs)
        self._finish_up_init(
            "with max_staleness=0 and weight_sync_steps=1 every trained sample was generated by the weights being "
            "trained, so pi_theta/pi_old = 1 (up to the sampler's numerical mismatch).",
            "raise max_staleness or weight_sync_steps.",
        )

    @property
    def up_is_off_policy(self) -> bool:
        """False only when every trained sample comes from the current weights: max_staleness=0 (older samples are
        dropped) and a weight sync after every optimizer step."""
        return self.args.max_staleness > 0 or self.args.weight_sync_steps > 1

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        routes = up_routes(inputs["advantages"], self.up_mode)
        if self.up_positive_min_prob is not None:  # the rare clip: tokens rare when sampled keep the parent's clip
            routes = routes & ~is_rare(inputs["old_log_probs"], self.up_positive_min_prob)
        zeroed = {**inputs, "advantages": inputs["advantages"].masked_fill(routes, 0)}  # a copy, never the batch
        parent_inputs = inputs if self.up_mode == "off" else zeroed
        seen = {}  # the per-position log-probs of the parent's own forward, recorded by a hook (no second forward)
        hook = model.register_forward_hook(lambda module, args, out: seen.__setitem__("log_probs", out.log_probs))
        try:
            loss = super().compute_loss(model, parent_inputs, return_outputs, num_items_in_batch)
        finally:
            hook.remove()

        selected = inputs["token_index"] >= 0  # the parent's own selection of this row's trained tokens
        log_probs = seen["log_probs"].flatten()[inputs["token_index"][selected]]
        old_log_probs, advantages = inputs["old_log_probs"][selected], inputs["advantages"][selected]
        if self.up_mode != "off":
            anchored = -advantages * self_anchored_ratio(log_probs, torch.ones_like(log_probs))
            loss = loss + packed_token_sum_loss(
                torch.where(routes[selected], anchored, 0.0),
                inputs["global_n_tokens"][0],
                self.accelerator.num_processes,
                self.current_gradient_accumulation_steps,
            )
        log_probs = log_probs.detach()
        mask = torch.ones_like(log_probs)
        self._log_up_metrics(log_probs, old_log_probs, advantages, mask, log_probs - old_log_probs, "train")
        return loss

    @staticmethod
    def _up_rate(num: float, den: float) -> tuple[float, float]:
        """(numerator, denominator): the parent's `log` reduces a window of tuples exactly (sum / sum)."""
        return num, den
