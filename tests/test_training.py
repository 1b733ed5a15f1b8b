"""Short real training runs on a tiny model, the refusals, and the on-policy notice."""

import logging
import warnings

import pytest
import torch
from conftest import cpu_args, length_reward, logged, make_rloo_trainer, make_trainer
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

import up_trl
from up_trl import UPGRPOConfig, UPGRPOTrainer
from up_trl.models.offline import tiny_model_and_tokenizer
from up_trl.trainers.grpo_config import CLIPPED_LOSS_TYPES, OTHER_LOSS_TYPES
from up_trl.trainers.grpo_trainer import UP_METRICS
from up_trl.trainers.shared import HAS_ACTIVATION_CHECKPOINTING

# TRL's own, logged by the parent's loss under UP too
CLIP_RATIO_METRICS = tuple(f"clip_ratio/{k}" for k in "low_mean high_mean region_mean low_min high_max".split())


def _train(tmp_path, tiny, dataset, **overrides):
    before = {n: p.detach().clone() for n, p in tiny[0].named_parameters()}
    trainer = make_trainer(tmp_path, tiny, dataset, **overrides)
    trainer.train()
    return trainer, before


def _changed(model, before):
    return sum(not torch.equal(p.detach(), before[n]) for n, p in model.named_parameters() if n in before)


OFF_POLICY_RUNS = [
    pytest.param(dict(num_iterations=2), id="num_iterations2"),
    pytest.param(dict(steps_per_generation=4, gradient_accumulation_steps=2, per_device_train_batch_size=4),
                 id="steps_per_generation_gt_ga"),
    pytest.param(dict(num_iterations=2, loss_type="dapo", epsilon_high=0.28), id="dapo"),
    pytest.param(dict(num_iterations=2, importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4),
                 id="gspo_sequence"),
]  # fmt: skip


@pytest.mark.parametrize("overrides", OFF_POLICY_RUNS)
def test_off_policy_training_changes_parameters_and_logs_up_metrics(tmp_path, tiny, prompts_dataset, overrides):
    trainer, before = _train(tmp_path, tiny, prompts_dataset, **overrides)
    assert trainer.up_is_off_policy
    assert _changed(trainer.model, before) > 0
    for key in UP_METRICS + CLIP_RATIO_METRICS:
        assert logged(trainer, key), f"{key} never logged"
    # Off-policy for real: positive tokens drifted from pi_old by the second step.
    assert max(logged(trainer, "up/positive_abs_log_ratio_mean")) > 0
    assert all(0 <= v <= 1 for v in logged(trainer, "up/capacity_up_mean"))


def test_clip_ratio_metrics_say_what_was_clipped_in_a_real_run(tmp_path, prompts_dataset):
    # Same seed, so the same reused batch at step 2: UP clips no positive token (r~ = 1), negatives as the parent.
    seen = {}
    for up_mode in ("asymmetric", "off"):
        tiny = tiny_model_and_tokenizer(seed=0)
        trainer, _ = _train(tmp_path / up_mode, tiny, prompts_dataset, num_iterations=2, up_mode=up_mode)
        seen[up_mode] = {k: logged(trainer, k) for k in CLIP_RATIO_METRICS + ("up/would_clip_frac",)}
    assert seen["off"]["clip_ratio/high_mean"][-1] > 0
    assert seen["asymmetric"]["clip_ratio/high_mean"] == [0.0, 0.0]
    assert seen["asymmetric"]["clip_ratio/low_mean"] == seen["off"]["clip_ratio/low_mean"]
    assert seen["asymmetric"]["up/would_clip_frac"] == seen["off"]["up/would_clip_frac"]
    assert seen["asymmetric"]["up/would_clip_frac"][-1] > 0


def test_training_with_kl_reference_loaded_from_saved_folder(tmp_path, prompts_dataset, tiny_model):
    args = cpu_args(tmp_path, beta=0.04, num_iterations=2)
    trainer = UPGRPOTrainer(model=tiny_model, reward_funcs=length_reward, args=args, train_dataset=prompts_dataset)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert _changed(trainer.model, before) > 0
    assert logged(trainer, "kl")


