"""The UP equations as closed-form tables a reader can check by hand, and their gradient paths."""

import math

import pytest
import torch
from conftest import make_rloo_trainer, make_trainer

import up_trl.trainers.grpo_trainer
import up_trl.trainers.rloo_trainer
from up_trl import probability_capacity, self_anchored_ratio
from up_trl.objective.guards import rare_mask
from up_trl.objective.indicators import INDICATOR_METRICS, indicator_rates, leading_indicator_sums
from up_trl.objective.paper_losses import clipped_surrogate_loss, up_per_token_loss
from up_trl.objective.ratios import anchored_old_logps, log_importance_weights
from up_trl.objective.routing import up_routes

EPS = dict(epsilon_low=0.2, epsilon_high=0.28)


def logps(*probs):
    return torch.log(torch.tensor([list(probs)], dtype=torch.float64))


# r = pi_theta / pi_old on one token; expected per-token loss (A as given).
#   UP, A > 0:  -A * 1 (self-anchored);   parent, A > 0: -A * min(r, 1 + eps_high)
#   A < 0 (both): -min(r * A, clip(r, 0.8, 1.28) * A)
@pytest.mark.parametrize("pi, pi_old, adv, expected_up, expected_parent", [
    pytest.param(0.5, 0.25, 1.0, -1.0, -1.28, id="pos_ratio2_parent_clipped"),
    pytest.param(0.3, 0.25, 2.0, -2.0, -2.4, id="pos_ratio1.2_inside_band"),
    pytest.param(0.1, 0.2, 1.0, -1.0, -0.5, id="pos_ratio0.5_below_band"),
    pytest.param(0.1, 0.2, -1.0, 0.8, 0.8, id="neg_ratio0.5_clipped_low"),
    pytest.param(0.5, 0.25, -1.0, 2.0, 2.0, id="neg_ratio2_unclipped_high"),
    pytest.param(0.25, 0.25, 0.0, 0.0, 0.0, id="zero_advantage"),
])  # fmt: skip
def test_token_level_table(pi, pi_old, adv, expected_up, expected_parent):
    mask = torch.ones(1, 1)
    args = (logps(pi), logps(pi_old), torch.tensor([adv], dtype=torch.float64), mask)
    up = up_per_token_loss(*args, **EPS, up_mode="asymmetric")
    parent = up_per_token_loss(*args, **EPS, up_mode="off")
    assert up.item() == pytest.approx(expected_up, abs=1e-12)
    assert parent.item() == pytest.approx(expected_parent, abs=1e-12)


def test_both_mode_is_reinforce_for_every_sign():
    # "both": L = -A * r~ = -A for every token, whatever the ratio.
    loss = up_per_token_loss(
        logps(0.5, 0.1), logps(0.25, 0.2), torch.tensor([-1.5]), torch.ones(1, 2), **EPS, up_mode="both"
    )
    torch.testing.assert_close(loss, torch.tensor([[1.5, 1.5]], dtype=torch.float64))


def test_dual_clip_delta_caps_negative_ratio_only():
    # r = 4: A = -1 -> -min(min(4, 3) * -1, 1.28 * -1) = 3 with delta = 3 (4 without); A = +1 unaffected.
    logp, old = logps(0.8), logps(0.2)
    neg = up_per_token_loss(logp, old, torch.tensor([-1.0]), torch.ones(1, 1), **EPS, delta=3.0)
    neg_no_delta = up_per_token_loss(logp, old, torch.tensor([-1.0]), torch.ones(1, 1), **EPS)
    pos_parent = up_per_token_loss(logp, old, torch.tensor([1.0]), torch.ones(1, 1), **EPS, delta=3.0, up_mode="off")
    assert neg.item() == pytest.approx(3.0)
    assert neg_no_delta.item() == pytest.approx(4.0)
    assert pos_parent.item() == pytest.approx(-1.28)


