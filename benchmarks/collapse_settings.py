"""What the collapse study runs (benchmarks/collapse.py): the configs (parent, UP, UP + each guard, the dead state's
candidates, "+ safe"), the rollout reuse levels, the settings and their pre-registered thresholds, and the
pre-registrations themselves (moved here from collapse.py's docstring, where they were committed before the runs).

PRE-REGISTRATION (committed before the full runs; pilots with seeds 0-9 at level 4 and seeds 0-4 at 32/64 updates
per rollout and lr 3e-3, and seeds 0-2 of the tail task, all with other output folders, chose the stress setting
and one value per guard; docs/collapse.md reports them)

Settings. Every arm: UPGRPOTrainer (up_mode="off" is the parent bit for bit), 16 prompts x 8 completions a rollout
batch, lr 1e-3 constant, beta 0, temperature 1, 300 optimizer steps, share_prompt_prefix=True (with activation
checkpointing off; ~25% less CPU per run here, so these runs differ from the published staleness sweep in float
rounding and follow their own trajectories).
- toy: sample_efficiency.py's task (reply a to "a+b=", a 2-token reply), 4 and 16 updates per rollout batch
  (staleness_sweep.py's levels), seeds 0-9, DAPO, GRPO, GSPO families.
- stress: the same task with a reward-irrelevant tail: the warm start replies a random digit then 8 tokens, each "."
  (p ~ 0.8) or a random letter (p ~ 0.008), then EOS (`warm_start_tail`), the reward still reads the first
  character only; 16 updates per rollout batch; seeds 0-9; the three families. In the spirit of the public report
  (long replies of which the reward reads one part, reuse, beta 0, constant lr). The pilots found no setting of the
  plain toy where UP collapses often (more reuse, 32-64 updates, or lr 3e-3: UP collapsed on 0 of 30 runs there);
  on the tail task UP-DAPO and UP-GRPO ran away (entropy +1 to +1.6 nats in 300 steps) where their parents did not.
- smollm2: SmolLM2-135M-Instruct as in benchmarks/results/real_model_seeds (arithmetic mul1, 32 steps, batch 8,
  steps_per_generation 4, num_iterations 2 = 8 updates per rollout, lr 3e-5, delta 3.0, beta 0), seeds 0-2, GSPO,
  UP-GSPO, UP-GSPO + the guard chosen on the toy and stress runs; each trained model scored with `up-trl eval` on
  the 16 held-out mul1 problems (k 16, temperature 1, eval seed 42).
Configs per family: the parent, UP, and UP + each candidate guard at the value the pilot chose (GUARDS): the
log-ratio bound 0.5, the capacity share 0.1, the positive-token KL coefficient 1.0, the entropy fallback at 2.0 nats,
and "rare clip" (positive tokens with pi_old < 0.05 keep the parent's clip; the value and the guard come from the
cause analysis, benchmarks/collapse_cause.py, run after the pilot, not from a pilot of its own).

Rules (fixed before the full runs). Final = mean over the logged values of the last 50 steps (SmolLM2: 8 steps);
initial entropy = mean over the first 4 steps (the first rollout batch, where the arms barely differ).
- collapsed: final true accuracy (SmolLM2: final training reward) < 0.05, or final entropy > 3.0 nats (the
  vocabulary's uniform entropy is ln 104 = 4.64; corrected after the runs: the vocabulary has 101 tokens,
  ln 101 = 4.62).
- entropy runaway: final entropy > initial entropy + 1.0 nat.
- SmolLM2 also reports (not counted as collapse) final entropy < 0.1 nats: the "other way" of the public numbers.
Goal (per guard): at every setting, level and family measured, the guard has no more collapsed runs and no more
runaway runs than the parent (none where the parent has none); and where UP beat its parent (paired mean difference
in final accuracy above 2 standard errors) the paired difference guard - UP is not below -2 standard errors. A
guard that meets it everywhere is recommended (among several: the fewest collapsed + runaway runs, then the higher
mean accuracy at UP's wins) and named "+ guard"; if none meets it, the recipes do not recommend one.
Early warning: counted on the same runs (`warning`: the live callback's step); it should fire on every collapsed or
runaway run, before or near the step where accuracy fell / entropy crossed initial + 1 nat, and on no healthy run.

PRE-REGISTRATION 2: safe UP (committed before these runs; nothing below was tuned on seeds 10-29, which no earlier
run used). The first study's failures were two mechanisms: an entropy runaway driven by rare tokens of positive
completions (stress task; the rare clip removed it there) and a dead state after a shock of the negative branch (toy,
seed 4 at 4 updates: no right answer left, every advantage 0, with beta 0 a zero gradient), which no positive-branch
guard can reach. The settings, rules and goal above are unchanged, except that every arm loads the warm start from a
saved folder (TRL reloads the reference model from it when beta > 0; `model_from_path`).
- Settings `safe_toy` (levels 4 and 16) and `safe_stress` (level 16), seeds 10-19; at toy level 4 DAPO, GRPO, UP-DAPO
  and UP-GRPO also on seeds 20-29 (20 paired seeds to settle UP-DAPO and UP-GRPO at 4 updates).
- Configs per family (SAFE_CONFIGS): the parent, UP, the parent + beta 0.05, and "UP-<family> + safe" =
  up_positive_min_prob=0.05 (the rare clip, for the runaway) + beta=0.05 (TRL's KL to the reference, for the dead
  state: its gradient does not vanish when the advantages do). One setting for every family, chosen from the first
  study and its single-seed counterfactuals (beta 0.05 rescued both UP arms of seed 4), not from these seeds.
- Dead-state candidates, parent and UP alike, toy level 4, DAPO and GRPO, seeds 10-19 (DEAD_STATE_CONFIGS): beta 0.05
  (UP), beta 0.01, a tighter clip-low (epsilon 0.1), and UP + rare clip alone (to tell the two parts of "safe" apart).
- Goal for "+ safe", per family: at toy 4, toy 16 and stress 16, no more collapsed and no more runaway runs than the
  parent, and than the parent + beta 0.05; where plain UP beat its parent (paired difference above 2 SE), safe minus
  UP not below -2 SE. Where a family meets it, its packaged recipe switches "+ safe" on; otherwise it stays plain UP.
- The dead-state rule of the warning (collapse_warning.CollapseRule, "dead state") is replayed on every run: it must
  fire at the step of each dead state and on no healthy run.
- Forecasts (collapse_report.FORECASTS), scored on these runs only: lead time (event step - firing step) on each
  failing run and false alarms on healthy runs. F1 "entropy drift": the first step s >= 20 where the mean entropy of
  steps s-9..s exceeds the initial entropy (steps 1-4) by more than 0.5 nat. F2 "negative covariance": the first step
  s >= 20 where up/logp_adv_cov was below 0 at each of the last 20 logged steps (Cui et al.: a negative covariance
  raises the entropy). A forecast is useful if it fires before the event on most failing runs with fewer false
  alarms than failing runs; otherwise the page says that nothing forecasts and keeps the confirmation rule.

PRE-REGISTRATION 3: each part of "UP + safe" alone (committed before these runs; seeds 100-109, which no committed
run used; nothing below was tuned on them). PRE-REGISTRATION 2's "UP + safe" (the rare clip + beta 0.05) met its
goal, but the two parts were never run apart where UP failed most (stress 16, toy 16), the KL half rested on seed 4,
and it made the twins differ (up_dapo had beta 0.05 where dapo has 0). The code is the anchored objective
(UP = the parent's loss with pi_old := sg(pi_theta) on the routed entries), at the commit recorded in each run.
- Settings `decomp_toy` (toy task, levels 4 and 16) and `decomp_stress` (the tail task, level 16): PRE-REGISTRATION's
  settings and rules (300 steps, lr 1e-3 constant, final = last 50 steps, collapsed, runaway), every arm loading the
  warm start from a saved folder (`model_from_path`), seeds 100-109, paired.
- Configs (DECOMPOSITION_CONFIGS), DAPO and GRPO at toy 4, toy 16 and stress 16: the parent, the parent + beta 0.05,
  plain UP, UP + rare clip (up_positive_min_prob 0.05), UP + beta 0.05, UP + both ("+ safe"); GSPO at stress 16:
  the parent, UP, UP + rare clip. 390 runs.
- Goal (the study's own), per candidate and family, over every level measured: no more collapsed and no more
  runaway runs than the parent on the same seeds, and a candidate that sets beta also no more than the parent +
  beta 0.05 (its twin); wherever plain UP beat its parent (paired difference above 2 SE), the candidate's paired
  difference to plain UP not below -2 SE. Failures are counted as distinct events: an arm whose curves equal plain
  UP's at every logged step is the same event, not another.
- Decision, per family, in this order; the first that meets the goal is what the up_<family> recipe sets:
  (1) plain UP: no UP setting; (2) UP + rare clip: the rare clip, a UP setting; (3) UP + beta 0.05: beta 0.05 in
  BOTH twins (the parent's recipe too), and the page says that only a KL met the goal; (4) UP + both: the rare
  clip in the UP twin and beta 0.05 in both; (5) none: plain UP, and the page says that nothing met the goal.
  GSPO: (1) or (2), else plain UP. The twins stay twins: a setting that is not UP's own is in both or neither.
- The KL's cost (benchmarks/kl_cost.py): `up-trl train` on SmolLM2-135M-Instruct (the offline default's data and
  flags, 4 optimizer steps), beta 0.05 against beta 0, 3 interleaved pairs in one run, medians of the wall time per
  optimizer step (metrics.jsonl's step_time) and of the peak resident memory of the training process (the
  reference model's weights included). Reported as ratios; no threshold: a cost, not a goal.
- The rescue (benchmarks/collapse_rescue.py): seed 4, toy, 4 updates per rollout, UP-DAPO and UP-GRPO (the runs
  whose dead state the warning advice is about), trained with a checkpoint every 5 steps and up_stop_on_collapse;
  then resumed from the last checkpoint strictly before the warning's step in three ways: unchanged (the control:
  a bit-for-bit resume dies again), beta 0.05, and beta 0.05 with the learning rate halved (5e-4), each to 300
  steps. Measures: collapsed or not by the rules above, final accuracy, and the steps from the resume to the first
  step from which the true accuracy (per rollout batch) never falls below 0.05 again. If under the anchored
  objective seed 4 no longer dies (no dead-state warning), the rescue uses the lowest seed of 100-109 whose UP-DAPO
  or UP-GRPO run at toy 4 the dead-state warning stopped, and says so; if there is none, it is not measured. The
  warning's advice (collapse_warning.ADVICE) then says only what this measured.

Changed after the runs (no outcome changed): the goal's failure counts are taken on the seeds both arms ran
(`collapse_report.goal`), where they were taken on every seed each arm ran (the parents had 20 at toy 4, the guards
10).

Removed after the runs: four of the first study's candidate guards (the log-ratio bound, the capacity share, the
positive-token KL and the entropy fallback; none met the goal) left the package API at 2874de3, so their arms can no
longer be run: "UP-<family> + log-ratio", "+ capacity", "+ KL" and "+ entropy fallback" (RECORDED_ONLY_GUARDS), held
by the committed records of the "toy" and "stress" settings (benchmarks/results/collapse_toy, collapse_stress), and
the pilot's "UP-<family> + pilot <guard> <value>" (benchmarks/results/collapse_pilot). Commit 05756b0 is the last
that can rerun them (`git checkout 05756b0`). The settings below list only what runs; the rare clip stays.
"""

