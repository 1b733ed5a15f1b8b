"""The leading indicators of a collapse (`up_trl.objective.indicators`): closed forms on numbers a reader can check,
the two layouts the trainers pass, and that the opt-in part (`run.parts.LeadingIndicatorsMixin`, which `up-trl train`
attaches) logs them beside UP's metrics, while a UP trainer alone logs only UP's."""

import math

import pytest
import torch

from up_trl.objective.indicators import INDICATOR_METRICS, indicator_rates, leading_indicator_sums


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
    both = values(
        torch.tensor([-1.0, -2.0]),
        torch.tensor([1.0, -1.0]),
        torch.ones(2),
        torch.tensor([0.0, -1.0]),
        epsilon_low=0.2,
    )
    summed = {k: (n / d if d else math.nan) for k, (n, d) in indicator_rates((a + b).tolist()).items()}
    assert summed == pytest.approx(both)
    empty = indicator_rates([0.0] * 8)
    assert empty["up/logp_adv_cov"][1] == 0 and empty["up/negative_clipped_log_ratio_mean"][1] == 0


@pytest.mark.parametrize("up_mode", ["asymmetric", "off"])
def test_grpo_logs_every_indicator_whatever_up_mode(tmp_path, tiny, prompts_dataset, up_mode):
    from conftest import make_trainer

    kwargs = dict(up_mode=up_mode, steps_per_generation=2, max_steps=2)
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, parts=True, **kwargs)
    calls = []
    original = trainer._log_up_metrics
    trainer._log_up_metrics = lambda *a, **k: (calls.append(a), original(*a, **k))[1]
    trainer.train()
    logged = [h for h in trainer.state.log_history if "up/positive_tokens" in h]
    assert calls and len(logged) == 2
    for key in INDICATOR_METRICS[:3]:
        assert all(math.isfinite(h[key]) for h in logged), key
    # The length reward splits every group, so each micro-batch holds tokens of both signs.
    assert all(h["up/positive_tokens"] > 0 and h["up/negative_tokens"] > 0 for h in logged)
    alone = make_trainer(tmp_path / "alone", tiny, prompts_dataset, **kwargs)  # the UP trainer alone: UP's metrics
    alone.train()
    logs = [h for h in alone.state.log_history if "loss" in h]
    assert logs and all("up/positive_token_frac" in h and not set(INDICATOR_METRICS) & set(h) for h in logs)


def test_rloo_logs_the_indicators_per_completion(tmp_path, tiny, prompts_dataset):
    from test_rloo import make_rloo_trainer

    trainer = make_rloo_trainer(tmp_path, tiny, prompts_dataset, parts=True, steps_per_generation=2, max_steps=2)
    trainer.train()
    logged = [h for h in trainer.state.log_history if "up/positive_tokens" in h]
    assert len(logged) == 2
    # RLOO's entries are completions: a micro-batch of 8 holds at most 8 of either sign.
    assert all(0 < h["up/positive_tokens"] + h["up/negative_tokens"] <= 8 for h in logged)
    assert all(math.isfinite(h["up/logp_adv_cov"]) for h in logged)


def test_grpo_and_rloo_anchor_pi_old_through_the_one_function(tmp_path, tiny, prompts_dataset, monkeypatch):
    """GRPO and RLOO get UP from `objective.anchored_old_logps` (pi_old := sg(pi_theta) where routed), GRPO on its
    (B, T) tokens, RLOO on its (B,) summed log-probabilities (async GRPO adds -A * r~: tests/test_async_grpo.py)."""
    from conftest import make_trainer
    from test_rloo import make_rloo_trainer

    import up_trl.trainers.grpo_trainer
    import up_trl.trainers.rloo_trainer
    from up_trl.objective.ratios import anchored_old_logps

    for module, make in (
        (up_trl.trainers.grpo_trainer, make_trainer),
        (up_trl.trainers.rloo_trainer, make_rloo_trainer),
    ):
        shapes = []

        def spy(old, logps, routes, shapes=shapes):
            shapes.append(old.dim())
            return anchored_old_logps(old, logps, routes)

        monkeypatch.setattr(module, "anchored_old_logps", spy)
        make(tmp_path / module.__name__, tiny, prompts_dataset, steps_per_generation=2, max_steps=1).train()
        assert shapes and set(shapes) == ({2} if module is up_trl.trainers.grpo_trainer else {1}), module.__name__
