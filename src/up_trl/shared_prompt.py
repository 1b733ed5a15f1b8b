"""Each distinct prompt of a forward batch computed once: `share_prompt_prefix`.

GRPO and RLOO score `num_generations` completions of every prompt, and TRL's forward runs the whole
`[prompt | completion]` row for each of them, so a prompt of P tokens is computed once per completion (in the
old-log-prob pass, the policy forward and its backward). In a causal model the prompt's keys and values do not
depend on the completion, so they can be computed once per distinct prompt and shared:

    prefill   the U distinct prompts, tokens 0 .. P-2            -> keys/values (U rows)
    share     row b takes the keys/values of its prompt          -> (B rows)  [an index: gradients add up per prompt]
    continue  token P-1 and the completion, with that cache      -> hidden states P-1 .. P+C-1, as in the full forward

The continuation sees the same positions (0 .. P+C-1, TRL's forward passes no position ids) and the same mask as the
full row, so the log-probs are the full forward's up to float rounding, and the gradient is the same sum. Token P-1
is re-run per row because its hidden state predicts the first completion token.

The model is called twice per chunk, so this is for a model that is not wrapped for data parallelism and does not
recompute layers in the backward (gradient checkpointing skips the cache); `glue.UPSyncTrainerMixin` decides where
it applies. No TRL import here.
"""

from __future__ import annotations

import inspect

import torch
from transformers import DynamicCache


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


def _cache_argument(model) -> str:
    """The name the model's forward takes its key/value cache under (`cache` since transformers 5.24)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


class SharedPromptForward:
    """Stands in for `model` in TRL's `_get_per_token_logps_and_entropies`: called as the model is there,
    `model(input_ids=..., attention_mask=..., labels=..., fused_lm_head=True)` with rows `[prompt | completion]` whose
    last `logits_to_keep` positions are the completion, it returns the same fused-head output (log-probs, entropy
    for the completion positions), computing each distinct prompt once. With other inputs (images, MoE router
    logits), a prompt of one token, or no prompt shared by two rows, it calls the model as TRL would."""

    def __init__(self, model, logits_to_keep: int):
        self.model = model
        self.logits_to_keep = logits_to_keep
        self.calls = {"shared": 0, "full": 0}  # how often each path ran (tests read it)

    def __call__(self, *, input_ids, attention_mask, labels, fused_lm_head=False, **other):
        prompt_length = input_ids.size(1) - self.logits_to_keep
        first, inverse = None, None
        if fused_lm_head and not other and prompt_length >= 2:
            first, inverse = distinct_prompts(input_ids[:, :prompt_length], attention_mask[:, :prompt_length])
        if first is None or len(first) == len(inverse):
            self.calls["full"] += 1
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=fused_lm_head, **other
            )
        self.calls["shared"] += 1
        cache = DynamicCache(config=self.model.config)
        cache_argument = _cache_argument(self.model)
        self.model(  # the prefill: fills `cache` for the distinct prompts; its one-position logits are not used
            input_ids=input_ids[first, : prompt_length - 1],
            attention_mask=attention_mask[first, : prompt_length - 1],
            use_cache=True,
            logits_to_keep=1,
            **{cache_argument: cache},
        )
        cache.batch_select_indices(inverse)
        return self.model(
            input_ids=input_ids[:, prompt_length - 1 :],
            attention_mask=attention_mask,
            labels=labels[:, prompt_length - 1 :],
            fused_lm_head=True,
            **{cache_argument: cache},
        )


def shared_prompt_generate(
    generate, model, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs
):
    """`generate(input_ids=..., attention_mask=..., **kwargs)` (the model's own `generate`) with each distinct prompt's
    tokens 0 .. P-2 prefilled once into a cache that the rows then share; `generate` itself runs from token P-1 on,
    so it samples exactly as before (the first step's logits differ from the full prefill's by float rounding only).
    The prefill takes the position ids `generate` gives a left-padded prompt (the mask's running count). Anything
    else (no mask, a cache already chosen, beams, several returns per prompt, extra model inputs, no shared prompt)
    goes to `generate` unchanged."""
    config = kwargs.get("generation_config")
    plain = (
        attention_mask is not None
        and input_ids.size(1) >= 2
        and set(kwargs) <= {"generation_config"}
        and config is not None
        and config.cache_implementation is None
        and (config.num_beams or 1) == 1  # unset fields read None in transformers 5
        and (config.num_return_sequences or 1) == 1
    )
    first, inverse = distinct_prompts(input_ids, attention_mask) if plain else (None, None)
    if first is None or len(first) == len(inverse):
        return generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    cache, cache_argument = DynamicCache(config=model.config), _cache_argument(model)
    position_ids = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)  # generate's own rule
    model(
        input_ids=input_ids[first, :-1],
        attention_mask=attention_mask[first, :-1],
        position_ids=position_ids[first, :-1],
        use_cache=True,
        logits_to_keep=1,
        **{cache_argument: cache},
    )
    cache.batch_select_indices(inverse)
    return generate(input_ids=input_ids, attention_mask=attention_mask, **{cache_argument: cache}, **kwargs)
