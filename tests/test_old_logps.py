"""`skip_on_policy_old_logps`: the old-log-prob pass runs only for the slices trained after an optimizer step, and
training is the same as with TRL's pass over the whole rollout batch (to float rounding)."""

import pytest
import torch
from conftest import length_reward, make_trainer, param_snapshots, record_fused_head_rows
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


def assert_same_training(trl_pass, ours):
    assert not trl_pass[0].skips_on_policy_old_logps and ours[0].skips_on_policy_old_logps
    assert ours[3] == pytest.approx(trl_pass[3], abs=1e-6)
    for step, params in trl_pass[1].items():
        for a, b in zip(params, ours[1][step]):
            torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)


def run_both(tmp_path, tiny, dataset, monkeypatch, flag="skip_on_policy_old_logps", **settings):
    """The same training from the same weights with `flag` off (TRL's way), then on; the other savings off unless
    `settings` turns them on, so that each is compared alone (sharing prompts changes the rounding with the batch)."""
    model, _ = tiny
    state = {k: v.clone() for k, v in model.state_dict().items()}
    settings = {"share_prompt_prefix": False, **settings}
    trl_pass = run(tmp_path / "a", tiny, dataset, monkeypatch, **{flag: False}, **settings)
    model.load_state_dict(state)
    ours = run(tmp_path / "b", tiny, dataset, monkeypatch, **{flag: True}, **settings)
    return trl_pass, ours


# (steps_per_generation, num_iterations, gradient_accumulation_steps): rows of each old-log-prob forward, ours.
# Two rollout batches each; per_device_train_batch_size=4, so TRL's pass is 4 * steps_per_generation rows.
LAYOUTS = {
    (2, 1, 1): [4, 4],  # slice 0 of each batch is on-policy
    (2, 2, 1): [4, 4],  # ... and reused at step 2: its first pass's log-probs are kept
    (4, 1, 2): [4, 4, 4, 4],  # two on-policy slices per window of 2
    (3, 1, 2): [4, 4, 4],  # batches start mid-window: slices 0-1 on-policy, then only slice 0 (step 3 < 4)
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_training_is_unchanged_and_on_policy_slices_get_no_old_logp_pass(tmp_path, tiny, prompts_dataset,
                                                                         monkeypatch, layout):  # fmt: skip
    spg, iterations, accumulation = layout
    settings = dict(steps_per_generation=spg, num_iterations=iterations, gradient_accumulation_steps=accumulation,
                    per_device_train_batch_size=4, max_steps=2 * spg * iterations // accumulation)  # fmt: skip
    trl_pass, ours = run_both(tmp_path, tiny, prompts_dataset, monkeypatch, **settings)
    assert trl_pass[2] == [4 * spg] * 2
    assert ours[2] == LAYOUTS[layout]
    assert_same_training(trl_pass, ours)


def test_the_short_last_window_of_an_epoch_is_read_from_the_trainer(tmp_path, tiny, prompts_dataset, monkeypatch):
    """10 prompts, 1 per micro-step: 10 micro-steps an epoch, windows of 3, so transformers ends each epoch with a
    window of 1 ([0-2] [3-5] [6-8] [9], then [10-12] [13-15]). At the batch of step 12, slice 1 (step 13) follows
    an optimizer step: stale, although 13 // 3 == 12 // 3."""
    settings = dict(steps_per_generation=2, gradient_accumulation_steps=3, per_device_train_batch_size=4,
                    max_steps=6)  # fmt: skip
    trl_pass, ours = run_both(tmp_path, tiny, prompts_dataset.select(range(10)), monkeypatch, **settings)
    assert ours[0].state.epoch > 1 and sum(ours[2]) < sum(trl_pass[2])
    assert_same_training(trl_pass, ours)


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


def test_no_skip_with_a_plain_grpo_config_or_vllm_importance_sampling(tmp_path, tiny, prompts_dataset):
    from trl import GRPOConfig

    from up_trl import UPGRPOTrainer

    model, tokenizer = tiny
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=4, num_generations=4,
                      steps_per_generation=2, report_to="none")  # fmt: skip
    plain = UPGRPOTrainer(model=model, reward_funcs=length_reward, args=args, train_dataset=prompts_dataset,
                          processing_class=tokenizer)  # fmt: skip
    assert plain.up_is_off_policy and not plain.skips_on_policy_old_logps  # the field is UPGRPOConfig's
    ours = make_trainer(tmp_path, tiny, prompts_dataset, steps_per_generation=2, per_device_train_batch_size=4)
    assert ours.skips_on_policy_old_logps
    ours.use_vllm = ours.vllm_importance_sampling_correction = True
    assert not ours.skips_on_policy_old_logps


def test_compact_cpu_lm_head_scores_only_completion_tokens_with_the_same_log_probs(
    tmp_path, tiny, prompts_dataset, monkeypatch
):
    """`compact_cpu_lm_head`: TRL's fused head gets only the labelled positions on CPU (it gets all of them with the
    flag off), the log-probs are the same, and TRL's own choice is back after the call."""
    from trl.trainer import utils as trl_utils

    rows = record_fused_head_rows(monkeypatch)
    input_ids = torch.randint(5, 60, (3, 12), generator=torch.Generator().manual_seed(0))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[0, :3] = 0  # left padding of the prompt
    attention_mask[1, -4:] = 0  # a completion that ended early
    logps = {}
    for compact in (False, True):
        trainer = make_trainer(tmp_path / str(compact), tiny, prompts_dataset, compact_cpu_lm_head=compact)
        with torch.no_grad():
            logps[compact], _, _ = trainer._get_per_token_logps_and_entropies(
                trainer.model, input_ids, attention_mask, 5
            )
        assert trl_utils._use_triton(torch.device("cpu")) is False  # restored
    completion_mask = attention_mask[:, -5:]
    assert rows == [3 * 11, int(attention_mask[:, -5:].sum())]  # every shifted position, then the labelled ones
    torch.testing.assert_close(logps[True] * completion_mask, logps[False] * completion_mask, atol=1e-6, rtol=0)


def test_compact_cpu_lm_head_trains_the_same(tmp_path, tiny, prompts_dataset, monkeypatch):
    trl_pass, ours = run_both(tmp_path, tiny, prompts_dataset, monkeypatch, flag="compact_cpu_lm_head",
                              steps_per_generation=2, max_steps=4, per_device_train_batch_size=4)  # fmt: skip
    assert ours[3] == pytest.approx(trl_pass[3], abs=1e-6)
    for step, params in trl_pass[1].items():
        for a, b in zip(params, ours[1][step]):
            torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)