from __future__ import annotations

import bench as se  # the toy task's CONFIGS

FAMILIES = ("DAPO", "GRPO", "GSPO")
# The candidate guard that runs (names "UP-<family> + <guard>"). Suggested by the cause (collapse_cause.py): rare
# positive tokens (pi_old < 0.05) keep the parent's clip.
GUARDS: dict[str, dict] = {"rare clip": dict(up_positive_min_prob=0.05)}
# "+ guard": the only candidate that met the goal on the stress runs (the others had more runaway or collapsed runs
# than their parents there; on the toy runs none met it, docs/collapse.md); the SmolLM2 runs use this name.
GUARDS["guard"] = GUARDS["rare clip"]
# The first study's other candidates (log-ratio bound 0.5, capacity share 0.1, positive-token KL 1.0, entropy fallback
# at 2.0 nats; the pilot's settings besides): recorded only. Their config fields left the API at 2874de3, so no
# config here runs them; the committed "toy" and "stress" records hold their arms "UP-<family> + <guard>" (the
# reports order them by REPORT_ORDER). Commit 05756b0 is the last that can rerun them (`git checkout 05756b0`).
RECORDED_ONLY_GUARDS = ("log-ratio", "capacity", "KL", "entropy fallback")
# Safe UP (PRE-REGISTRATION 2 above): the dead state's candidates (TRL's own settings, so the
# parents get them too) and the recommendation "+ safe", one setting for every family.
DEAD_STATE_CANDIDATES: dict[str, dict] = {
    "beta 0.05": dict(beta=0.05),  # a KL to the reference: a gradient where every advantage is 0
    "beta 0.01": dict(beta=0.01),
    "epsilon 0.1": dict(epsilon=0.1),  # a tighter clip-low: negatives stop moving at r < 0.9 instead of 0.8
}
# "+ safe" as PRE-REGISTRATION 2 defined it (the configs the recorded studies ran): the rare clip and beta 0.05. What
# the package recommends after PRE-REGISTRATION 3 is up_trl.objective.guards.SAFE_UP (the rare clip alone).
SAFE = {"up_positive_min_prob": 0.05, "beta": 0.05}
CONFIGS: dict[str, dict] = {}
for family in FAMILIES:
    CONFIGS[family] = dict(se.CONFIGS[family])
    CONFIGS[f"UP-{family}"] = dict(se.CONFIGS[f"UP-{family}"])
    for guard, settings in GUARDS.items():
        CONFIGS[f"UP-{family} + {guard}"] = {**se.CONFIGS[f"UP-{family}"], **settings}
    for candidate, settings in DEAD_STATE_CANDIDATES.items():
        if family == "GSPO" and "epsilon" in settings:  # GSPO's sequence-level clip is 3e-4: 0.1 is no tighter
            continue
        CONFIGS[f"{family} + {candidate}"] = {**se.CONFIGS[family], **settings}
        CONFIGS[f"UP-{family} + {candidate}"] = {**se.CONFIGS[f"UP-{family}"], **settings}
    CONFIGS[f"UP-{family} + safe"] = {**se.CONFIGS[f"UP-{family}"], **SAFE}