def test_training_with_peft_lora_changes_only_adapters(tmp_path, tiny, prompts_dataset):
    from peft import LoraConfig

    model, tokenizer = tiny
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    kwargs = dict(train_dataset=prompts_dataset, processing_class=tokenizer, peft_config=lora)
    trainer = UPGRPOTrainer(model, length_reward, args=cpu_args(tmp_path, num_iterations=2), **kwargs)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed and all("lora_" in n for n in changed)
    assert logged(trainer, "up/positive_token_frac")


def test_plain_text_prompts_and_plain_grpo_config(tmp_path, tiny):
    model, tokenizer = tiny
    keep = "output_dir use_cpu bf16 report_to per_device_train_batch_size num_generations max_completion_length"
    keep += " max_steps logging_steps learning_rate save_strategy seed num_iterations"
    args = GRPOConfig(**{k: v for k, v in cpu_args(tmp_path, num_iterations=2).to_dict().items() if k in keep.split()})
    dataset = Dataset.from_dict({"prompt": [f"{i} * 2 =" for i in range(16)]})
    trainer = UPGRPOTrainer(model, length_reward, args=args, processing_class=tokenizer, train_dataset=dataset)
    assert trainer.up_mode == "asymmetric"
    trainer.train()
    assert logged(trainer, "up/capacity_clipped_mean")


def test_vision_language_inputs_reach_the_parent_forward_untouched(tmp_path, tiny, prompts_dataset, monkeypatch):
    trainer = make_trainer(tmp_path, tiny, prompts_dataset)
    seen = {}
    real_forward = GRPOTrainer._get_per_token_logps_and_entropies

    def recording_forward(self, *args, **kwargs):
        for key in ("pixel_values", "image_grid_thw"):
            seen[key] = kwargs.pop(key)  # a text model cannot take them: record, then forward the text
        return real_forward(self, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "_get_per_token_logps_and_entropies", recording_forward)
    pixel_values, grid = torch.randn(4, 3), torch.tensor([[1, 2, 2]])
    batch = dict(prompt_ids=torch.tensor([[5, 6], [7, 8]]), completion_ids=torch.tensor([[9, 10, 11], [12, 13, 14]]))
    batch |= dict(prompt_mask=torch.ones(2, 2, dtype=torch.long), completion_mask=torch.ones(2, 3, dtype=torch.long))
    batch |= dict(advantages=torch.tensor([1.0, -1.0]), num_items_in_batch=torch.tensor(6.0))
    batch |= dict(pixel_values=pixel_values, image_grid_thw=grid)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    trainer.compute_loss(trainer.model, batch)
    assert seen["pixel_values"] is pixel_values and seen["image_grid_thw"] is grid


@pytest.mark.parametrize("loss_type", ["cispo", "sapo", "vespo"])
def test_refuses_other_objectives_unless_off(tmp_path, loss_type):
    with pytest.raises(ValueError, match=f"loss_type='{loss_type}' is a different objective.*up_mode='off'"):
        UPGRPOConfig(output_dir=str(tmp_path), loss_type=loss_type, use_cpu=True)
    assert UPGRPOConfig(output_dir=str(tmp_path), loss_type=loss_type, up_mode="off", use_cpu=True).up_mode == "off"


@pytest.mark.parametrize("config_name", ["UPGRPOConfig", "UPRLOOConfig"])
def test_accepts_liger_kernel_and_the_loss_is_still_ups(tmp_path, tiny, prompts_dataset, config_name):
    # TRL applies Liger's layer kernels only, never its fused loss: the loss is still UP's `_compute_loss`.
    config = getattr(up_trl, config_name)(output_dir=str(tmp_path), use_liger_kernel=True, use_cpu=True)
    assert config.use_liger_kernel and config.up_mode == "asymmetric"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # TRL: use_liger_kernel is deprecated for use_kernels
        rloo = config_name == "UPRLOOConfig"
        trainer = make_trainer(tmp_path, tiny, prompts_dataset, rloo=rloo, use_liger_kernel=True)
    assert trainer.args.liger_kernel_config == {"fused_linear_cross_entropy": False}
    calls = []
    original = type(trainer)._compute_loss
    trainer._compute_loss = lambda model, inputs: calls.append(1) or original(trainer, model, inputs)
    trainer.current_gradient_accumulation_steps = 1
    loss = trainer.compute_loss(trainer.model, _tiny_batch(trainer, rloo=config_name == "UPRLOOConfig"))
    assert calls == [1] and torch.isfinite(loss)