def test_sequence_level_uses_geometric_mean_ratio():
    # log r per token = log 2, log 1 (mask 1, 1) and a padded token: mean = log(2)/2, r = sqrt(2) > 1.28.
    logp = logps(0.5, 0.3, 0.9)
    old = logps(0.25, 0.3, 0.1)
    mask = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64)
    parent = up_per_token_loss(
        logp, old, torch.tensor([1.0]), mask, **EPS, importance_sampling_level="sequence", up_mode="off"
    )
    up = up_per_token_loss(logp, old, torch.tensor([1.0]), mask, **EPS, importance_sampling_level="sequence")
    neg = up_per_token_loss(logp, old, torch.tensor([-1.0]), mask, **EPS, importance_sampling_level="sequence")
    assert parent.shape == (1, 1)
    assert parent.item() == pytest.approx(-1.28)
    assert up.item() == pytest.approx(-1.0)
    assert neg.item() == pytest.approx(math.sqrt(2))


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_positive_gradient_is_advantage_times_grad_logp_and_old_gets_none(level):
    logp = logps(0.5, 0.05, 0.7).requires_grad_(True)
    old = logps(0.25, 0.01, 0.7).requires_grad_(True)  # stale: r = 2, 5, 1 (the parent would clip two)
    mask = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64)
    adv = torch.tensor([0.7], dtype=torch.float64)
    loss = up_per_token_loss(logp, old, adv, mask, **EPS, importance_sampling_level=level)
    (loss * mask).sum().backward()
    # -A per active token: at sequence level, the (B, 1) loss counted once per active token, times the mean's 1/2.
    torch.testing.assert_close(logp.grad, torch.tensor([[-0.7, -0.7, 0.0]], dtype=torch.float64))
    assert old.grad is None or torch.count_nonzero(old.grad) == 0


def test_negative_branch_gradient_identical_to_parent():
    logp = logps(0.5, 0.1, 0.3).requires_grad_(True)
    old = logps(0.25, 0.2, 0.3)
    adv = torch.tensor([-1.3], dtype=torch.float64)
    mask = torch.ones(1, 3, dtype=torch.float64)
    up = up_per_token_loss(logp, old, adv, mask, **EPS, delta=1.5)
    (grad_up,) = torch.autograd.grad(up.sum(), logp)
    coef_1 = torch.exp(logp - old)
    parent = clipped_surrogate_loss(coef_1, adv, **EPS, delta=1.5)
    (grad_parent,) = torch.autograd.grad(parent.sum(), logp)
    assert torch.equal(up, parent)
    assert torch.equal(grad_up, grad_parent)
    # closed form: r = 2 -> delta caps at 1.5, gradient 0; r = 0.5 < 0.8 clipped, gradient 0; r = 1 -> -A * r
    torch.testing.assert_close(grad_parent, torch.tensor([[0.0, 0.0, 1.3]], dtype=torch.float64))


def test_self_anchored_ratio_value_and_gradient():
    logp = logps(0.5, 0.2).requires_grad_(True)
    r = self_anchored_ratio(logp, torch.ones(1, 2))
    assert torch.equal(r, torch.ones(1, 2, dtype=torch.float64))
    (grad,) = torch.autograd.grad(r.sum(), logp)
    torch.testing.assert_close(grad, torch.ones(1, 2, dtype=torch.float64))


def test_up_routes():
    adv = torch.tensor([1.0, 0.0, -2.0])
    assert up_routes(adv, "asymmetric").tolist() == [True, False, False]
    assert up_routes(adv, "both").tolist() == [True, True, True]
    assert up_routes(adv, "off").tolist() == [False, False, False]
    with pytest.raises(ValueError, match="up_mode"):
        up_routes(adv, "sideways")


