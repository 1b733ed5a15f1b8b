"""The lines of TRL's GRPOTrainer that UP relies on, and why (pinned whole in `test_trl_pins.py`)."""

import inspect
import re

import pytest
from trl import GRPOTrainer

from up_trl.trainers.grpo_config import CLIPPED_LOSS_TYPES, OTHER_LOSS_TYPES

COMPUTE_LOSS = inspect.getsource(GRPOTrainer._compute_loss)
FORWARD = "self._get_per_token_logps_and_entropies("
READ_OLD = 'old_per_token_logps = inputs.get("old_per_token_logps")'

# Each line is what UP's substitution (pi_old := sg(pi_theta) on the routed entries) relies on.
RELIED_ON = [
    # the policy forward hands pi_theta to UP's anchor (through the method, so the hook sees it), then pi_old is read
    FORWARD,
    READ_OLD,
    "old_per_token_logps = per_token_logps.detach() if old_per_token_logps is None else old_per_token_logps",
    # without vLLM the off-policy mask reads pi_old as the sampler's: UP passes the real one under this key
    'sampling_per_token_logps = inputs.get("sampling_per_token_logps", old_per_token_logps)',
    # pi_old's one use in the loss: log r, so the anchored entries get r = r~
    "log_ratio = per_token_logps - old_per_token_logps",
    # r~ = 1 lies inside the band; delta < 1 would clamp it (refused under UP, `grpo_config.check_up_compatible`)
    "coef_2 = torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)",
    "coef_1 = torch.clamp(coef_1, max=self.args.delta)",
    "per_token_loss = -torch.min(per_token_loss1, per_token_loss2)",
    # the KL's bias correction multiplies by the entry's ratio: r~ where UP anchors (docs/method.md)
    "per_token_kl = per_token_kl * coef_1",
    # the clip metrics count on the same ratio: anchored entries are never clipped (docs/method.md)
    "is_high_clipped = (coef_1 > 1 + self.epsilon_high) & (advantages > 0)",
]


@pytest.mark.parametrize("line", RELIED_ON)
def test_grpo_compute_loss_still_has(line):
    assert line in COMPUTE_LOSS, f"TRL's GRPOTrainer._compute_loss no longer contains: {line}"


def test_pi_old_is_read_after_the_one_policy_forward_and_only_through_log_r():
    assert COMPUTE_LOSS.count(FORWARD) == 1  # one forward: the anchor sees the pi_theta the loss uses
    assert COMPUTE_LOSS.index(FORWARD) < COMPUTE_LOSS.index(READ_OLD)
    assert COMPUTE_LOSS.count('inputs.get("old_per_token_logps")') == 1
    assert 'inputs["old_per_token_logps"]' not in COMPUTE_LOSS
    code = [line.strip() for line in COMPUTE_LOSS.splitlines() if not line.strip().startswith("#")]
    uses = [line for line in code if "old_per_token_logps" in line]
    assert uses == [READ_OLD, *RELIED_ON[2:5]], uses


def test_compute_loss_always_runs_compute_loss_liger_included():
    # No Liger branch in TRL 1.16's compute_loss: UP's `_compute_loss` sees every loss call with Liger on too.
    source = inspect.getsource(GRPOTrainer.compute_loss)
    assert "return self._compute_loss(model, inputs)" in source and "liger" not in source.lower()
    assert GRPOTrainer.loss_is_scaled_for_ga is True


def test_old_logps_are_stale_only_when_trl_says_so():
    # UPGRPOTrainer.up_is_off_policy is the first half of this condition. The second half (vLLM with its
    # importance-sampling correction) recomputes old_per_token_logps with the current weights: not stale.
    source = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    assert "generate_every = self.args.steps_per_generation * self.num_iterations" in source
    assert "if self.args.gradient_accumulation_steps % generate_every != 0 or (" in source
    assert "self.use_vllm and self.vllm_importance_sampling_correction" in source


def test_loss_type_lists_match_trl():
    named = set(re.findall(r"self\.loss_type (?:==|!=|in) \[?([^\]:]+)", COMPUTE_LOSS))
    every = {name for group in named for name in re.findall(r'"(\w+)"', group)}
    assert every == set(CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES)  # every objective the parent trains
    assert f"elif self.loss_type in {list(CLIPPED_LOSS_TYPES)}:".replace("'", '"') in COMPUTE_LOSS
