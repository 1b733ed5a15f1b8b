"""The trainer's loss and gradient equal the closed form in every setting; "off" is GRPOTrainer."""

import copy

import pytest
import torch
from conftest import assert_loss_leaves_batch_unchanged, cpu_args, four_completions, gradients, length_reward
from datasets import Dataset
from trl import GRPOTrainer

from up_trl import UPGRPOTrainer
from up_trl.models.offline import tiny_model_and_tokenizer
from up_trl.objective.guards import rare_mask
from up_trl.objective.paper_losses import up_per_token_loss
from up_trl.objective.ratios import log_importance_weights, self_anchored_ratio
from up_trl.objective.routing import up_routes

LOSS_TYPES = ["grpo", "bnpo", "dr_grpo", "dapo", "luspo"]
GA, SPG, MAX_LEN = 2, 4, 6


def _forward(trainer, model, batch, compute_entropy=False):
    """TRL's own forward (not the UP hook): log-probs and entropies of the completion tokens."""
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    logps, entropies, _ = GRPOTrainer._get_per_token_logps_and_entropies(
        trainer, model, ids, attn, batch["completion_ids"].size(1), compute_entropy=compute_entropy
    )
    return logps, entropies


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    tmp = tmp_path_factory.mktemp("grad")
    dataset = Dataset.from_dict({"prompt": ["1 + 1 = "] * 8})
    kwargs = dict(reward_funcs=length_reward, train_dataset=dataset, processing_class=tokenizer)
    up = UPGRPOTrainer(model=model, args=cpu_args(tmp, max_completion_length=MAX_LEN), **kwargs)
    parent = GRPOTrainer(model=copy.deepcopy(model), args=cpu_args(tmp, max_completion_length=MAX_LEN), **kwargs)
    for t in (up, parent):
        t.model.train()
        t.current_gradient_accumulation_steps = GA
        t.args.steps_per_generation = SPG

    # A hand-made, off-policy batch: 4 completions of different lengths, mixed-sign advantages.
    g = torch.Generator().manual_seed(0)
    B, T = 4, MAX_LEN
    batch = four_completions(len(tokenizer), g)  # num_items_in_batch: the whole generation batch's (SPG micro-batches)
    with torch.no_grad():
        logps, _ = _forward(up, model, batch)
    # Stale by up to ~e^1: many ratios leave [1 - eps_low, 1 + eps_high] on both sides.
    batch["old_per_token_logps"] = logps + 0.6 * torch.randn(B, T, generator=g)
    batch["ref_per_token_logps"] = logps + 0.3 * torch.randn(B, T, generator=g)
    batch["sampling_per_token_logps"] = logps + 0.8 * torch.randn(B, T, generator=g)
    batch["importance_sampling_ratio"] = 0.5 + torch.rand(B, T, generator=g)
    return up, parent, batch


# The settings `_configure` and `_closed_form` take (besides loss_type), at their defaults.
DEFAULTS = dict(level="token", delta=None, up_mode="asymmetric", beta=0.0, opsm=None, vllm_is=False, min_prob=None)
DEFAULTS |= dict(entropy_quantile=1.0, entropy_coef=0.0)


def _configure(trainer, *, loss_type, **settings):
    c = DEFAULTS | settings
    trainer.up_positive_min_prob = c["min_prob"]
    trainer.loss_type = trainer.args.loss_type = loss_type
    trainer.importance_sampling_level = c["level"]
    trainer.args.delta = c["delta"]
    trainer.up_mode = c["up_mode"]
    trainer.beta = c["beta"]
    trainer.off_policy_mask_threshold = c["opsm"]
    trainer.use_vllm = trainer.vllm_importance_sampling_correction = c["vllm_is"]
    trainer.top_entropy_quantile = c["entropy_quantile"]
    trainer.entropy_coef = c["entropy_coef"]
    trainer._entropy_bonus_enabled = c["entropy_coef"] != 0.0


