"""What the collapse study runs (benchmarks/collapse.py): the configs (parent, UP, UP + each guard, the dead state's
candidates, "+ safe"), the rollout reuse levels, the settings and their pre-registered thresholds (collapse.py's
docstring states the rules)."""

from __future__ import annotations

import bench as se  # the toy task's CONFIGS
import staleness_sweep  # its LEVELS (bench.LEVELS)

from up_trl.objective.guards import SAFE_UP

FAMILIES = ("DAPO", "GRPO", "GSPO")
# The candidate guards as run in the full runs (names "UP-<family> + <guard>"), one setting each, chosen on the pilot.
GUARDS: dict[str, dict] = {
    "log-ratio": dict(up_positive_log_ratio_bound=0.5),  # the existing option (0.2 collapsed in the pilot)
    "capacity": dict(up_positive_capacity_share=0.1),  # the paper's terms (0.02 ran away more in the pilot)
    "KL": dict(up_positive_kl_coef=1.0),  # KL(pi_old || pi) on positive tokens (0.1 braked too little on the tail)
    "entropy fallback": dict(up_entropy_fallback_threshold=2.0),  # nats; the tasks start at 1.0-1.5
    # Suggested by the cause (collapse_cause.py): rare positive tokens (pi_old < 0.05) keep the parent's clip.
    "rare clip": dict(up_positive_min_prob=0.05),
}
# "+ guard": the only candidate that met the goal on the stress runs (the others had more runaway or collapsed runs
# than their parents there; on the toy runs none met it, docs/collapse.md); the SmolLM2 runs use this name.
GUARDS["guard"] = GUARDS["rare clip"]
# The settings the pilot compared (names "UP-<family> + pilot <name>").
PILOT_GUARDS: dict[str, dict] = {
    "log-ratio 0.5": dict(up_positive_log_ratio_bound=0.5),
    "log-ratio 0.2": dict(up_positive_log_ratio_bound=0.2),
    "capacity 0.1": dict(up_positive_capacity_share=0.1),
    "capacity 0.02": dict(up_positive_capacity_share=0.02),
    "KL 0.1": dict(up_positive_kl_coef=0.1),
    "KL 1.0": dict(up_positive_kl_coef=1.0),
    "entropy 2.0": dict(up_entropy_fallback_threshold=2.0),
}
# Safe UP (PRE-REGISTRATION 2 in collapse.py's docstring): the dead state's candidates (TRL's own settings, so the
# parents get them too) and the recommendation "+ safe", one setting for every family.
DEAD_STATE_CANDIDATES: dict[str, dict] = {
    "beta 0.05": dict(beta=0.05),  # a KL to the reference: a gradient where every advantage is 0
    "beta 0.01": dict(beta=0.01),
    "epsilon 0.1": dict(epsilon=0.1),  # a tighter clip-low: negatives stop moving at r < 0.9 instead of 0.8
}
SAFE = dict(
    SAFE_UP
)  # up_positive_min_prob=0.05 (the rare clip: runaway) + beta=0.05 (a KL to the reference: dead state)
CONFIGS: dict[str, dict] = {}
for family in FAMILIES:
    CONFIGS[family] = dict(se.CONFIGS[family])
    CONFIGS[f"UP-{family}"] = dict(se.CONFIGS[f"UP-{family}"])
    for guard, settings in GUARDS.items():
        CONFIGS[f"UP-{family} + {guard}"] = {**se.CONFIGS[f"UP-{family}"], **settings}
    for guard, settings in PILOT_GUARDS.items():
        CONFIGS[f"UP-{family} + pilot {guard}"] = {**se.CONFIGS[f"UP-{family}"], **settings}
    for candidate, settings in DEAD_STATE_CANDIDATES.items():
        if family == "GSPO" and "epsilon" in settings:  # GSPO's sequence-level clip is 3e-4: 0.1 is no tighter
            continue
        CONFIGS[f"{family} + {candidate}"] = {**se.CONFIGS[family], **settings}
        CONFIGS[f"UP-{family} + {candidate}"] = {**se.CONFIGS[f"UP-{family}"], **settings}
    CONFIGS[f"UP-{family} + safe"] = {**se.CONFIGS[f"UP-{family}"], **SAFE}

