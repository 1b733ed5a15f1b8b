"""UPRLOOTrainer: loss and gradient equal a closed form; "off" is RLOOTrainer bit for bit; real runs."""

import copy
import logging
from pathlib import Path

import pytest
import torch
from conftest import (
    assert_loss_leaves_batch_unchanged,
    cpu_args,
    gradients,
    length_reward,
    make_trainer,
    param_snapshots,
)
from datasets import Dataset
from trl import RLOOConfig, RLOOTrainer

from up_trl import UPRLOOConfig, UPRLOOTrainer
from up_trl.models.offline import tiny_model_and_tokenizer

EPS_LOW, EPS_HIGH = 0.2, 0.28
MAX_LEN = 6


def rloo_args(tmp_path, **overrides):
    """UPRLOOConfig for a seconds-long CPU run (beta=0: no reference model)."""
    return cpu_args(tmp_path, UPRLOOConfig, **{"beta": 0.0, **overrides})


def _sequence_logps(trainer, model, batch):
    """TRL's own forward (not the UP hook), summed over the completion: log pi_theta(y_i | x_i)."""
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    per_token, _, _ = RLOOTrainer._get_per_token_logps_and_entropies(
        trainer, model, ids, attn, batch["completion_ids"].size(1)
    )
    return (per_token * batch["completion_mask"]).sum(1)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    ds = Dataset.from_dict({"prompt": ["1 + 1 = "] * 8})
    tmp = tmp_path_factory.mktemp("rloo")
    args = dict(max_completion_length=MAX_LEN, epsilon=EPS_LOW, epsilon_high=EPS_HIGH)
    kwargs = dict(reward_funcs=length_reward, train_dataset=ds, processing_class=tokenizer)
    up = UPRLOOTrainer(model=model, args=rloo_args(tmp, **args), **kwargs)
    parent = RLOOTrainer(model=copy.deepcopy(model), args=rloo_args(tmp, **args), **kwargs)
    for t in (up, parent):
        t.model.train()

    # A hand-made, off-policy batch: 6 completions of different lengths, mixed-sign advantages.
    g = torch.Generator().manual_seed(0)
    B, P, T = 6, 3, MAX_LEN
    prompt_ids, completion_ids = (torch.randint(4, len(tokenizer), (B, n), generator=g) for n in (P, T))
    prompt_mask = torch.tensor([[1, 1, 1], [0, 1, 1], [1, 1, 1], [0, 0, 1], [1, 1, 1], [0, 1, 1]])
    completion_mask = (
        torch.arange(T) < torch.tensor([[6], [3], [5], [1], [2], [6]])
    ).long()  # lengths 6, 3, 5, 1, 2, 6
    batch = dict(prompt_ids=prompt_ids, prompt_mask=prompt_mask, completion_ids=completion_ids)
    batch |= dict(completion_mask=completion_mask, advantages=torch.tensor([1.2, -0.7, 0.5, -1.5, 0.9, -0.4]))
    with torch.no_grad():
        logps = _sequence_logps(up, model, batch)
    # Stale: log r = logp - old_logp per sequence, chosen on both sides of [1 - eps_low, 1 + eps_high].
    batch["old_logps"] = logps - torch.tensor([0.6, -0.5, 0.05, 0.4, -0.3, -0.1])
    return up, parent, batch


def _closed_form(trainer, batch, up_mode, min_prob=None):
    """A > 0 (all for "both"): -A exp(logp - sg(logp)); else the clipped term; `min_prob`: rare keep it."""
    logp = _sequence_logps(trainer, trainer.model, batch)
    adv, old = batch["advantages"], batch["old_logps"]
    r = torch.exp(logp - old)
    clipped = -torch.min(r * adv, torch.clamp(r, 1 - EPS_LOW, 1 + EPS_HIGH) * adv)
    reinforce = -adv * torch.exp(logp - logp.detach())
    routed = adv > 0 if up_mode == "asymmetric" else torch.ones_like(adv, dtype=torch.bool)
    if min_prob is not None:
        routed = routed & (torch.exp(old / batch["completion_mask"].sum(1)) >= min_prob)
    return torch.where(routed, reinforce, clipped).mean()


def _configure(trainer, up_mode, min_prob=None):
    trainer.up_mode = up_mode
    trainer.up_positive_min_prob = min_prob


def _splitting_min_prob(batch):
    """A rare-token bound between the positive sequences' probabilities: some kept, some clipped."""
    probs = torch.exp(batch["old_logps"] / batch["completion_mask"].sum(1))[batch["advantages"] > 0].sort().values
    return ((probs[0] + probs[1]) / 2).item()


