"""The lines of TRL's GRPOTrainer that UPGRPOTrainer relies on, and why: the whole methods are pinned in
`test_trl_pins.py` (any change fails there); these name what to re-check when that happens."""

import inspect
import re

import pytest
from trl import GRPOTrainer

COMPUTE_LOSS = inspect.getsource(GRPOTrainer._compute_loss)

# Each line is read by UP's override or mirrored by losses.py / UPGRPOTrainer._aggregate.
RELIED_ON = [
    # the parent reads the advantages UP zeroes from the batch it is handed
    'advantages = inputs["advantages"]',
    # the policy forward the override records (through the method, so the hook sees it)
    "self._get_per_token_logps_and_entropies(",
    "entropy_mask = self.get_high_entropy_mask(entropies, mask, 1 - self.top_entropy_quantile)",
    'old_per_token_logps = inputs.get("old_per_token_logps")',
    "old_per_token_logps = per_token_logps.detach() if old_per_token_logps is None else old_per_token_logps",
    'sampling_per_token_logps = inputs.get("sampling_per_token_logps", old_per_token_logps)',
    # losses.clipped_surrogate_loss mirrors these
    "coef_2 = torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)",
    "coef_1 = torch.clamp(coef_1, max=self.args.delta)",
    "per_token_loss = -torch.min(per_token_loss1, per_token_loss2)",
    # the multipliers UPGRPOTrainer._apply_token_weights mirrors, in this order
    "per_token_loss = per_token_loss * off_policy_mask",
    "per_token_loss = per_token_loss * entropy_mask",
    'per_token_loss = per_token_loss * inputs["importance_sampling_ratio"]',
    "per_token_loss = per_token_loss + self.beta * per_token_kl",
    # the normalisations losses.aggregate_loss mirrors
    "loss = ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()",
    "loss = (per_token_loss * mask).sum() / mask.sum().clamp(min=1.0)",
    "loss = (per_token_loss * mask).sum() / (per_token_loss.size(0) * self.max_completion_length)",
    'normalizer = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes',
    "normalizer = normalizer * self.current_gradient_accumulation_steps / self.args.steps_per_generation",
    "loss = (per_token_loss * mask).sum(-1).mean()",
    # the clip metrics UPTrainerMixin._recount_clip_ratios recounts on the real advantages (losses.clip_masks), on
    # the delta-capped coef_1, with the same reductions, replacing the one value the parent appended
    "is_low_clipped = (coef_1 < 1 - self.epsilon_low) & (advantages < 0)",
    "is_high_clipped = (coef_1 > 1 + self.epsilon_high) & (advantages > 0)",
    "is_region_clipped = is_low_clipped | is_high_clipped",
    'self._metrics[mode]["clip_ratio/low_mean"].append(global_masked_mean(is_low_clipped.float()))',
    'self._metrics[mode]["clip_ratio/high_mean"].append(global_masked_mean(is_high_clipped.float()))',
    'self._metrics[mode]["clip_ratio/region_mean"].append(global_masked_mean(is_region_clipped.float()))',
    'self._metrics[mode]["clip_ratio/low_min"].append(nanmin(gathered_low_clip).item())',
    'self._metrics[mode]["clip_ratio/high_max"].append(nanmax(gathered_high_clip).item())',
    "local_sum, local_count = x.sum(), torch.tensor(float(x.shape[0]), device=x.device)",
    "local_sum, local_count = (x * mask).sum(), mask.sum().float()",
    "return (x * mask).sum(-1) / mask.sum(-1)",
    # policy_loss is logged by the parent only with the entropy bonus: UP replaces that one value
    'self._metrics[mode]["policy_loss"].append(self.accelerator.gather(policy_loss).nanmean().item())',
]


@pytest.mark.parametrize("line", RELIED_ON)
def test_grpo_compute_loss_still_has(line):
    assert line in COMPUTE_LOSS, f"TRL's GRPOTrainer._compute_loss no longer contains: {line}"


def test_hooks_and_helpers_exist_with_expected_shape():
    for name in (
        "_compute_loss",
        "_get_per_token_logps_and_entropies",
        "get_high_entropy_mask",
        "get_off_policy_mask",
    ):
        assert hasattr(GRPOTrainer, name), name
    assert isinstance(inspect.getattr_static(GRPOTrainer, "get_off_policy_mask"), staticmethod)
    params = inspect.signature(GRPOTrainer.get_high_entropy_mask).parameters
    assert list(params) == ["self", "entropies", "mask", "threshold"]
    assert GRPOTrainer.loss_is_scaled_for_ga is True


def test_old_logps_are_stale_only_when_trl_says_so():
    # UPGRPOTrainer.up_is_off_policy is the first half of this condition. The second half (vLLM with its
    # importance-sampling correction) recomputes old_per_token_logps with the current weights: not stale.
    source = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    assert "generate_every = self.args.steps_per_generation * self.num_iterations" in source
    assert "if self.args.gradient_accumulation_steps % generate_every != 0 or (" in source
    assert "self.use_vllm and self.vllm_importance_sampling_correction" in source


def test_loss_type_lists_match_trl():
    from up_trl.objective.losses import GENERATION_BATCH_NORMALISED
    from up_trl.trainers.grpo_config import CLIPPED_LOSS_TYPES, OTHER_LOSS_TYPES

    named = set(re.findall(r"self\.loss_type (?:==|!=|in) \[?([^\]:]+)", COMPUTE_LOSS))
    every = {name for group in named for name in re.findall(r'"(\w+)"', group)}
    assert every == set(CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES)  # every objective the parent trains
    assert f"elif self.loss_type in {list(CLIPPED_LOSS_TYPES)}:".replace("'", '"') in COMPUTE_LOSS
    assert f"elif self.loss_type in {list(GENERATION_BATCH_NORMALISED)}:".replace("'", '"') in COMPUTE_LOSS