def _tiny_batch(trainer, rloo: bool) -> dict:
    """Two completions of a generation batch as the parents' losses read it (stale old log-probs, mixed signs)."""
    g, vocab = torch.Generator().manual_seed(0), trainer.model.config.vocab_size
    prompt_ids, completion_ids = (torch.randint(4, vocab, (2, n), generator=g) for n in (3, 4))
    batch = dict(prompt_ids=prompt_ids, completion_ids=completion_ids, advantages=torch.tensor([1.0, -1.0]))
    batch |= dict(prompt_mask=torch.ones(2, 3).long(), completion_mask=torch.ones(2, 4).long())
    if rloo:
        return batch | {"old_logps": torch.full((2,), -20.0)}
    return batch | {"old_per_token_logps": torch.full((2, 4), -5.0), "num_items_in_batch": torch.tensor(8.0)}


@pytest.mark.parametrize("loss_type", CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES)
def test_every_trl_loss_type_trains_with_up_off(tmp_path, tiny, prompts_dataset, loss_type):
    level = "sequence" if loss_type == "luspo" else "token"  # TRL: luspo is sequence level only
    overrides = dict(loss_type=loss_type, up_mode="off", num_iterations=2, importance_sampling_level=level)
    trainer, before = _train(tmp_path, tiny, prompts_dataset, **overrides)
    losses = logged(trainer, "loss")
    assert len(losses) == 2 and all(torch.isfinite(torch.tensor(losses)))
    assert _changed(trainer.model, before) > 0
    if loss_type in OTHER_LOSS_TYPES:  # other objectives: the parent's metrics only, no clipped-surrogate value
        assert not logged(trainer, "up/capacity_clipped_mean")
    else:
        assert logged(trainer, "up/capacity_clipped_mean") and logged(trainer, "clip_ratio/high_mean")


def test_the_anchor_is_set_only_inside_ups_own_loss_call():
    """Without `__init__` the override behaves as the parent's: the anchor exists only in UP's loss."""
    assert UPGRPOTrainer.get_high_entropy_mask is GRPOTrainer.get_high_entropy_mask  # not overridden any more
    trainer = UPGRPOTrainer.__new__(UPGRPOTrainer)
    assert "_up_anchor" not in vars(trainer) and not hasattr(UPGRPOTrainer, "_up_anchor")
    seen = []
    with trainer._parent_forward(seen.append):
        assert vars(trainer)["_up_anchor"] == seen.append
    assert "_up_anchor" not in vars(trainer)


@pytest.mark.parametrize("ga, spg, num_iterations, use_vllm, off_policy", [
    pytest.param(1, 1, 1, False, False, id="on_policy"),
    pytest.param(1, 1, 1, True, False, id="vllm_aligned"),  # TRL recomputes pi_old with the current weights
    pytest.param(2, 2, 1, True, False, id="vllm_aligned_spg_eq_ga"),
    pytest.param(4, 1, 2, False, False, id="num_iterations2_within_one_step"),  # both passes before the update
    pytest.param(1, 1, 2, False, True, id="num_iterations2"),
    pytest.param(2, 4, 1, True, True, id="spg_gt_ga_vllm"),
    pytest.param(3, 2, 1, False, True, id="ga_not_a_multiple"),
])  # fmt: skip
def test_up_is_off_policy_is_trl_alignment_condition(
    tmp_path, tiny, prompts_dataset, ga, spg, num_iterations, use_vllm, off_policy
):
    trainer = make_trainer(tmp_path, tiny, prompts_dataset)
    trainer.args.gradient_accumulation_steps, trainer.args.steps_per_generation = ga, spg
    trainer.num_iterations = num_iterations
    trainer.use_vllm = trainer.vllm_importance_sampling_correction = use_vllm
    assert trainer.up_is_off_policy == off_policy
    assert (ga % (spg * num_iterations) != 0) == off_policy  # TRL's condition for stale old_per_token_logps