@pytest.mark.parametrize("pi, pi_old, clipped, up", [
    pytest.param(0.01, 0.01, 0.0028, 0.99, id="rare_token_on_policy"),
    pytest.param(0.011, 0.01, 0.0018, 0.989, id="rare_token_moved"),
    pytest.param(0.9, 0.8, 0.1, 0.1, id="common_token_ceiling_1"),
    pytest.param(0.5, 0.3, 0.0, 0.5, id="past_the_clip_zero"),
])  # fmt: skip
def test_probability_capacity_table(pi, pi_old, clipped, up):
    # clipped: max(0, min(1, 1.28 * pi_old) - pi);  up: 1 - pi
    got_clipped = probability_capacity(logps(pi), logps(pi_old), epsilon_high=0.28)
    got_up = probability_capacity(logps(pi), rule="up")
    assert got_clipped.item() == pytest.approx(clipped, abs=1e-12)
    assert got_up.item() == pytest.approx(up, abs=1e-12)


def test_probability_capacity_needs_old_for_clipped_rule():
    with pytest.raises(ValueError, match="old_per_token_logps"):
        probability_capacity(logps(0.5))


@pytest.mark.parametrize("delta", [None, 3.0, 1.0], ids=["no_delta", "delta3", "delta1"])
@pytest.mark.parametrize("up_mode", ["asymmetric", "both"])
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_the_parents_loss_on_anchored_pi_old_is_up_in_value_and_gradient(level, up_mode, delta):
    # The trainers' way: the parent's clipped loss with pi_old := sg(pi_theta) where routed (r = r~, value 1, inside
    # every clamp) equals the paper's two branches (`up_per_token_loss`) to the last bit.
    logp = logps(0.5, 0.1, 0.3, 0.02).requires_grad_()
    old = logps(0.25, 0.2, 0.6, 0.01)
    adv = torch.tensor([[1.5, 1.5, -1.0, -1.0]], dtype=torch.float64)
    if level == "sequence":
        adv = torch.tensor([1.5], dtype=torch.float64) if up_mode == "asymmetric" else torch.tensor([-1.0]).double()
    mask = torch.ones(1, 4)
    routes = up_routes(adv.unsqueeze(1) if adv.dim() == 1 else adv, up_mode)
    anchored = anchored_old_logps(old, logp, routes)
    coef_1 = torch.exp(log_importance_weights(logp, anchored, mask, level))
    via_parent = clipped_surrogate_loss(coef_1, adv, **EPS, delta=delta)
    reference = up_per_token_loss(
        logp, old, adv, mask, **EPS, delta=delta, importance_sampling_level=level, up_mode=up_mode
    )
    (g_parent,) = torch.autograd.grad(via_parent.sum(), logp)
    (g_reference,) = torch.autograd.grad(reference.sum(), logp)
    assert torch.equal(via_parent, reference) and torch.equal(g_parent, g_reference)
    assert routes.any() and not torch.equal(
        reference,
        up_per_token_loss(logp, old, adv, mask, **EPS, delta=delta, importance_sampling_level=level, up_mode="off"),
    )


def test_anchoring_below_one_would_cancel_ups_gradient():
    # Why delta < 1 is refused under UP: TRL's clamp(r, max=delta) takes r~ = 1 to delta, with no gradient.
    logp = logps(0.5).requires_grad_()
    coef_1 = torch.exp(
        log_importance_weights(logp, anchored_old_logps(logps(0.1), logp, torch.tensor([[True]])), torch.ones(1, 1))
    )
    loss = clipped_surrogate_loss(coef_1, torch.tensor([1.0]), **EPS, delta=0.9)
    (grad,) = torch.autograd.grad(loss.sum(), logp)
    assert loss.item() == pytest.approx(-0.9) and grad.item() == 0.0