@pytest.mark.parametrize("rare", [False, True], ids=["plain", "rare_guard"])
@pytest.mark.parametrize("up_mode", ["asymmetric", "both"])
def test_loss_and_gradient_equal_closed_form(setup, up_mode, rare):
    up, _, batch = setup
    min_prob = _splitting_min_prob(batch) if rare else None
    _configure(up, up_mode, min_prob=min_prob)
    actual_loss = up.compute_loss(up.model, batch)
    actual = gradients(up.model, actual_loss)
    expected_loss = _closed_form(up, batch, up_mode, min_prob=min_prob)
    expected = gradients(up.model, expected_loss)
    torch.testing.assert_close(actual_loss.detach(), expected_loss.detach(), rtol=1e-6, atol=1e-7)
    assert len(actual) == len(list(up.model.parameters())) and any(a.abs().max() > 0 for a in actual)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-7)
    if rare:
        _configure(up, up_mode)
        assert not torch.allclose(up.compute_loss(up.model, batch), actual_loss)  # the guard acted on this batch


def test_up_mode_off_is_rloo_trainer_bit_for_bit(setup):
    up, parent, batch = setup
    _configure(up, "off")
    up_loss = up.compute_loss(up.model, batch)
    parent_loss = parent.compute_loss(parent.model, batch)
    assert torch.equal(up_loss, parent_loss)
    for a, e in zip(gradients(up.model, up_loss), gradients(parent.model, parent_loss)):
        assert torch.equal(a, e)
    for key in [k for k in parent._metrics["train"] if k.startswith("clip_ratio/")]:
        assert up._metrics["train"][key][-1] == parent._metrics["train"][key][-1], key


def test_up_differs_from_rloo_off_policy_and_equals_it_on_policy(setup):
    up, _, batch = setup
    _configure(up, "asymmetric")
    g_up = gradients(up.model, up.compute_loss(up.model, batch))
    _configure(up, "off")
    g_off = gradients(up.model, up.compute_loss(up.model, batch))
    assert max((a - b).abs().max().item() for a, b in zip(g_up, g_off)) > 1e-4
    # On-policy: RLOO's old_logps are the current policy's (ratio exactly 1): the same gradient.
    with torch.no_grad():
        on_policy = {**batch, "old_logps": _sequence_logps(up, up.model, batch)}
    _configure(up, "asymmetric")
    g_up = gradients(up.model, up.compute_loss(up.model, on_policy))
    _configure(up, "off")
    g_off = gradients(up.model, up.compute_loss(up.model, on_policy))
    for a, e in zip(g_up, g_off):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-7)


def test_inputs_batch_is_never_mutated(setup):
    up, _, batch = setup
    _configure(up, "both")
    assert_loss_leaves_batch_unchanged(up, batch)


def test_up_and_clip_metrics_closed_form(setup):
    up, parent, batch = setup
    _configure(up, "asymmetric")
    up._metrics["train"].clear()
    up.compute_loss(up.model, batch)
    m = {k: v[-1] for k, v in up._metrics["train"].items()}
    with torch.no_grad():
        logp = _sequence_logps(up, up.model, batch)
    adv, old = batch["advantages"], batch["old_logps"]
    pos = adv > 0  # sequences 0, 2, 4
    pi, pi_old, r = logp.exp(), old.exp(), (logp - old).exp()
    cap_clip = torch.clamp(torch.clamp((1 + EPS_HIGH) * pi_old, max=1.0) - pi, min=0.0)
    assert m["up/positive_token_frac"] == pytest.approx(3 / 6)
    assert m["up/capacity_up_mean"] == pytest.approx((1 - pi)[pos].mean().item(), rel=1e-5)
    assert m["up/capacity_clipped_mean"] == pytest.approx(cap_clip[pos].mean().item(), rel=1e-5, abs=1e-12)
    assert m["up/would_clip_frac"] == pytest.approx(1 / 3)  # only sequence 0 (log r = 0.6) leaves the band
    assert m["up/positive_abs_log_ratio_mean"] == pytest.approx((0.6 + 0.05 + 0.3) / 3, rel=1e-4)
    # clip_ratio/* as the parent computes them on what it clipped: routed sequences never are (r~ = 1), so
    # high_* is 0 where RLOO's clip stops sequence 0; low_* counts the negative sequences as RLOO does.
    low = ((r < 1 - EPS_LOW) & (adv < 0)).float()
    assert m["clip_ratio/high_mean"] == 0 and m["clip_ratio/high_max"] == 0
    assert m["clip_ratio/low_mean"] == pytest.approx(low.mean().item()) and m["clip_ratio/low_mean"] > 0
    assert m["clip_ratio/region_mean"] == pytest.approx(low.mean().item())
    _configure(parent, "off")
    parent.compute_loss(parent.model, batch)
    assert parent._metrics["train"]["clip_ratio/high_mean"][-1] > 0  # what RLOO itself clips on this batch
    for key in ("clip_ratio/low_mean", "clip_ratio/low_min"):
        assert m[key] == parent._metrics["train"][key][-1], key


def test_config_refusals(tmp_path):
    with pytest.raises(ValueError, match="up_mode='asymmetric'"):
        UPRLOOConfig(output_dir=str(tmp_path), up_mode="sometimes", use_cpu=True)
    with pytest.raises(ValueError, match=r"must be in \(0, 1\)"):
        UPRLOOConfig(output_dir=str(tmp_path), up_positive_min_prob=0.0, use_cpu=True)
    assert UPRLOOConfig(output_dir=str(tmp_path), up_mode=False, use_cpu=True).up_mode == "off"  # YAML `off`


