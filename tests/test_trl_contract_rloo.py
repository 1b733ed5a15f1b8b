"""The lines of TRL's RLOOTrainer that UP relies on, and why (pinned whole in `test_trl_pins.py`)."""

import inspect

import pytest
from trl import RLOOTrainer

COMPUTE_LOSS = inspect.getsource(RLOOTrainer._compute_loss)

RELIED_ON = [
    # the policy forward hands pi_theta to UP's anchor (through the method, so the hook sees it), then old_logps is
    # read: UPRLOOTrainer's anchor sums the per-token log-probs with the parent's own line
    "per_token_logps, entropies, aux_loss = self._get_per_token_logps_and_entropies(",
    "logps = (per_token_logps * completion_mask).sum(1)",
    'old_logps = inputs["old_logps"]',
    # old_logps' one use: log r, so the anchored sequences get r = r~ (value 1, inside the band, never clipped)
    "log_ratio = logps - old_logps",
    "coef_1 = torch.exp(log_ratio)",
    "coef_2 = torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)",
    "per_sequence_loss = -torch.min(per_sequence_loss1, per_sequence_loss2)",
    "is_high_clipped = (coef_1 > 1 + self.epsilon_high) & (advantages > 0)",
]


@pytest.mark.parametrize("line", RELIED_ON)
def test_rloo_compute_loss_still_has(line):
    assert line in COMPUTE_LOSS, f"TRL's RLOOTrainer._compute_loss no longer contains: {line}"


def test_one_policy_forward_per_loss_and_unscaled_loss():
    # One forward, before old_logps is read, and old_logps read once: the anchor sees the pi_theta the loss uses.
    assert COMPUTE_LOSS.count("self._get_per_token_logps_and_entropies(") == 1
    assert COMPUTE_LOSS.index("self._get_per_token_logps_and_entropies(") < COMPUTE_LOSS.index('inputs["old_logps"]')
    code = [line.strip() for line in COMPUTE_LOSS.splitlines() if not line.strip().startswith("#")]
    assert [line for line in code if "old_logps" in line] == RELIED_ON[2:4]
    # RLOO returns an unscaled loss (the HF Trainer divides by gradient accumulation): UP's term is not scaled either.
    assert RLOOTrainer.loss_is_scaled_for_ga is False
    for name in ("_compute_loss", "_get_per_token_logps_and_entropies", "create_model_card"):
        assert hasattr(RLOOTrainer, name), name


def test_old_logps_are_stale_only_when_a_generation_outlives_an_optimizer_step():
    # UPRLOOTrainer.up_is_off_policy: old_logps computed at generation by the policy being trained (no sampler-side
    # log-probs), a generation serving steps_per_generation * num_iterations micro-steps.
    generate = inspect.getsource(RLOOTrainer._generate_and_score_completions)
    assert "old_logps = (old_per_token_logps * completion_mask).sum(1)" in generate
    assert "importance_sampling" not in generate
    prepare = inspect.getsource(RLOOTrainer._prepare_inputs)
    assert "generate_every = self.args.steps_per_generation * self.num_iterations" in prepare
    assert "if self._step % generate_every == 0 or self._buffered_inputs is None:" in prepare
