"""The UP equations as closed-form tables a reader can check by hand, and their gradient paths."""

import math

import pytest
import torch

from up_trl.objective.guards import entropy_fallback_active, rare_mask, up_capacity_mask, up_positive_branch_loss
from up_trl.objective.losses import (
    aggregate_loss,
    clipped_surrogate_loss,
    probability_capacity,
    self_anchored_ratio,
    up_guard_mask,
    up_per_token_loss,
    up_routes,
)

EPS = dict(epsilon_low=0.2, epsilon_high=0.28)


def logps(*probs):
    return torch.log(torch.tensor([list(probs)], dtype=torch.float64))


# r = pi_theta / pi_old on one token; expected per-token loss (A as given).
#   UP, A > 0:  -A * 1 (self-anchored);   parent, A > 0: -A * min(r, 1 + eps_high)
#   A < 0 (both): -min(r * A, clip(r, 0.8, 1.28) * A)
@pytest.mark.parametrize(
    "pi, pi_old, adv, expected_up, expected_parent",
    [
        pytest.param(0.5, 0.25, 1.0, -1.0, -1.28, id="pos_ratio2_parent_clipped"),
        pytest.param(0.3, 0.25, 2.0, -2.0, -2.4, id="pos_ratio1.2_inside_band"),
        pytest.param(0.1, 0.2, 1.0, -1.0, -0.5, id="pos_ratio0.5_below_band"),
        pytest.param(0.1, 0.2, -1.0, 0.8, 0.8, id="neg_ratio0.5_clipped_low"),
        pytest.param(0.5, 0.25, -1.0, 2.0, 2.0, id="neg_ratio2_unclipped_high"),
        pytest.param(0.25, 0.25, 0.0, 0.0, 0.0, id="zero_advantage"),
    ],
)
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
    # token: dL/dlogp_t = -A on active tokens; sequence: the loss is (B, 1) and its mask-weighted sum counts it
    # once per active token (2), times the mean's 1/2: again -A per active token.
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


@pytest.mark.parametrize(
    "pi, pi_old, clipped, up",
    [
        pytest.param(0.01, 0.01, 0.0028, 0.99, id="rare_token_on_policy"),
        pytest.param(0.011, 0.01, 0.0018, 0.989, id="rare_token_moved"),
        pytest.param(0.9, 0.8, 0.1, 0.1, id="common_token_ceiling_1"),
        pytest.param(0.5, 0.3, 0.0, 0.5, id="past_the_clip_zero"),
    ],
)
def test_probability_capacity_table(pi, pi_old, clipped, up):
    # clipped: max(0, min(1, 1.28 * pi_old) - pi);  up: 1 - pi
    got_clipped = probability_capacity(logps(pi), logps(pi_old), epsilon_high=0.28)
    got_up = probability_capacity(logps(pi), rule="up")
    assert got_clipped.item() == pytest.approx(clipped, abs=1e-12)
    assert got_up.item() == pytest.approx(up, abs=1e-12)


def test_probability_capacity_needs_old_for_clipped_rule():
    with pytest.raises(ValueError, match="old_per_token_logps"):
        probability_capacity(logps(0.5))


# Two sequences: lengths 2 and 1 (T = 3), per-token losses [1, 3, x] and [6, x, x] (x masked).
LOSS = torch.tensor([[1.0, 3.0, 100.0], [6.0, 100.0, 100.0]])
MASK = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


@pytest.mark.parametrize(
    "loss_type, kwargs, expected",
    [
        pytest.param("grpo", {}, (2.0 + 6.0) / 2, id="grpo_seq_mean_then_batch_mean"),
        pytest.param("bnpo", {}, 10.0 / 3, id="bnpo_token_mean"),
        pytest.param("dr_grpo", {"max_completion_length": 5}, 10.0 / (2 * 5), id="dr_grpo_B_times_L"),
        pytest.param("dapo", {"num_items": 4.0}, 10.0 / 4, id="dapo_global_tokens"),
        pytest.param("luspo", {}, (4.0 + 6.0) / 2, id="luspo_seq_sum_mean"),
    ],
)
def test_aggregate_loss_table(loss_type, kwargs, expected):
    assert aggregate_loss(LOSS, MASK, loss_type, **kwargs).item() == pytest.approx(expected)