# The order of the tables and figures: CONFIGS', with the recorded-only arms after plain UP, where they ran, so that
# `collapse.py --report_only` still rewrites the committed "toy" and "stress" reports.
REPORT_ORDER: list[str] = []
for name in CONFIGS:
    REPORT_ORDER.append(name)
    if name.startswith("UP-") and " + " not in name:  # plain UP
        REPORT_ORDER += [f"{name} + {guard}" for guard in RECORDED_ONLY_GUARDS]

# Updates per rollout batch of 128 -> how the batch is reused (bench.LEVELS, plus more passes).
LEVELS: dict[int, dict] = {
    **{level: se.LEVELS[level] for level in (4, 8, 16)},
    32: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=8),
    64: dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=16),
}
# Every arm: the opt-in shared-prompt forward (measured ~25% less CPU here); it needs activation checkpointing off.
# The runs' trainer: `with_parts(UPGRPOTrainer, share_prompt_prefix=True)` (`toy_runs.toy_trainer`).
SPEED = dict(activation_checkpointing=False)
# Logged every step and kept (rounded) in each record: the curves the figures and the warning's tests read.
# (The first study's curves also hold up/guard_masked_frac, up/capacity_masked_frac and up/entropy_fallback, logged by
# the removed guards; no trainer logs them now and nothing reads them: `collapse_report.read_report` reads whatever
# curves a record holds.)
CURVE_KEYS = (
    "entropy",
    "reward",
    "rewards/true_accuracy/mean",
    "frac_reward_zero_std",
    "up/positive_abs_log_ratio_mean",
    "up/would_clip_frac",
    # the leading indicators (up_trl.objective.indicators), TRL's clip counts, the gradient norm and the KL
    "up/logp_adv_cov",
    "up/positive_tokens",
    "up/negative_tokens",
    "up/negative_clipped_log_ratio_mean",
    "clip_ratio/low_mean",
    "clip_ratio/high_mean",
    "clip_ratio/region_mean",
    "grad_norm",
    "kl",
)
# What a setting with `kept_curves` writes to curves.parquet (the rest stay in runs.partial.jsonl): the curves the
# report and its tests read (the warning's rule: entropy, reward, frac_reward_zero_std; the forecasts: entropy,
# up/logp_adv_cov; the accuracy the measures come from; rare_clip_runaways.py: entropy, reward). The fresh-seed and
# third studies keep these (the fresh-seed runs' 15 curves, indicators included, are in git up to acdc76c).
REPORT_CURVES = ("entropy", "reward", "rewards/true_accuracy/mean", "frac_reward_zero_std", "up/logp_adv_cov")