def _closed_form(trainer, batch, *, loss_type, sampling=True, **settings):
    """The loss written out; `sampling=False`: no sampler log-probs, the mask reads the drift from pi_old."""
    c = DEFAULTS | settings
    level, up_mode, min_prob, opsm, beta = c["level"], c["up_mode"], c["min_prob"], c["opsm"], c["beta"]
    entropy_quantile, entropy_coef = c["entropy_quantile"], c["entropy_coef"]
    logps, entropies = _forward(trainer, trainer.model, batch, compute_entropy=True)
    mask = batch["completion_mask"].float()
    old, adv = batch["old_per_token_logps"], batch["advantages"]
    band = dict(epsilon_low=0.2, epsilon_high=0.2, delta=c["delta"], importance_sampling_level=level)
    loss = up_per_token_loss(logps, old, adv, mask, up_mode=up_mode, positive_min_prob=min_prob, **band)
    if opsm is not None:  # keep a sequence if A >= 0 or its mean KL(sampler || current) <= threshold
        sampler = batch["sampling_per_token_logps"] if sampling else old
        kl = ((sampler - logps.detach()) * mask).sum(1) / mask.sum(1)
        loss = loss * ((adv >= 0) | (kl <= opsm)).float().unsqueeze(1)
    bonus_mask = mask  # TRL's entropy bonus acts on the tokens the entropy mask keeps
    if entropy_quantile < 1.0:
        bonus_mask = mask * GRPOTrainer.get_high_entropy_mask(trainer, entropies, mask, 1 - entropy_quantile)
        loss = loss * bonus_mask
    if c["vllm_is"]:
        loss = loss * batch["importance_sampling_ratio"]
    if beta:  # TRL's k3 times its bias correction: the entry's own ratio, r~ where UP routes it (docs/method.md)
        ref = batch["ref_per_token_logps"]
        routes = up_routes(adv.unsqueeze(1), up_mode)
        if min_prob is not None:
            routes = routes & ~rare_mask(old, mask, min_prob, level)
        r = torch.exp(log_importance_weights(logps, old, mask, level))
        weight = torch.where(routes, self_anchored_ratio(logps, mask, level), r)
        loss = loss + beta * (torch.exp(ref - logps) - (ref - logps) - 1) * weight
    lm = loss * mask
    n_dapo = batch["num_items_in_batch"] * GA / SPG
    policy = dict(grpo=(lm.sum(1) / mask.sum(1)).mean(), bnpo=lm.sum() / mask.sum(), luspo=lm.sum(1).mean())
    policy = (policy | dict(dr_grpo=lm.sum() / (mask.size(0) * MAX_LEN), dapo=lm.sum() / n_dapo))[loss_type]
    total = policy if loss_type == "dapo" else policy / GA
    if entropy_coef:
        total = total - entropy_coef * (entropies * bonus_mask).sum() / bonus_mask.sum() / GA
    return total, policy.detach()


def _assert_grads_close(actual, expected):
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-7)


def _assert_equals_closed_form(up, batch, **cfg):
    """The loss and every gradient equal the closed form's; returns (its policy loss, the gradients)."""
    _configure(up, **{k: v for k, v in cfg.items() if k != "sampling"})
    actual_loss = up.compute_loss(up.model, batch)
    actual = gradients(up.model, actual_loss)
    expected_loss, expected_policy = _closed_form(up, batch, **cfg)
    torch.testing.assert_close(actual_loss.detach(), expected_loss.detach(), rtol=1e-5, atol=1e-7)
    _assert_grads_close(actual, gradients(up.model, expected_loss))
    return expected_policy, actual


def _sequence_stale(up, batch):
    """`batch` with per-sequence log-ratios 0.4 (A > 0), -0.5, -0.1, 0.1: the first two leave the band."""
    with torch.no_grad():
        current, _ = _forward(up, up.model, batch)
    return {**batch, "old_per_token_logps": current - torch.tensor([[0.4], [-0.5], [-0.1], [0.1]])}


@pytest.mark.parametrize("up_mode", ["asymmetric", "both"])
@pytest.mark.parametrize("delta", [None, 1.5], ids=["no_delta", "delta1.5"])
@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_trainer_gradient_equals_closed_form(setup, loss_type, level, delta, up_mode):
    up, _, batch = setup
    _assert_equals_closed_form(up, batch, loss_type=loss_type, level=level, delta=delta, up_mode=up_mode)


