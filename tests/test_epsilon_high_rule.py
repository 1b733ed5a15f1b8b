"""Under UP epsilon_high acts only through the dual clip, for A < 0, when delta < 1 + epsilon_high."""

import math
from pathlib import Path

import pytest
import torch
import yaml

from up_trl.cli.catalog import recipe_path
from up_trl.objective.paper_losses import clipped_surrogate_loss, up_per_token_loss

R = torch.linspace(0.305, 4.005, 371)  # the ratio r = pi_theta / pi_old, never exactly on a clip boundary
RECIPES = Path(recipe_path("up_dapo")).parent  # the packaged recipes
PAPER = ["dapo", "grpo", "gspo", "grpo_vl"]


@pytest.mark.parametrize("delta", [None, 1.1, 1.5, 3.0])
@pytest.mark.parametrize("epsilon_high", [0.0, 0.28, 1.0, 2.5])
def test_negative_advantage_loss_is_one_clip_at_max_of_delta_and_one_plus_epsilon_high(delta, epsilon_high):
    r = R.clone().unsqueeze(0).requires_grad_(True)
    loss = clipped_surrogate_loss(r, torch.tensor([-0.7]), epsilon_low=0.2, epsilon_high=epsilon_high, delta=delta)
    loss.sum().backward()
    cap = max(math.inf if delta is None else delta, 1 + epsilon_high)
    torch.testing.assert_close(loss.detach(), 0.7 * R.clamp(0.8, cap).unsqueeze(0))
    inside = (R > 0.8) & (R < cap)  # the gradient flows only between the two caps
    torch.testing.assert_close(r.grad, torch.where(inside, 0.7, 0.0).unsqueeze(0))


def _up_loss_and_grad(epsilon_high, delta):
    old = torch.full((2, R.numel()), -3.0)
    logps = (old + R.log()).requires_grad_(True)  # both rows sweep r; row 0 has A > 0, row 1 A < 0
    band = dict(epsilon_low=0.2, epsilon_high=epsilon_high, delta=delta)
    loss = up_per_token_loss(logps, old, torch.tensor([1.3, -0.7]), torch.ones_like(old), **band)
    loss.sum().backward()
    return loss.detach(), logps.grad


@pytest.mark.parametrize("delta", [None, 1.1, 1.5, 3.0])
@pytest.mark.parametrize("epsilon_high", [0.05, 0.28, 1.0, 2.5])
def test_under_up_epsilon_high_acts_only_when_delta_is_below_one_plus_epsilon_high(delta, epsilon_high):
    loss, grad = _up_loss_and_grad(epsilon_high, delta)
    reference_loss, reference_grad = _up_loss_and_grad(0.0, delta)  # eps_high = 0: the tightest clip-higher
    acts = delta is not None and delta < 1 + epsilon_high
    assert (torch.equal(loss, reference_loss) and torch.equal(grad, reference_grad)) == (not acts)
    assert torch.equal(loss[0], reference_loss[0]) and torch.equal(grad[0], reference_grad[0])  # A > 0: never


@pytest.mark.parametrize("name", PAPER)
def test_paper_recipes_use_the_authors_dual_clip(name):
    for recipe in (f"up_{name}.yaml", f"{name}.yaml"):  # the UP recipe and its baseline twin
        text = (RECIPES / recipe).read_text()
        config = yaml.safe_load(text)
        assert config["delta"] == 3.0, recipe
        assert "clip_ratio_c = 3.0" in next(line for line in text.splitlines() if line.startswith("delta:"))
        # Under UP, eps_high then acts on no token: the recipe's eps_high is for its baseline twin.
        assert config["delta"] >= 1 + config.get("epsilon_high", config.get("epsilon", 0.2))


def test_quickstart_keeps_its_values():
    assert "delta" not in yaml.safe_load((RECIPES / "quickstart.yaml").read_text())