@pytest.mark.parametrize("overrides, warns, off_policy", [
    pytest.param({}, True, False, id="on_policy_default"),
    pytest.param(dict(num_iterations=2), False, True, id="num_iterations2"),
    pytest.param(dict(steps_per_generation=2), False, True, id="steps_per_generation2"),
    pytest.param(dict(up_mode="off"), False, False, id="up_off"),
])  # fmt: skip
def test_on_policy_notice(tmp_path, tiny, prompts_dataset, caplog, overrides, warns, off_policy):
    with caplog.at_level(logging.WARNING):
        trainer = make_trainer(tmp_path, tiny, prompts_dataset, rloo=True, **overrides)
    said = [r.getMessage() for r in caplog.records if "equals its parent" in r.getMessage()]
    assert bool(said) == warns
    assert trainer.up_is_off_policy == off_policy
    if warns:
        assert "num_iterations > 1" in said[0] and len(said) == 1


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The same 2-step run (step 2 reuses step 1's rollouts) with UP and with "off", every part attached."""
    prompts = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"{i} + {i} = "}] for i in range(16)]})
    runs = {}
    for up_mode in ("asymmetric", "off"):
        snapshots = param_snapshots()
        overrides = dict(up_mode=up_mode, num_iterations=2, optim="sgd", learning_rate=0.1)
        tmp, tiny = tmp_path_factory.mktemp(up_mode), tiny_model_and_tokenizer(seed=0)
        trainer = make_trainer(tmp, tiny, prompts, callbacks=[snapshots], parts=True, rloo=True, **overrides)
        initial = [p.detach().clone() for p in trainer.model.parameters()]
        trainer.train()
        runs[up_mode] = (trainer, initial, snapshots.params)
    return runs


def test_real_run_trains_and_logs_up_metrics(two_runs):
    trainer, initial, params = two_runs["asymmetric"]
    assert trainer.state.global_step == 2
    assert any(not torch.equal(a, b) for a, b in zip(initial, params[2]))
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logs) == 2
    for h in logs:
        for key in ("up/positive_token_frac", "up/capacity_up_mean", "up/would_clip_frac", "clip_ratio/high_mean"):
            assert key in h, key
        assert h["up/nonfinite_skipped_steps"] == 0
    # Step 1's fresh rollouts drift by float rounding only (two computations of the same numbers); step 2 reuses them
    # one update later: orders of magnitude more.
    drift = [h["up/positive_abs_log_ratio_mean"] for h in logs]
    assert drift[0] < 1e-5 and drift[1] > 1e-3, drift
    assert "# Model Card for tiny-up-rloo" in _written_card(trainer)  # TRL's card, plus the run's


def _written_card(trainer):
    Path(trainer.args.output_dir).mkdir(parents=True, exist_ok=True)
    trainer.create_model_card(model_name="tiny-up-rloo")
    card = (Path(trainer.args.output_dir) / "README.md").read_text()
    assert "fine-tuned with **UP-RLOO**" in card
    assert "`UPRLOOTrainer`" in card and "`RLOOTrainer`." in card and "| objective | UP-RLOO |" in card
    assert "completions with A > 0 use the self-anchored ratio" in card and "one per completion" in card
    assert "| up_mode | asymmetric |" in card and "| off-policy (UP differs from its parent) | True |" in card
    assert "| loss_type |" not in card and "| delta |" not in card  # RLOOConfig has neither
    assert "| up/would_clip_frac |" in card and card.count("arXiv:2607.06987") == 1
    assert "- up-rloo" in card.split("---")[1] and "- grpo" not in card.split("---")[1]
    assert "Cite UP-RLOO as:" in card  # TRL's, from `_name`
    return card


def test_plain_rloo_config_means_up_asymmetric(tmp_path, tiny, prompts_dataset):
    model, tokenizer = tiny
    args = RLOOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", beta=0.0,
                      per_device_train_batch_size=8, num_generations=4, num_iterations=2)  # fmt: skip
    trainer = UPRLOOTrainer(model, length_reward, args=args, train_dataset=prompts_dataset, processing_class=tokenizer)
    assert trainer.up_mode == "asymmetric" and trainer.up_positive_min_prob is None and trainer.up_is_off_policy


def test_real_run_up_equals_off_on_policy_and_differs_off_policy(two_runs):
    _, initial, up = two_runs["asymmetric"]
    _, initial_off, off = two_runs["off"]
    assert all(torch.equal(a, b) for a, b in zip(initial, initial_off))
    # Step 1 (on-policy rollouts): the same update up to float rounding.
    for a, b in zip(up[1], off[1]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    # Step 2 (the same rollouts, stale by one update): UP's positive-sequence gradient is not weighted by r.
    assert max((a - b).abs().max().item() for a, b in zip(up[2], off[2])) > 1e-4
