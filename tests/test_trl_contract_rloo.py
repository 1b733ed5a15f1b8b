"""The lines of TRL's RLOOTrainer that UPRLOOTrainer relies on, and why: the whole methods are pinned in
`test_trl_pins.py` (any change fails there); these name what to re-check when that happens."""

import inspect

import pytest
from trl import RLOOTrainer

COMPUTE_LOSS = inspect.getsource(RLOOTrainer._compute_loss)

RELIED_ON = [
    # the parent reads the advantages UP zeroes from the batch it is handed
    'advantages = inputs["advantages"]',
    # the policy forward the override records (through the method, so the hook sees it)
    "per_token_logps, entropies, aux_loss = self._get_per_token_logps_and_entropies(",
    # UPRLOOTrainer recomputes the summed log-prob with this line, and reads old_logps as the parent does
    "logps = (per_token_logps * completion_mask).sum(1)",
    'old_logps = inputs["old_logps"]',
    "log_ratio = logps - old_logps",
    # the clipped term that vanishes where the advantage is zeroed, and the normalisation UP's term shares
    "coef_1 = torch.exp(log_ratio)",
    "coef_2 = torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)",
    "per_sequence_loss = -torch.min(per_sequence_loss1, per_sequence_loss2)",
    "loss = per_sequence_loss.mean()",
    # clip_ratio/*: UPTrainerMixin._recount_clip_ratios (glue) overwrites the one value each line appends
    "is_low_clipped = (coef_1 < 1 - self.epsilon_low) & (advantages < 0)",
    "is_high_clipped = (coef_1 > 1 + self.epsilon_high) & (advantages > 0)",
    'self._metrics[mode]["clip_ratio/low_mean"].append(gathered_low_clip.nanmean().item())',
    'self._metrics[mode]["clip_ratio/low_min"].append(nanmin(gathered_low_clip).item())',
    'self._metrics[mode]["clip_ratio/high_mean"].append(gathered_high_clip.nanmean().item())',
    'self._metrics[mode]["clip_ratio/high_max"].append(nanmax(gathered_high_clip).item())',
    'self._metrics[mode]["clip_ratio/region_mean"].append(gathered_clip_ratio.nanmean().item())',
]


@pytest.mark.parametrize("line", RELIED_ON)
def test_rloo_compute_loss_still_has(line):
    assert line in COMPUTE_LOSS, f"TRL's RLOOTrainer._compute_loss no longer contains: {line}"


def test_one_policy_forward_per_loss_and_unscaled_loss():
    # The hook keeps the last forward: there must be exactly one inside _compute_loss.
    assert COMPUTE_LOSS.count("self._get_per_token_logps_and_entropies(") == 1
    # RLOO returns an unscaled loss (the HF Trainer divides by gradient accumulation): UP's term is not scaled either.
    assert RLOOTrainer.loss_is_scaled_for_ga is False
    for name in ("_compute_loss", "_get_per_token_logps_and_entropies", "create_model_card"):
        assert hasattr(RLOOTrainer, name), name


def test_old_logps_are_stale_only_when_a_generation_outlives_an_optimizer_step():
    # UPRLOOTrainer.up_is_off_policy: old_logps are always computed at generation, by the policy being trained
    # (no sampler-side log-probs, no importance-sampling correction), and a generation serves
    # steps_per_generation * num_iterations micro-steps.
    generate = inspect.getsource(RLOOTrainer._generate_and_score_completions)
    assert "old_logps = (old_per_token_logps * completion_mask).sum(1)" in generate
    assert "importance_sampling" not in generate
    prepare = inspect.getsource(RLOOTrainer._prepare_inputs)
    assert "generate_every = self.args.steps_per_generation * self.num_iterations" in prepare
    assert "if self._step % generate_every == 0 or self._buffered_inputs is None:" in prepare