# Updates per rollout batch of 128 -> how the batch is reused (staleness_sweep.LEVELS, plus more passes).
LEVELS: dict[int, dict] = {
    **{level: staleness_sweep.LEVELS[level] for level in (4, 8, 16)},
    32: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=8),
    64: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=16),
}
# Every arm: the opt-in shared-prompt forward (measured ~25% less CPU here); it needs activation checkpointing off.
SPEED = dict(share_prompt_prefix=True, activation_checkpointing=False)
# Logged every step and kept (rounded) in each record: the curves the figures and the warning's tests read.
CURVE_KEYS = ("entropy", "reward", "rewards/true_accuracy/mean", "frac_reward_zero_std",
              "up/positive_abs_log_ratio_mean", "up/would_clip_frac", "up/guard_masked_frac",
              "up/capacity_masked_frac", "up/entropy_fallback",
              # the leading indicators (up_trl.objective.indicators), TRL's clip counts, the gradient norm and the KL
              "up/logp_adv_cov", "up/positive_tokens", "up/negative_tokens", "up/negative_clipped_log_ratio_mean",
              "clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean", "grad_norm", "kl")  # fmt: skip


TAIL_LENGTH, TAIL_FILLER, TAIL_NOISE, TAIL_POOL = 8, ".", 0.2, "abcdefghijklmnopqrstuvwxyz"

# The pre-registered rules (module docstring).
COLLAPSE_ACCURACY, COLLAPSE_ENTROPY, RUNAWAY_MARGIN, LOW_ENTROPY = 0.05, 3.0, 1.0, 0.1
FINAL_WINDOW, INITIAL_WINDOW, STRESS_STEPS = 50, 4, 300
FAMILY_CONFIGS = [
    name
    for f in ("DAPO", "GRPO", "GSPO")
    for name in (
        f,
        f"UP-{f}",
        *(f"UP-{f} + {g}" for g in ("log-ratio", "capacity", "KL", "entropy fallback", "rare clip")),
    )
]
# PRE-REGISTRATION 2 (safe UP): the parent, UP, the parent with the KL UP + safe adds, and UP + safe.
SAFE_CONFIGS = [name for f in FAMILIES for name in (f, f"UP-{f}", f"{f} + beta 0.05", f"UP-{f} + safe")]
DEAD_STATE_CONFIGS = [
    name
    for f in ("DAPO", "GRPO")
    for name in (
        f"UP-{f} + rare clip",
        f"UP-{f} + beta 0.05",
        f"{f} + beta 0.01",
        f"UP-{f} + beta 0.01",
        f"{f} + epsilon 0.1",
        f"UP-{f} + epsilon 0.1",
    )
]
SETTINGS: dict[str, dict] = {
    "toy": dict(task="toy", levels=[4, 16], seeds=list(range(10)), max_steps=300, configs=FAMILY_CONFIGS),
    "stress": dict(task="tail", levels=[16], seeds=list(range(10)), max_steps=STRESS_STEPS, configs=FAMILY_CONFIGS),
    "smollm2": dict(task="smollm2", levels=[8], seeds=[0, 1, 2], max_steps=32,
                    configs=["GSPO", "UP-GSPO", "UP-GSPO + guard"]),
    "safe_toy": dict(task="toy", levels=[4, 16], seeds=list(range(10, 20)), max_steps=300, configs=SAFE_CONFIGS,
                     model_from_path=True),
    "safe_stress": dict(task="tail", levels=[16], seeds=list(range(10, 20)), max_steps=STRESS_STEPS,
                        configs=SAFE_CONFIGS, model_from_path=True),
}  # fmt: skip
SETTING_TEXT = {
    "toy": "sample_efficiency.py's toy task, 300 steps, lr 1e-3 constant, beta 0",
    "stress": f"the toy with a reward-irrelevant tail of {TAIL_LENGTH} tokens, 300 steps, lr 1e-3 constant, beta 0",
    "smollm2": "SmolLM2-135M-Instruct, arithmetic mul1, 32 steps, 8 updates per rollout, lr 3e-5, beta 0",
    "safe_toy": "sample_efficiency.py's toy task, 300 steps, lr 1e-3 constant, beta 0 unless the config sets it",
    "safe_stress": f"the toy with a reward-irrelevant tail of {TAIL_LENGTH} tokens, 300 steps, lr 1e-3 constant, "
    "beta 0 unless the config sets it",
}
# real_model.py's flags for the SmolLM2 runs (those of benchmarks/results/real_model_seeds, README).
SMOLLM2 = dict(
    dataset="arithmetic",
    arithmetic_ops=["mul1"],
    arithmetic_few_shot=0,
    benchmark="arithmetic",
    benchmark_limit=200,
    k=16,
    eval_seed=42,
    eval_batch_size=64,
    max_steps=32,
    max_completion_length=64,
    per_device_train_batch_size=8,
    steps_per_generation=4,
    num_iterations=2,
    delta=3.0,
    updates_per_rollout=8,
    learning_rate=3e-5,
)  # fmt: skip  (real_model.train_argv passes 3e-5)