EXTRAS = {
    "kl_beta": dict(beta=0.05),
    "off_policy_mask": dict(opsm=0.3),
    "vllm_is_ratio": dict(vllm_is=True),
    "entropy_mask": dict(entropy_quantile=0.5),
    "entropy_bonus": dict(entropy_coef=0.01),
    "rare_guard": dict(min_prob=0.0105),  # pi_old ~ 0.01 here: splits the positive tokens (and sequences)
    "everything": dict(beta=0.05, opsm=0.3, vllm_is=True, entropy_quantile=0.5, entropy_coef=0.01, delta=1.5),
    "rare_guard_and_kl": dict(min_prob=0.0105, beta=0.05, delta=1.5),
}


@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("extra", list(EXTRAS))
@pytest.mark.parametrize("loss_type", ["grpo", "dapo"])
def test_parent_machinery_applies_to_both_branches(setup, loss_type, extra, level):
    up, _, batch = setup
    cfg = dict(loss_type=loss_type, level=level, **EXTRAS[extra])
    n_logged = len(up._metrics["train"]["policy_loss"])
    expected_policy, _ = _assert_equals_closed_form(up, batch, **cfg)
    if cfg.get("entropy_coef"):  # TRL logs policy_loss (the loss before the bonus) only with the entropy bonus
        assert len(up._metrics["train"]["policy_loss"]) == n_logged + 1  # one value per call
        assert up._metrics["train"]["policy_loss"][-1] == pytest.approx(expected_policy.item(), rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("up_mode", ["asymmetric", "both"])
def test_off_policy_mask_without_vllm_reads_the_drift_from_pi_old(setup, up_mode, level):
    # Without vLLM the mask reads pi_old as the sampler's: it must measure the drift from the real pi_old, not r~.
    up, _, batch = setup
    no_sampler = {k: v for k, v in batch.items() if k != "sampling_per_token_logps"}
    cfg = dict(loss_type="dapo", level=level, up_mode=up_mode, opsm=0.2, sampling=False)
    _assert_equals_closed_form(up, no_sampler, **cfg)
    # and the mask does drop a negative sequence here, so the check above tells the two readings apart
    with torch.no_grad():
        logps, _ = _forward(up, up.model, no_sampler)
    mask = batch["completion_mask"].float()
    drift = ((batch["old_per_token_logps"] - logps) * mask).sum(1) / mask.sum(1)
    assert ((batch["advantages"] < 0) & (drift > 0.2)).any()


@pytest.mark.parametrize("extra", ["none", "kl_beta", "everything"])
@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_up_mode_off_is_grpo_trainer_bit_for_bit(setup, loss_type, level, extra):
    up, parent, batch = setup
    cfg = dict(loss_type=loss_type, level=level, **EXTRAS.get(extra, {}))
    _configure(up, up_mode="off", **{k: v for k, v in cfg.items() if k != "up_mode"})
    _configure(parent, **cfg)
    up_loss = up.compute_loss(up.model, batch)
    parent_loss = parent.compute_loss(parent.model, batch)
    assert torch.equal(up_loss, parent_loss)
    for a, e in zip(gradients(up.model, up_loss), gradients(parent.model, parent_loss)):
        assert torch.equal(a, e)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_up_differs_from_parent_off_policy_and_equals_it_on_policy(setup, level):
    up, _, batch = setup
    # Off-policy (the stale batch): positive ratios outside the band make the gradients differ.
    _configure(up, loss_type="grpo", level=level, up_mode="asymmetric")
    g_up = gradients(up.model, up.compute_loss(up.model, batch))
    _configure(up, loss_type="grpo", level=level, up_mode="off")
    g_off = gradients(up.model, up.compute_loss(up.model, batch))
    assert max((a - b).abs().max().item() for a, b in zip(g_up, g_off)) > 1e-4
    # On-policy (no old log-probs: TRL uses the current ones): the same objective.
    on_policy = {k: v for k, v in batch.items() if k != "old_per_token_logps"}
    _configure(up, loss_type="grpo", level=level, up_mode="asymmetric")
    g_up = gradients(up.model, up.compute_loss(up.model, on_policy))
    _configure(up, loss_type="grpo", level=level, up_mode="off")
    g_off = gradients(up.model, up.compute_loss(up.model, on_policy))
    _assert_grads_close(g_up, g_off)


def test_inputs_batch_is_never_mutated(setup):
    up, _, batch = setup
    _configure(up, loss_type="dapo", up_mode="asymmetric", beta=0.05, opsm=0.3, vllm_is=True)
    assert_loss_leaves_batch_unchanged(up, batch)


def test_up_metrics_closed_form(setup):
    up, _, batch = setup
    _configure(up, loss_type="grpo", up_mode="asymmetric")
    up._metrics["train"].clear()
    up.compute_loss(up.model, batch)
    m = {k: v[-1] for k, v in up._metrics["train"].items()}
    with torch.no_grad():
        logps, _ = _forward(up, up.model, batch)
    mask = batch["completion_mask"].bool()
    pos = mask & (batch["advantages"] > 0).unsqueeze(1)  # rows 0 and 2: 6 + 5 of 15 tokens
    old = batch["old_per_token_logps"]
    pi, pi_old = logps.exp(), old.exp()
    cap_clip = torch.clamp(torch.clamp(1.2 * pi_old, max=1.0) - pi, min=0.0)
    assert m["up/positive_token_frac"] == pytest.approx(11 / 15)
    assert m["up/capacity_up_mean"] == pytest.approx((1 - pi)[pos].mean().item(), rel=1e-5)
    assert m["up/capacity_clipped_mean"] == pytest.approx(cap_clip[pos].mean().item(), rel=1e-5)
    assert m["up/would_clip_frac"] == pytest.approx(((pi / pi_old) > 1.2)[pos].float().mean().item())
    assert m["up/positive_abs_log_ratio_mean"] == pytest.approx((logps - old).abs()[pos].mean().item(), rel=1e-5)
    assert 0 < m["up/would_clip_frac"] < 1  # the batch really is off-policy on positive tokens
    assert m["up/capacity_up_mean"] > m["up/capacity_clipped_mean"]


def _clip_ratio_closed_form(trainer, batch, level, delta, up_mode):
    """TRL's clip_ratio/* on what each mode clips: nothing where UP routes (r~ = 1)."""
    with torch.no_grad():
        logps, _ = _forward(trainer, trainer.model, batch)
    mask = batch["completion_mask"].float()
    log_r = logps - batch["old_per_token_logps"]
    adv = batch["advantages"].unsqueeze(1)
    if level == "sequence":
        log_r = ((log_r * mask).sum(1) / mask.sum(1)).unsqueeze(1)
    r = log_r.exp() if delta is None else log_r.exp().clamp(max=delta)
    r = torch.where(up_routes(adv, up_mode), 1.0, r)
    low, high = ((r < 0.8) & (adv < 0)).float(), ((r > 1.2) & (adv > 0)).float()
    region = torch.maximum(low, high)
    if level == "sequence":  # one value per sequence
        mean, per_seq = (lambda x: x.mean().item()), (lambda x: x.squeeze(1))
    else:  # token-weighted over the batch; per sequence, the token mean
        mean, per_seq = (lambda x: ((x * mask).sum() / mask.sum()).item()), (lambda x: (x * mask).sum(1) / mask.sum(1))
    means = {f"clip_ratio/{name}_mean": mean(x) for name, x in (("low", low), ("high", high), ("region", region))}
    return means | {"clip_ratio/low_min": per_seq(low).min().item(), "clip_ratio/high_max": per_seq(high).max().item()}


@pytest.mark.parametrize("delta", [None, 1.5], ids=["no_delta", "delta1.5"])
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_clip_ratio_metrics_count_what_each_mode_clipped(setup, level, delta):
    # TRL's clip_ratio/* under UP: routed entries are never clipped (r~ = 1); up/would_clip_frac: what the clip would
    # have stopped.
    up, _, batch = setup
    if level == "sequence":
        batch = _sequence_stale(up, batch)
    logged = {}
    for up_mode in ("off", "asymmetric", "both"):
        expected = _clip_ratio_closed_form(up, batch, level, delta, up_mode)
        _configure(up, loss_type="dapo", level=level, delta=delta, up_mode=up_mode)
        up._metrics["train"].clear()
        up.compute_loss(up.model, batch)
        metrics = up._metrics["train"]
        assert all(len(metrics[k]) == 1 for k in expected), "one value per call"
        logged[up_mode] = {k: metrics[k][0] for k in expected}
        assert logged[up_mode] == pytest.approx(expected, rel=1e-6), up_mode
        logged[up_mode]["up/would_clip_frac"] = metrics["up/would_clip_frac"][0]
    # The stale batch has positive entries past 1 + eps_high and negative ones below 1 - eps_low.
    assert logged["off"]["clip_ratio/high_mean"] > 0 and logged["off"]["clip_ratio/low_mean"] > 0
    assert logged["asymmetric"]["clip_ratio/high_mean"] == 0 and logged["both"]["clip_ratio/region_mean"] == 0
    assert logged["asymmetric"]["clip_ratio/low_mean"] == logged["off"]["clip_ratio/low_mean"]
    assert logged["asymmetric"]["up/would_clip_frac"] == logged["off"]["up/would_clip_frac"] > 0


@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("loss_type", ["grpo", "dapo"])
def test_vllm_aligned_batch_up_gradient_equals_parent(setup, loss_type, level):
    # vLLM with aligned steps: pi_old recomputed with the current weights (ratio 1), both branches weighted alike.
    up, _, batch = setup
    with torch.no_grad():
        current, _ = _forward(up, up.model, batch)
    aligned = {**batch, "old_per_token_logps": current}
    grads = {}
    for up_mode in ("asymmetric", "off"):
        _configure(up, loss_type=loss_type, level=level, up_mode=up_mode, vllm_is=True)
        grads[up_mode] = gradients(up.model, up.compute_loss(up.model, aligned))
    assert max((a - b).abs().max().item() for a, b in zip(grads["asymmetric"], grads["off"])) == 0.0


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_rare_guard_acts_on_a_stale_batch_and_equals_its_closed_form(setup, level):
    # The closed-form tests above could pass with a rare clip that never acts: on these batches it does.
    up, _, batch = setup
    if level == "sequence":
        batch = _sequence_stale(up, batch)
    _configure(up, loss_type="dapo", level=level)
    plain = gradients(up.model, up.compute_loss(up.model, batch))
    _, guarded = _assert_equals_closed_form(up, batch, loss_type="dapo", level=level, **EXTRAS["rare_guard"])
    assert max((a - b).abs().max().item() for a, b in zip(plain, guarded)) > 1e-6


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_kl_bias_correction_weights_routed_entries_by_their_anchored_ratio(setup, level):
    # TRL weights k3 by the entry's ratio: r~ where UP anchors, else r. The difference to weighting every entry by r
    # is real here, so the closed-form check could not pass with either reading.
    up, _, batch = setup
    _configure(up, loss_type="dapo", level=level, beta=0.05)
    actual = up.compute_loss(up.model, batch).detach()
    expected, _ = _closed_form(up, batch, loss_type="dapo", level=level, beta=0.05)
    torch.testing.assert_close(actual, expected.detach(), rtol=1e-5, atol=1e-7)
    with torch.no_grad():
        logps, _ = _forward(up, up.model, batch)
    mask = batch["completion_mask"].float()
    ref, old = batch["ref_per_token_logps"], batch["old_per_token_logps"]
    k3 = torch.exp(ref - logps) - (ref - logps) - 1
    r = torch.exp(log_importance_weights(logps, old, mask, level))
    positive = (batch["advantages"] > 0).float().unsqueeze(1)
    # what weighting the positive entries by r instead of 1 would add to dapo's loss
    gap = 0.05 * (k3 * (r - 1) * positive * mask).sum() / (batch["num_items_in_batch"] * GA / SPG)
    assert abs(gap.item()) > 1e-5


def test_delta_below_one_is_refused_under_up(tmp_path):
    with pytest.raises(ValueError, match=r"delta=0.9 caps the ratio below 1.*set delta above 1 \+ epsilon_high"):
        cpu_args(tmp_path, delta=0.9)
    cpu_args(tmp_path, delta=0.9, up_mode="off")  # the parent's own setting, trained unchanged