def test_aggregate_loss_errors_say_what_is_missing():
    with pytest.raises(ValueError, match="max_completion_length"):
        aggregate_loss(LOSS, MASK, "dr_grpo")
    with pytest.raises(ValueError, match="num_items"):
        aggregate_loss(LOSS, MASK, "dapo")
    with pytest.raises(ValueError, match="Unknown loss_type"):
        aggregate_loss(LOSS, MASK, "ppo")


def test_optional_guard_drops_only_drifted_positive_entries():
    # log r = log 2 = 0.69 (drifted past 0.5) and log 1.2 = 0.18 (kept); the negative entry is the parent's.
    logp, old = logps(0.5, 0.3, 0.5), logps(0.25, 0.25, 0.25)
    adv = torch.tensor([[1.0, 1.0, -1.0]], dtype=torch.float64)
    loss = up_per_token_loss(logp, old, adv, torch.ones(1, 3), **EPS, positive_log_ratio_bound=0.5)
    torch.testing.assert_close(loss, torch.tensor([[0.0, -1.0, 2.0]], dtype=torch.float64))
    assert up_guard_mask(torch.tensor([0.5, -0.51]), bound=0.5).tolist() == [1.0, 0.0]


# The candidate guards of UP's positive branch (ours, off by default; docs/collapse.md measures them).
# Capacity share s: keep a positive entry while pi - pi_old <= s * (1 - pi_old).
@pytest.mark.parametrize(
    "pi, pi_old, share, kept",
    [
        pytest.param(0.05, 0.01, 0.1, True, id="rare_token_r5_within_share"),  # gain 0.04 <= 0.099
        pytest.param(0.2, 0.01, 0.1, False, id="rare_token_r20_past_share"),  # gain 0.19 > 0.099
        pytest.param(0.905, 0.9, 0.1, True, id="likely_token_small_gain"),  # gain 0.005 <= 0.01
        pytest.param(0.95, 0.9, 0.1, False, id="likely_token_r1.06_past_share"),  # gain 0.05 > 0.01
        pytest.param(0.1, 0.2, 0.1, True, id="probability_fell"),  # gain < 0
    ],
)
def test_capacity_guard_table(pi, pi_old, share, kept):
    adv = torch.tensor([[1.5, -1.0]], dtype=torch.float64)
    logp, old = logps(pi, pi), logps(pi_old, pi_old)
    loss = up_per_token_loss(logp, old, adv, torch.ones(1, 2), **EPS, positive_capacity_share=share)
    parent_negative = up_per_token_loss(logp, old, adv, torch.ones(1, 2), **EPS, up_mode="off")[0, 1]
    assert loss[0, 0].item() == pytest.approx(-1.5 if kept else 0.0)  # -A * r~, or nothing
    assert loss[0, 1].item() == pytest.approx(parent_negative.item())  # A < 0: the parent's, untouched
    assert up_capacity_mask(logp - old, old, share)[0, 0].item() == float(kept)


