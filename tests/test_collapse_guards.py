"""The rare clip's setting (docs/collapse.md), UP's one optional guard: a bad value fails with a message that says
what to set, it is off by default (the paper's UP) in every UP config, and every trainer reads it. The four guards
the collapse studies did not support are gone from the configs (a typo-like unknown field, not a silent no-op)."""

import pytest

from up_trl import UPAsyncGRPOConfig, UPGRPOConfig, UPRLOOConfig

REMOVED = (
    "up_positive_log_ratio_bound",
    "up_positive_capacity_share",
    "up_positive_kl_coef",
    "up_entropy_fallback_threshold",
)


@pytest.mark.parametrize(
    "value",
    [0.0, 1.0, 2.0, float("nan"), float("inf")],  # 1.0: every positive token rare, UP switched off unsaid
)
def test_out_of_range_values_say_what_to_set(tmp_path, value):
    with pytest.raises(ValueError, match=rf"up_positive_min_prob={value} must be in \(0, 1\) .*collapse.md.*or None"):
        UPGRPOConfig(output_dir=str(tmp_path), up_positive_min_prob=value)


@pytest.mark.parametrize("config", [UPGRPOConfig, UPRLOOConfig, UPAsyncGRPOConfig])
def test_off_by_default_and_the_removed_guards_are_gone(tmp_path, config):
    args = config(output_dir=str(tmp_path), use_cpu=True, bf16=False)
    assert args.up_positive_min_prob is None
    assert args.up_collapse_warning is True and args.up_stop_on_collapse is False
    for name in REMOVED:
        assert not hasattr(args, name), name
        with pytest.raises(TypeError, match=name):
            config(output_dir=str(tmp_path), **{name: 0.5})


def test_the_rare_clip_is_read_from_args(tmp_path, tiny, prompts_dataset):
    from conftest import make_trainer

    plain = make_trainer(tmp_path / "plain", tiny, prompts_dataset)
    assert plain.up_positive_min_prob is None
    guarded = make_trainer(tmp_path / "guarded", tiny, prompts_dataset, up_positive_min_prob=0.05)
    assert guarded.up_positive_min_prob == 0.05