def test_no_guard_is_the_paper_objective_exactly():
    logp, old = logps(0.5, 0.1, 0.3), logps(0.25, 0.2, 0.3)
    adv = torch.tensor([[1.0, 2.0, -1.0]], dtype=torch.float64)
    mask = torch.ones(1, 3)
    plain = up_per_token_loss(logp, old, adv, mask, **EPS)
    anchored = -self_anchored_ratio(logp, mask) * adv
    assert torch.equal(plain[:, :2], anchored[:, :2])


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_rare_guard_keeps_the_parents_clip_on_positive_tokens_that_were_rare(level):
    # Token 0 was rare (pi_old 0.01 < 0.045): the parent's -A * min(r, 1.28) = -1.28 at r = 2; token 1 (pi_old 0.25,
    # r = 2) gets UP's -A. At sequence level the geometric-mean pi_old is 0.05: not below, so UP's branch.
    logp, old, mask = logps(0.02, 0.5).requires_grad_(), logps(0.01, 0.25), torch.ones(1, 2)
    loss = up_per_token_loss(
        logp, old, torch.tensor([1.0]), mask, **EPS, importance_sampling_level=level, positive_min_prob=0.045
    )
    loss.sum().backward()
    if level == "token":
        torch.testing.assert_close(loss.detach(), torch.tensor([[-1.28, -1.0]], dtype=torch.float64))
        torch.testing.assert_close(logp.grad, torch.tensor([[0.0, -1.0]], dtype=torch.float64))  # clipped: no grad
        assert rare_mask(old, mask, 0.045).tolist() == [[True, False]]
    else:
        torch.testing.assert_close(loss.detach(), torch.tensor([[-1.0]], dtype=torch.float64))
        assert rare_mask(old, mask, 0.045, "sequence").tolist() == [[False]]
        assert rare_mask(old, mask, 0.06, "sequence").tolist() == [[True]]


def values(*args, **kwargs):
    rates = indicator_rates(leading_indicator_sums(*args, **kwargs).tolist())
    return {k: (n / d if d else math.nan) for k, (n, d) in rates.items()}