def test_capacity_guard_sequence_level_uses_geometric_mean_probability():
    # Sequence of two tokens: geometric-mean pi_old = sqrt(0.04 * 0.25) = 0.1, pi = sqrt(0.09 * 0.25) = 0.15.
    logp, old, mask = logps(0.09, 0.25), logps(0.04, 0.25), torch.ones(1, 2)
    for share, kept in ((0.1, True), (0.05, False)):  # gain 0.05 vs share * 0.9 = 0.09 / 0.045
        loss = up_per_token_loss(
            logp,
            old,
            torch.tensor([2.0]),
            mask,
            **EPS,
            importance_sampling_level="sequence",
            positive_capacity_share=share,
        )
        assert loss.shape == (1, 1) and loss.item() == pytest.approx(-2.0 if kept else 0.0)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_capacity_guard_gradient_is_up_where_kept_and_zero_where_stopped(level):
    logp = logps(0.05, 0.2).requires_grad_()
    old = logps(0.01, 0.01)
    loss = up_per_token_loss(
        logp,
        old,
        torch.tensor([1.0]),
        torch.ones(1, 2),
        **EPS,
        importance_sampling_level=level,
        positive_capacity_share=0.1,
    )
    loss.sum().backward()
    if level == "token":  # token 0 kept (gain 0.04), token 1 stopped (gain 0.19): d/dlogp = -A, 0
        torch.testing.assert_close(logp.grad, torch.tensor([[-1.0, 0.0]], dtype=torch.float64))
    else:  # geometric mean pi = 0.1 from 0.01: gain 0.09 <= 0.099: kept, -A * mean_t grad logp_t
        torch.testing.assert_close(logp.grad, torch.tensor([[-0.5, -0.5]], dtype=torch.float64))


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_positive_kl_guard_value_and_gradient(level):
    # L = -A * r~ + c * (r - 1 - log r);  dL/dlogp = -A + c * (r - 1)  (token level, per token; r = 2 and 0.5)
    logp = logps(0.5, 0.1).requires_grad_()
    old = logps(0.25, 0.2)
    adv, c = torch.tensor([1.0]), 0.3
    loss = up_per_token_loss(
        logp, old, adv, torch.ones(1, 2), **EPS, importance_sampling_level=level, positive_kl_coef=c
    )
    loss.sum().backward()
    if level == "token":
        r = torch.tensor([[2.0, 0.5]], dtype=torch.float64)
        torch.testing.assert_close(loss.detach(), -1.0 + c * (r - 1 - torch.log(r)))
        torch.testing.assert_close(logp.grad, -1.0 + c * (r - 1))
    else:  # r = exp(mean(log 2, log 0.5)) = 1: the KL term vanishes, value and gradient are UP's
        torch.testing.assert_close(loss.detach(), torch.tensor([[-1.0]], dtype=torch.float64))
        torch.testing.assert_close(logp.grad, torch.tensor([[-0.5, -0.5]], dtype=torch.float64))


def test_positive_kl_guard_pushes_back_toward_pi_old_only_on_routed_entries():
    logp = logps(0.5, 0.5).requires_grad_()
    old = logps(0.25, 0.25)
    loss = up_per_token_loss(logp, old, torch.tensor([[1.0, -1.0]]), torch.ones(1, 2), **EPS, positive_kl_coef=1.0)
    loss.sum().backward()
    # positive entry: -1 + (2 - 1) = 0 (the KL pull cancels UP's push at r = 2, c = 1); negative: the parent's
    # |A| * r = 2 (unclipped above for A < 0): gradient 2.
    torch.testing.assert_close(logp.grad, torch.tensor([[0.0, 2.0]], dtype=torch.float64))


def test_entropy_fallback_gives_routed_entries_the_parent_loss():
    logp, old = logps(0.5, 0.1), logps(0.25, 0.2)
    adv = torch.tensor([[1.0, -1.0]])
    args = (logp, old, adv, torch.ones(1, 2))
    fallback = up_per_token_loss(*args, **EPS, positive_fallback=True)
    torch.testing.assert_close(fallback, up_per_token_loss(*args, **EPS, up_mode="off"))
    assert entropy_fallback_active(torch.tensor([[3.0, 1.0]]), torch.ones(1, 2), threshold=2.0) is False  # mean 2
    assert entropy_fallback_active(torch.tensor([[3.0, 1.0]]), torch.tensor([[1.0, 0.0]]), threshold=2.0) is True


def test_no_guard_is_the_paper_objective_exactly():
    logp, old = logps(0.5, 0.1, 0.3), logps(0.25, 0.2, 0.3)
    adv = torch.tensor([[1.0, 2.0, -1.0]], dtype=torch.float64)
    mask = torch.ones(1, 3)
    plain = up_per_token_loss(logp, old, adv, mask, **EPS)
    anchored = -self_anchored_ratio(logp, mask) * adv
    assert torch.equal(plain[:, :2], anchored[:, :2])
    assert torch.equal(up_positive_branch_loss(logp, old, adv, mask), anchored)


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
