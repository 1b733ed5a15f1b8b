"""UPAsyncGRPOTrainer: TRL's asynchronous GRPO trainer (`trl.experimental.async_grpo`) with UP's objective.

Where async GRPO is off-policy: a background worker samples from a vLLM copy of the policy that is refreshed every
`weight_sync_steps` optimizer steps, and a sample may be trained up to `max_staleness` policy versions later. So
pi_old (`old_log_probs`, the sampler's log-probabilities) differs from pi_theta on every step, and the clip
withholds probability capacity from positive tokens all the time, not only when a batch is reused.

The seam (TRL 1.16, `AsyncGRPOTrainer.compute_loss`, one ~130-line method with the forward inline). It reads the
advantages from the packed batch it is handed (`inputs["advantages"][selected]`), forwards `model(...)` once, then

    L_parent = sum_t -min(r_t A_t, clip(r_t, 1 - eps_low, 1 + eps_high) A_t) / max(1, N / world) / GA  (+ MoE aux)

over the M trained tokens of the row (N: trained tokens of the micro-batch over all ranks). So, as
`UPGRPOTrainer` does for GRPO, no line of it is copied:

1. the parent computes everything (forward, loss, aux loss, metrics, timing) on a copy of the batch whose routed
   advantages are zeroed, so its clipped term vanishes exactly there (value 0, gradient 0);
2. a forward hook on the model records the per-position log-probabilities of that same forward (no second forward);
3. UP adds sum_{routed t} -A_t * exp(logp_t - sg(logp_t)) through the same normalisation
   (`losses.packed_token_sum_loss`), and logs the `up/*` metrics as (numerator, denominator) rates.

The two terms touch disjoint tokens, so loss and gradient are exact; `tests/test_async_grpo.py` checks both against
a closed form, checks `up_mode="off"` against the parent bit for bit, and pins the lines of `compute_loss` this
relies on. Side effect of step 1: the parent's `clip_ratio/high_mean` counts only tokens still under the clip
(routed tokens have no clip); `up/would_clip_frac` says how many positive tokens the clip would have stopped.

On a machine without CUDA the trainer registers `tree_attention.tree_attention_reference` in place of the FA3 kernel
and skips TRL's CUDA-only peak-FLOPs probe (`async_rollout.async_grpo_on_cpu`); vLLM is replaced by passing
`rollout_worker` / `weight_transfer` from `async_rollout.in_process_rollout`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer
from trl.trainer.utils import get_callable_name

from .async_rollout import async_grpo_on_cpu
from .glue import UPConfigMixin, UPTrainerMixin, default_output_dir, route_batch
from .guards import is_rare, up_positive_branch_loss
from .losses import packed_token_sum_loss, up_positive_token_sums


@dataclass
class UPAsyncGRPOConfig(UPConfigMixin, AsyncGRPOConfig):
    r"""AsyncGRPOConfig for [`UPAsyncGRPOTrainer`]. Every AsyncGRPOConfig argument keeps its meaning; the UP fields
    are [`glue.UPConfigMixin`]'s.

    Under `up_mode="asymmetric"`, tokens with a positive advantage use the self-anchored ratio pi_theta/sg(pi_theta),
    never clipped; the others keep the parent's clipped objective (`epsilon`, `epsilon_high`). pi_old is the
    sampler's (`old_log_probs`), up to `max_staleness` policy versions old.
    """


class UPAsyncGRPOTrainer(UPTrainerMixin, AsyncGRPOTrainer):
    """A drop-in replacement for `trl.experimental.async_grpo.AsyncGRPOTrainer` that trains with UP (arXiv 2607.06987).

    Takes exactly AsyncGRPOTrainer's arguments; `args` may be a [`UPAsyncGRPOConfig`] (for `up_mode`) or a plain
    `AsyncGRPOConfig` (then `up_mode="asymmetric"`).

    Example (GPUs, with `trl vllm-serve --model Qwen/Qwen3-0.6B` running):
    ```python
    from up_trl import UPAsyncGRPOConfig, UPAsyncGRPOTrainer
    args = UPAsyncGRPOConfig(output_dir="out", epsilon_high=0.28, max_staleness=4, weight_sync_steps=1)
    trainer = UPAsyncGRPOTrainer(model="Qwen/Qwen3-0.6B", reward_funcs=my_reward, args=args, train_dataset=ds)
    trainer.train()
    ```
    Without vLLM (CPU, tests): pass `**in_process_rollout(...)` from `up_trl.async_rollout`.
    """

    _tag_names = ["trl", "async-grpo", "up"]
    _name = "UP-AsyncGRPO"
    up_parent_objective = "GRPO (async)"
    up_supported_guards = ("up_positive_log_ratio_bound", "up_positive_min_prob")

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
        rare = None  # the rare-token guard (`up_positive_min_prob`): tokens rare when sampled keep the parent's clip
        if self.up_positive_min_prob is not None:
            rare = is_rare(inputs["old_log_probs"], self.up_positive_min_prob)
        routes, parent_inputs = route_batch(inputs, self.up_mode, rare)
        seen = {}  # the per-position log-probs of the parent's own forward, recorded by a hook (no second forward)
        hook = model.register_forward_hook(lambda module, args, out: seen.__setitem__("log_probs", out.log_probs))
        try:
            loss = super().compute_loss(model, parent_inputs, return_outputs, num_items_in_batch)
        finally:
            hook.remove()

        selected = inputs["token_index"] >= 0  # the parent's own selection of this row's trained tokens
        log_probs = seen["log_probs"].flatten()[inputs["token_index"][selected]]
        old_log_probs = inputs["old_log_probs"][selected]
        advantages = inputs["advantages"][selected]
        routes = routes[selected]
        if self.up_mode != "off":
            anchored = up_positive_branch_loss(
                log_probs, old_log_probs, advantages, torch.ones_like(log_probs), **self.up_guards
            )
            loss = loss + packed_token_sum_loss(
                torch.where(routes, anchored, 0.0),
                inputs["global_n_tokens"][0],
                self.accelerator.num_processes,
                self.current_gradient_accumulation_steps,
            )
        self._log_up_metrics(log_probs, old_log_probs, advantages)
        return loss

    @torch.no_grad()
    def _log_up_metrics(self, log_probs, old_log_probs, advantages):
        """`up/*` over this row's trained tokens, as (numerator, denominator) rates (see `_up_rate`)."""
        mask = torch.ones_like(log_probs)
        sums = up_positive_token_sums(
            log_probs, old_log_probs, advantages, mask, epsilon_high=self.epsilon_high, guard_bound=self.up_guard_bound
        )
        self._log_up_sums(sums, "train")
        self._log_indicators(log_probs, advantages, mask, log_probs - old_log_probs, "train")

    @staticmethod
    def _up_rate(num: float, den: float) -> tuple[float, float]:
        """(numerator, denominator): the parent's `log` reduces a window of tuples exactly (sum / sum)."""
        return num, den
