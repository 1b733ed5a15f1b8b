"""The candidate guards' settings (docs/collapse.md): bad values fail with a message that says what to set, a trainer
refuses a guard it does not implement, and with none set every UP trainer reads an empty guard set (the paper's UP)."""

import pytest

from up_trl import UPGRPOConfig, UPRLOOConfig, UPRLOOTrainer


@pytest.mark.parametrize(
    "field, value, wanted",
    [
        ("up_positive_capacity_share", 0.0, r"in \(0, 1\]"),
        ("up_positive_capacity_share", 1.5, r"in \(0, 1\]"),
        ("up_positive_kl_coef", -1.0, "a finite number above 0"),
        ("up_positive_kl_coef", float("inf"), "a finite number above 0"),
        ("up_positive_log_ratio_bound", float("nan"), "a finite number above 0"),
        ("up_positive_log_ratio_bound", 0.0, "a finite number above 0"),
        ("up_entropy_fallback_threshold", 0.0, "a finite number above 0"),
        ("up_positive_min_prob", 0.0, r"in \(0, 1\)"),
        ("up_positive_min_prob", 1.0, r"in \(0, 1\)"),  # every positive token rare: UP switched off unsaid
        ("up_positive_min_prob", 2.0, r"in \(0, 1\)"),
    ],
)
def test_out_of_range_guard_values_say_what_to_set(tmp_path, field, value, wanted):
    with pytest.raises(ValueError, match=rf"{field}={value} must be {wanted} .*docs/collapse.md.*or None"):
        UPGRPOConfig(output_dir=str(tmp_path), **{field: value})


def test_defaults_are_off_and_the_paper_objective(tmp_path):
    args = UPGRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False)
    for field in (
        "up_positive_log_ratio_bound",
        "up_positive_capacity_share",
        "up_positive_kl_coef",
        "up_entropy_fallback_threshold",
        "up_positive_min_prob",
    ):
        assert getattr(args, field) is None
    assert args.up_collapse_warning is True and args.up_stop_on_collapse is False


def test_a_trainer_refuses_a_guard_it_does_not_implement(tmp_path, tiny, prompts_dataset):
    from conftest import length_reward

    model, tokenizer = tiny
    args = UPRLOOConfig(
        output_dir=str(tmp_path),
        use_cpu=True,
        bf16=False,
        report_to="none",
        beta=0.0,
        per_device_train_batch_size=8,
        num_generations=4,
        up_positive_capacity_share=0.1,
    )
    with pytest.raises(ValueError, match="up_positive_capacity_share is not implemented for UPRLOOTrainer: unset"):
        UPRLOOTrainer(
            model=model,
            reward_funcs=length_reward,
            args=args,
            train_dataset=prompts_dataset,
            processing_class=tokenizer,
        )


def test_guards_read_from_args(tmp_path, tiny, prompts_dataset):
    from conftest import make_trainer

    plain = make_trainer(tmp_path / "plain", tiny, prompts_dataset)
    assert plain.up_guards == {} and plain.up_positive_min_prob is None
    guarded = make_trainer(
        tmp_path / "guarded", tiny, prompts_dataset, up_positive_min_prob=0.05, up_positive_kl_coef=1.0
    )
    assert guarded.up_positive_min_prob == 0.05 and guarded.up_guards == {"positive_kl_coef": 1.0}