def test_closed_form_on_a_token_table():
    # Tokens (log p, A, log r): (-1, +1, 0), (-2, -1, -0.5), (-3, -1, -0.1), and one padded token that must not count.
    logp = torch.tensor([[-1.0, -2.0, -3.0, -math.inf]])
    advantages = torch.tensor([[1.0, -1.0, -1.0, 5.0]])
    log_r = torch.tensor([[0.0, -0.5, -0.1, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    got = values(logp, advantages, mask, log_r, epsilon_low=0.2)
    # Cov = E[A log p] - E[A] E[log p] = (-1 + 2 + 3)/3 - (-1/3)(-6/3) = 4/3 - 2/3 = 2/3.
    assert got["up/logp_adv_cov"] == pytest.approx(2 / 3)
    assert (got["up/positive_tokens"], got["up/negative_tokens"]) == (1.0, 2.0)
    # Clipped negatives: r < 0.8 <=> log r < -0.223: only the second token (log r = -0.5).
    assert got["up/negative_clipped_log_ratio_mean"] == pytest.approx(-0.5)


def test_one_advantage_per_sequence_broadcasts_over_its_tokens():
    # GRPO's (B,) advantages as (B, 1) and GSPO's (B, 1) sequence log ratio, against (B, T) log-probs.
    logp = torch.tensor([[-1.0, -1.0], [-3.0, -3.0]])
    got = values(logp, torch.tensor([[1.0], [-1.0]]), torch.ones(2, 2), torch.tensor([[0.1], [-1.0]]), epsilon_low=0.2)
    assert got["up/logp_adv_cov"] == pytest.approx(1.0)  # E[A log p] = 1, E[A] = 0
    assert (got["up/positive_tokens"], got["up/negative_tokens"]) == (2.0, 2.0)
    assert got["up/negative_clipped_log_ratio_mean"] == pytest.approx(-1.0)  # the sequence's log r, on each token


def test_rloo_and_async_layout_is_one_entry_per_completion_or_token():
    got = values(torch.tensor([-1.0, -2.0]), torch.tensor([1.0, -1.0]), torch.ones(2), torch.zeros(2), epsilon_low=0.2)
    assert got["up/logp_adv_cov"] == pytest.approx(0.5)  # E[A log p] = 0.5, E[A] = 0
    assert math.isnan(got["up/negative_clipped_log_ratio_mean"])  # nothing clipped: no value, not 0


def test_sums_add_over_ranks_and_an_empty_batch_gives_no_value():
    def sums(logp, adv, log_r):
        return leading_indicator_sums(
            torch.tensor(logp), torch.tensor(adv), torch.ones(len(logp)), torch.tensor(log_r), epsilon_low=0.2
        )

    a, b = sums([-1.0], [1.0], [0.0]), sums([-2.0], [-1.0], [-1.0])
    logp, adv, log_r = torch.tensor([-1.0, -2.0]), torch.tensor([1.0, -1.0]), torch.tensor([0.0, -1.0])
    both = values(logp, adv, torch.ones(2), log_r, epsilon_low=0.2)
    summed = {k: (n / d if d else math.nan) for k, (n, d) in indicator_rates((a + b).tolist()).items()}
    assert summed == pytest.approx(both)
    empty = indicator_rates([0.0] * 8)
    assert empty["up/logp_adv_cov"][1] == 0 and empty["up/negative_clipped_log_ratio_mean"][1] == 0


@pytest.mark.parametrize("up_mode", ["asymmetric", "off"])
def test_grpo_logs_every_indicator_whatever_up_mode(tmp_path, tiny, prompts_dataset, monkeypatch, up_mode):
    """The opt-in part (`run.parts.LeadingIndicatorsMixin`) logs them; a UP trainer alone logs only UP's metrics."""
    kwargs = dict(up_mode=up_mode, steps_per_generation=2, max_steps=2)
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, parts=True, **kwargs)
    calls, shapes = [], []
    original = trainer._log_up_metrics
    trainer._log_up_metrics = lambda *a, **k: (calls.append(a), original(*a, **k))[1]
    spy = lambda old, *a: shapes.append(old.dim()) or anchored_old_logps(old, *a)  # noqa: E731
    monkeypatch.setattr(up_trl.trainers.grpo_trainer, "anchored_old_logps", spy)
    trainer.train()
    logged = [h for h in trainer.state.log_history if "up/positive_tokens" in h]
    assert calls and len(logged) == 2
    assert up_mode == "off" or set(shapes) == {2}  # GRPO's (B, T) pi_old, anchored by `objective.anchored_old_logps`
    for key in INDICATOR_METRICS[:3]:
        assert all(math.isfinite(h[key]) for h in logged), key
    # The length reward splits every group, so each micro-batch holds tokens of both signs.
    assert all(h["up/positive_tokens"] > 0 and h["up/negative_tokens"] > 0 for h in logged)
    alone = make_trainer(tmp_path / "alone", tiny, prompts_dataset, **kwargs)
    alone.train()
    logs = [h for h in alone.state.log_history if "loss" in h]
    assert logs and all("up/positive_token_frac" in h and not set(INDICATOR_METRICS) & set(h) for h in logs)


def test_rloo_logs_the_indicators_per_completion(tmp_path, tiny, prompts_dataset, monkeypatch):
    trainer = make_rloo_trainer(tmp_path, tiny, prompts_dataset, parts=True, steps_per_generation=2, max_steps=2)
    shapes = []
    spy = lambda old, *a: shapes.append(old.dim()) or anchored_old_logps(old, *a)  # noqa: E731
    monkeypatch.setattr(up_trl.trainers.rloo_trainer, "anchored_old_logps", spy)
    trainer.train()
    assert set(shapes) == {1}  # RLOO's (B,) old_logps, anchored by the same `objective.anchored_old_logps`
    logged = [h for h in trainer.state.log_history if "up/positive_tokens" in h]
    assert len(logged) == 2
    # RLOO's entries are completions: a micro-batch of 8 holds at most 8 of either sign.
    assert all(0 < h["up/positive_tokens"] + h["up/negative_tokens"] <= 8 for h in logged)
    assert all(math.isfinite(h["up/logp_adv_cov"]) for h in logged)
