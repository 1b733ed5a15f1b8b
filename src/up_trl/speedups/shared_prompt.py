"""Each distinct prompt of a batch computed once: an opt-in CPU saving (`SharedPromptTrainerMixin`, a part in
`run.parts`; `up-trl train --share_prompt_prefix true`), not part of UP: the UP trainers never run this module.

GRPO and RLOO score `num_generations` completions of every prompt, and TRL's forward runs the whole
`[prompt | completion]` row for each. In a causal model the prompt's keys and values do not depend on the
completion, so they are computed once per distinct prompt and shared:

    prefill   the U distinct prompts, tokens 0 .. P-2            -> keys/values (U rows)
    share     row b takes the keys/values of its prompt          -> (B rows)  [an index: gradients add up per prompt]
    continue  token P-1 and the completion, with that cache      -> hidden states P-1 .. P+C-1, as in the full forward

With the full row's positions and mask, the log-probs are the full forward's up to float rounding. A call falls back
to the full rows where sharing would change the result or cannot work. No TRL import.
"""

from __future__ import annotations

import torch
import transformers
from packaging.version import Version
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

# The models' and `generate`'s cache argument: `cache` from transformers 5.24 (`past_key_values` deprecated there)
CACHE_ARGUMENT = "cache" if Version(transformers.__version__).release >= (5, 24) else "past_key_values"


def distinct_prompts(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(first, inverse): `first[u]`, the first row holding distinct prompt u, and `inverse[b]`, the prompt of row b.
    Two rows share a prompt when their (left-padded) ids and mask are equal.

    >>> ids = torch.tensor([[0, 5, 6], [7, 8, 9], [0, 5, 6]]); mask = torch.tensor([[0, 1, 1], [1, 1, 1], [0, 1, 1]])
    >>> first, inverse = distinct_prompts(ids, mask)
    >>> ids[first][inverse].equal(ids), len(first)
    (True, 2)
    """
    _, inverse = torch.unique(torch.cat([prompt_ids, prompt_mask.to(prompt_ids.dtype)], 1), dim=0, return_inverse=True)
    rows = torch.arange(len(inverse), device=inverse.device)
    first = torch.full((int(inverse.max()) + 1,), len(inverse), device=inverse.device)
    return first.scatter_reduce(0, inverse, rows, "amin"), inverse


def has_active_dropout(model) -> bool:
    """True when a module in training mode has a dropout of p > 0, or a rate it applies itself (`attn_pdrop`, ...):
    read from the modules, not the config, whose dropouts TRL's `disable_dropout=True` leaves as they are."""
    for module in model.modules():
        rates = [v for k, v in vars(module).items() if ("dropout" in k or "pdrop" in k) and isinstance(v, float)]
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            rates.append(module.p)
        if module.training and any(rate > 0 for rate in rates):
            return True
    return False


def shareable_cache(model) -> DynamicCache | None:
    """An empty `DynamicCache` for `model` when every layer is plain or sliding-window attention (rows can share it
    by index); None for linear-attention, hybrid and recurrent models, MoE router logits (their balancing loss would
    see the shortened rows) and active dropout (one mask per prompt would replace one per row)."""
    if getattr(model.config.get_text_config(), "output_router_logits", False) or has_active_dropout(model):
        return None
    if not getattr(model, "_supports_default_dynamic_cache", lambda: True)():  # RWKV, xLSTM: a state of their own
        return None
    cache = DynamicCache(config=model.config)
    plain = all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) for layer in cache.layers)
    return cache if plain and cache.layers else None


def shared_prompt_cache(
    model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, position_ids: torch.Tensor | None = None
) -> DynamicCache | None:
    """Tokens 0 .. P-2 of each distinct prompt prefilled once, then shared by index (row b: its prompt's keys and
    values); None where no prompt is shared, `shareable_cache` says no, or the model ignored the cache."""
    first, inverse = distinct_prompts(prompt_ids, prompt_mask)
    cache = shareable_cache(model) if len(first) < len(inverse) else None
    if cache is None:
        return None
    inputs = {"input_ids": prompt_ids[first, :-1], "attention_mask": prompt_mask[first, :-1], CACHE_ARGUMENT: cache}
    inputs |= {} if position_ids is None else {"position_ids": position_ids[first, :-1]}
    model(**inputs, use_cache=True, logits_to_keep=1)  # the prefill: its one-position logits are not used
    if cache.get_seq_length() != prompt_ids.size(1) - 1:
        return None
    cache.batch_select_indices(inverse)
    return cache