TAIL_LENGTH, TAIL_FILLER, TAIL_NOISE, TAIL_POOL = 8, ".", 0.2, "abcdefghijklmnopqrstuvwxyz"

# The pre-registered rules (module docstring).
COLLAPSE_ACCURACY, COLLAPSE_ENTROPY, RUNAWAY_MARGIN, LOW_ENTROPY = 0.05, 3.0, 1.0, 0.1
FINAL_WINDOW, INITIAL_WINDOW, STRESS_STEPS = 50, 4, 300
# The first study (PRE-REGISTRATION): the parent, UP and UP + rare clip. Its committed records ("toy", "stress") also
# hold "UP-<family> + log-ratio", "+ capacity", "+ KL" and "+ entropy fallback" (RECORDED_ONLY_GUARDS), which can no
# longer be run; commit 05756b0 is the last that can rerun them.
FAMILY_CONFIGS = [name for f in FAMILIES for name in (f, f"UP-{f}", f"UP-{f} + rare clip")]
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
# "toy" and "stress" list what runs now; their committed records hold the recorded-only arms too (FAMILY_CONFIGS).
# PRE-REGISTRATION 3: each part of "UP + safe" alone.
DECOMPOSITION_CONFIGS = {
    family: [
        family,
        f"{family} + beta 0.05",
        f"UP-{family}",
        f"UP-{family} + rare clip",
        f"UP-{family} + beta 0.05",
        f"UP-{family} + safe",
    ]
    for family in ("DAPO", "GRPO")
} | {"GSPO": ["GSPO", "UP-GSPO", "UP-GSPO + rare clip"]}
DECOMPOSITION_SEEDS = list(range(100, 110))
# The parent twin a candidate that sets beta is held to, besides the parent (PRE-REGISTRATION 3).
DECOMPOSITION_TWINS = {"safe": "beta 0.05", "beta 0.05": "beta 0.05"}
SETTINGS: dict[str, dict] = {
    "toy": dict(task="toy", levels=[4, 16], seeds=list(range(10)), max_steps=300, configs=FAMILY_CONFIGS),
    "stress": dict(task="tail", levels=[16], seeds=list(range(10)), max_steps=STRESS_STEPS, configs=FAMILY_CONFIGS),
    "smollm2": dict(
        task="smollm2", levels=[8], seeds=[0, 1, 2], max_steps=32, configs=["GSPO", "UP-GSPO", "UP-GSPO + guard"]
    ),
    "safe_toy": dict(
        task="toy",
        levels=[4, 16],
        seeds=list(range(10, 20)),
        max_steps=300,
        configs=SAFE_CONFIGS,
        model_from_path=True,
        kept_curves=REPORT_CURVES,
    ),
    "safe_stress": dict(
        task="tail",
        levels=[16],
        seeds=list(range(10, 20)),
        max_steps=STRESS_STEPS,
        configs=SAFE_CONFIGS,
        model_from_path=True,
        kept_curves=REPORT_CURVES,
    ),
    "decomp_toy": dict(
        task="toy",
        levels=[4, 16],
        seeds=DECOMPOSITION_SEEDS,
        max_steps=300,
        model_from_path=True,
        configs=DECOMPOSITION_CONFIGS["DAPO"] + DECOMPOSITION_CONFIGS["GRPO"],
        twins=DECOMPOSITION_TWINS,
        kept_curves=REPORT_CURVES,
    ),
    "decomp_stress": dict(
        task="tail",
        levels=[16],
        seeds=DECOMPOSITION_SEEDS,
        max_steps=STRESS_STEPS,
        model_from_path=True,
        configs=[c for f in FAMILIES for c in DECOMPOSITION_CONFIGS[f]],
        twins=DECOMPOSITION_TWINS,
        kept_curves=REPORT_CURVES,
    ),
}
SETTING_TEXT = {
    "toy": "sample_efficiency.py's toy task, 300 steps, lr 1e-3 constant, beta 0",
    "stress": f"the toy with a reward-irrelevant tail of {TAIL_LENGTH} tokens, 300 steps, lr 1e-3 constant, beta 0",
    "smollm2": "SmolLM2-135M-Instruct, arithmetic mul1, 32 steps, 8 updates per rollout, lr 3e-5, beta 0",
    "safe_toy": "sample_efficiency.py's toy task, 300 steps, lr 1e-3 constant, beta 0 unless the config sets it",
    "safe_stress": f"the toy with a reward-irrelevant tail of {TAIL_LENGTH} tokens, 300 steps, lr 1e-3 constant, "
    "beta 0 unless the config sets it",
    "decomp_toy": "sample_efficiency.py's toy task, 300 steps, lr 1e-3 constant, beta 0 unless the config sets it",
    "decomp_stress": f"the toy with a reward-irrelevant tail of {TAIL_LENGTH} tokens, 300 steps, lr 1e-3 constant, "
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
)  # fmt: skip  (real_model_runs.train_argv passes 3e-5)
