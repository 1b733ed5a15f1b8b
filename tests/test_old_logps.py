"""`skip_on_policy_old_logps`: the old-log-prob pass runs only for the slices trained after an optimizer step, and
training is the same as with TRL's pass over the whole rollout batch (to float rounding)."""

import pytest
import torch
from conftest import make_trainer, param_snapshots
from trl import GRPOTrainer


def run(tmp_path, tiny, dataset, monkeypatch, **overrides):
    """Train; return (parameters after each step, rows of every no-grad forward, logged losses)."""
    no_grad_rows = []
    real_forward = GRPOTrainer._get_per_token_logps_and_entropies

    def recording_forward(self, model, input_ids, *args, **kwargs):
        if not torch.is_grad_enabled():
            no_grad_rows.append(input_ids.size(0))
        return real_forward(self, model, input_ids, *args, **kwargs)

    snapshots = param_snapshots()
    with monkeypatch.context() as patch:
        patch.setattr(GRPOTrainer, "_get_per_token_logps_and_entropies", recording_forward)
        trainer = make_trainer(tmp_path, tiny, dataset, callbacks=[snapshots], **overrides)
        trainer.train()
    losses = [r["loss"] for r in trainer.state.log_history if "loss" in r]
    return trainer, snapshots.params, no_grad_rows, losses


@pytest.mark.parametrize(
    "steps_per_generation, num_iterations, gradient_accumulation_steps, skipped_slices",
    [(2, 1, 1, 1), (2, 2, 1, 1), (4, 1, 2, 2)],
)
def test_training_is_unchanged_and_on_policy_slices_get_no_old_logp_pass(
    tmp_path, tiny, prompts_dataset, monkeypatch, steps_per_generation, num_iterations, gradient_accumulation_steps,
    skipped_slices,
):  # fmt: skip
    settings = dict(
        steps_per_generation=steps_per_generation,
        num_iterations=num_iterations,
        gradient_accumulation_steps=gradient_accumulation_steps,
        per_device_train_batch_size=4,
        max_steps=2 * steps_per_generation * num_iterations // gradient_accumulation_steps,  # two rollout batches
    )
    model, tokenizer = tiny
    state = {k: v.clone() for k, v in model.state_dict().items()}
    trl_pass = run(tmp_path / "a", tiny, prompts_dataset, monkeypatch, skip_on_policy_old_logps=False, **settings)
    model.load_state_dict(state)
    ours = run(tmp_path / "b", tiny, prompts_dataset, monkeypatch, skip_on_policy_old_logps=True, **settings)
    assert not trl_pass[0].skips_on_policy_old_logps and ours[0].skips_on_policy_old_logps

    # TRL: one pass over each rollout batch of 4 * steps_per_generation rows; ours: one per stale slice of 4 rows.
    assert trl_pass[2] == [4 * steps_per_generation] * 2
    assert ours[2] == [4] * 2 * (steps_per_generation - skipped_slices)
    assert ours[3] == pytest.approx(trl_pass[3], abs=1e-6)
    for step, params in trl_pass[1].items():
        for a, b in zip(params, ours[1][step]):
            torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)


def test_reused_on_policy_slice_keeps_its_first_pass_log_probs(tmp_path, tiny, prompts_dataset, monkeypatch):
    """num_iterations=2: slice 0 is on-policy at step 0 and stale at step 2, where its pi_old must be step 0's."""
    trainer = make_trainer(
        tmp_path, tiny, prompts_dataset, steps_per_generation=2, num_iterations=2, per_device_train_batch_size=4,
        max_steps=3,
    )  # fmt: skip
    seen = []
    real_compute_loss = type(trainer)._compute_loss

    def recording(self, model, inputs):
        seen.append((self._step, inputs.get("old_per_token_logps")))
        return real_compute_loss(self, model, inputs)

    monkeypatch.setattr(type(trainer), "_compute_loss", recording)
    captured = {}
    real_forward = GRPOTrainer._get_per_token_logps_and_entropies

    def recording_forward(self, model, input_ids, *args, **kwargs):
        out = real_forward(self, model, input_ids, *args, **kwargs)
        if torch.is_grad_enabled():
            captured[self._step] = out[0].detach().clone()
        return out

    monkeypatch.setattr(GRPOTrainer, "_get_per_token_logps_and_entropies", recording_forward)
    trainer.train()
    steps = [step for step, *_ in seen]
    assert steps == [0, 1, 2]
    assert seen[0][1] is None  # on-policy: no stored pi_old, the policy's own detached log-probs are used
    assert seen[1][1] is not None and not torch.isnan(seen[1][1]).any()  # stale: its own pass
    torch.testing.assert_close(seen[2][1], captured[0], atol=0, rtol=0)  # step 2 reuses slice 0 with step 0's
    assert not torch.equal(captured[2], captured[0])  # ... and the weights moved in between: really off-policy


def test_slice_uses_follow_the_buffer_order(tmp_path, tiny, prompts_dataset):
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, steps_per_generation=2, num_iterations=2,
                           per_device_train_batch_size=4)  # fmt: skip
    assert trainer._slice_uses(0) == [[0, 2], [1, 3]]
    assert trainer._slice_uses(4) == [[4, 6], [5, 7]]
    assert trainer._slice_uses(3) == [[], [3]]  # resumed mid-cycle: slice 0 is not trained on again


@pytest.mark.parametrize(
    "overrides", [dict(steps_per_generation=1), dict(steps_per_generation=2, loss_type="cispo", up_mode="off")]
)
def test_no_skip_where_trl_runs_no_pass_or_the_loss_is_not_ours(tmp_path, tiny, prompts_dataset, overrides):
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, **overrides)
    assert not trainer.skips_on_policy_old_logps