@pytest.mark.parametrize("overrides, warns", [
    pytest.param({}, True, id="on_policy_default"),
    pytest.param(dict(num_iterations=2), False, id="num_iterations2"),
    pytest.param(dict(up_mode="off"), False, id="up_off"),
])  # fmt: skip
def test_on_policy_notice(tmp_path, tiny, prompts_dataset, caplog, overrides, warns):
    with caplog.at_level(logging.WARNING):
        trainer = make_trainer(tmp_path, tiny, prompts_dataset, **overrides)
    said = [r.getMessage() for r in caplog.records if "equals its parent" in r.getMessage()]
    assert bool(said) == warns
    assert trainer.up_is_off_policy == (overrides.get("num_iterations", 1) > 1)
    if warns:
        assert len(said) == 1 and "vllm" not in said[0].split("UP differs only off-policy")[1].lower()
        assert "set num_iterations > 1, or steps_per_generation > gradient_accumulation_steps" in said[0]


@pytest.mark.parametrize("config_name", ["UPGRPOConfig", "UPRLOOConfig", "UPAsyncGRPOConfig"])
def test_configs_do_not_warn_about_gradient_checkpointing(tmp_path, config_name):
    """Checkpointing stays on as `activation_checkpointing`, without a FutureWarning."""
    config_class = getattr(up_trl, config_name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        config = config_class(output_dir=str(tmp_path), use_cpu=True, report_to="none")
        assert config.activation_checkpointing is True and config.gradient_checkpointing is True
        off = config_class(output_dir=str(tmp_path), use_cpu=True, report_to="none", activation_checkpointing=False)
        assert off.activation_checkpointing is False and off.gradient_checkpointing is False
    if HAS_ACTIVATION_CHECKPOINTING:  # the old name is transformers' deprecated alias: its own warning
        with pytest.warns(FutureWarning, match="gradient_checkpointing"):
            old = config_class(output_dir=str(tmp_path), use_cpu=True, report_to="none", gradient_checkpointing=False)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            old = config_class(output_dir=str(tmp_path), use_cpu=True, report_to="none", gradient_checkpointing=False)
    assert old.activation_checkpointing is False and old.gradient_checkpointing is False


@pytest.mark.parametrize("overrides, off_policy", [
    pytest.param({}, False, id="on_policy"),
    pytest.param(dict(steps_per_generation=2), True, id="steps_per_generation2"),
    pytest.param(dict(num_iterations=2), True, id="num_iterations2"),
])  # fmt: skip
def test_trl_computes_pi_old_exactly_when_up_says_it_is_off_policy(
    tmp_path, tiny, prompts_dataset, overrides, off_policy
):
    """TRL computes `old_per_token_logps` exactly when `up_is_off_policy` is True."""
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, max_steps=2, **overrides)
    seen, compute = [], trainer._compute_loss
    trainer._compute_loss = lambda model, inputs: (
        seen.append(inputs.get("old_per_token_logps") is not None) or compute(model, inputs)
    )
    trainer.train()
    assert trainer.up_is_off_policy == off_policy and len(seen) >= 2 and set(seen) == {off_policy}


@pytest.mark.parametrize("trainer_name", ["grpo", "rloo"])
def test_trls_log_reports_each_up_metric_as_its_mean_nan_skipped(tmp_path, tiny, prompts_dataset, trainer_name):
    """UP appends its rates to `_metrics` (NaN: nothing to count) and leaves the reduction to the parent's `log`."""
    from up_trl.run.parts import nonfinite_guard

    trainer = (make_trainer if trainer_name == "grpo" else make_rloo_trainer)(tmp_path, tiny, prompts_dataset)
    trainer._metrics["train"].clear()
    trainer._metrics["train"]["up/capacity_up_mean"] += [0.25, float("nan"), 0.75]
    trainer._metrics["train"]["up/would_clip_frac"] += [float("nan")]
    nonfinite_guard(trainer).record(3)  # the part's count, through the same `_metrics`
    trainer.log({})
    logged = trainer.state.log_history[-1]
    assert logged["up/capacity_up_mean"] == pytest.approx(0.5) and logged["up/nonfinite_skipped_steps"] == 3
    assert logged.get("up/would_clip_frac") is None or logged["up/would_clip_frac"] != logged["up/would_clip_frac"]
    assert not trainer._metrics["train"]  # one logging window each