class SharedPromptForward:
    """`model` in TRL's `_get_per_token_logps_and_entropies`, each distinct prompt computed once; with other inputs
    (images), a one-token prompt or no shared prompt, it calls the model as TRL would."""

    def __init__(self, model, logits_to_keep: int):
        self.model, self.logits_to_keep = model, logits_to_keep
        self.calls = {"shared": 0, "full": 0}  # how often each path ran (tests read it)

    def __call__(self, *, input_ids, attention_mask, labels, fused_lm_head=False, **other):
        prompt_length = input_ids.size(1) - self.logits_to_keep
        cache = None
        if fused_lm_head and not other and prompt_length >= 2:
            cache = shared_prompt_cache(self.model, input_ids[:, :prompt_length], attention_mask[:, :prompt_length])
        if cache is None:
            self.calls["full"] += 1
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=fused_lm_head, **other
            )
        self.calls["shared"] += 1
        return self.model(
            input_ids=input_ids[:, prompt_length - 1 :],
            attention_mask=attention_mask,
            labels=labels[:, prompt_length - 1 :],
            fused_lm_head=True,
            **{CACHE_ARGUMENT: cache},
        )


class SharedPromptTrainerMixin:
    """For `class X(SharedPromptTrainerMixin, UPGRPOTrainer)` (or any GRPOTrainer, RLOOTrainer): the forwards of
    `_get_per_token_logps_and_entropies` get a `SharedPromptForward` where `shares_prompts`, else run untouched."""

    def shares_prompts(self, model, device: torch.device) -> bool:
        """On CPU, in one process (DDP, FSDP and DeepSpeed expect one forward per backward), and not where
        checkpointed layers recompute in the backward (they would drop the cache)."""
        if device.type != "cpu" or self.accelerator.num_processes != 1:
            return False
        if self.is_deepspeed_enabled or self.is_fsdp_enabled:
            return False
        unwrapped = self.accelerator.unwrap_model(model)
        checkpointing = getattr(unwrapped, "is_activation_checkpointing", None)  # transformers >= 5.23
        if checkpointing is None:  # the older name
            checkpointing = getattr(unwrapped, "is_gradient_checkpointing", False)
        return not (checkpointing and unwrapped.training and torch.is_grad_enabled())  # recomputed layers

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        """The next class's forward through `super()`, on the shared-prompt model where `shares_prompts`: UP's anchor
        (`UPSyncTrainerMixin`) reads its output either way."""
        if self.shares_prompts(model, input_ids.device):
            model = SharedPromptForward(model, logits_to_keep)
        return super()._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
        )


def _generation_setting(config, model, name: str):
    """A generation setting as `generate` will use it: the passed config's, else the model's own."""
    value = getattr(config, name, None)
    return getattr(model.generation_config, name, None) if value is None else value


def shared_prompt_generate(
    generate, model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs
):
    """`generate(input_ids=..., attention_mask=..., **kwargs)`, each distinct prompt's tokens 0 .. P-2 prefilled once
    into a cache the rows share (the same draws; logits equal to float rounding); no mask, the config's own cache, no
    cache, beams or returns > 1, extra inputs or a `shared_prompt_cache` refusal go to `generate` unchanged."""
    config = kwargs.get("generation_config")
    plain = (
        attention_mask is not None
        and input_ids.size(1) >= 2
        and set(kwargs) <= {"generation_config"}
        and config is not None
        and _generation_setting(config, model, "cache_implementation") in (None, "hybrid")  # "hybrid": unset by 5.x
        and _generation_setting(config, model, "use_cache") is not False
        and (_generation_setting(config, model, "num_beams") or 1) == 1  # unset fields read None in transformers 5
        and (_generation_setting(config, model, "num_return_sequences") or 1) == 1
    )
    cache = None
    if plain:
        position_ids = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)  # generate's rule
        cache = shared_prompt_cache(model, input_ids, attention_mask, position_ids)
    shared = {} if cache is None else {CACHE_ARGUMENT: cache}
    return generate(input_ids=input_ids, attention_mask=attention_mask, **shared, **kwargs)
