"""`up-trl train` parses argv and recipes as `trl grpo` does, but the named differences."""

import dataclasses
import os

import pytest
import yaml
from conftest import argv, hub_folder, one_line, tiny_train_argv
from datasets import IterableDataset
from trl.scripts.grpo import GRPOScriptArguments
from trl.scripts.grpo import make_parser as trl_make_parser

from up_trl.cli import check_train_args, train
from up_trl.cli.catalog import recipe_path
from up_trl.cli.parse import make_parser, parse_train_args
from up_trl.data import load_math_dataset
from up_trl.run.job import load_data
from up_trl.script_args import TrainScriptArguments

# A `trl grpo` command line as TRL's docs write one (use_cpu and bf16 false: this also parses on a CPU-only machine,
# where TRL's own GRPOConfig refuses bf16).
DOCS_ARGV = argv(
    "--model_name_or_path Qwen/Qwen2-0.5B-Instruct --dataset_name trl-lib/DeepMath-103K --dataset_config default",
    "--dataset_train_split train --reward_funcs accuracy_reward --learning_rate 1e-6 --per_device_train_batch_size 4",
    "--num_generations 4 --max_completion_length 64 --use_cpu true --bf16 false",
)


def trl_grpo(words):
    """What `trl grpo WORDS` parses: (script args, GRPOConfig, ModelConfig, DatasetMixtureConfig)."""
    return trl_make_parser().parse_args_and_config(args=words)


def differences(theirs, ours) -> dict[str, tuple]:
    """{field: (TRL's value, ours)} for each field of TRL's dataclass whose values differ."""
    return {
        f.name: (getattr(theirs, f.name), getattr(ours, f.name))
        for f in dataclasses.fields(theirs)
        if getattr(theirs, f.name) != getattr(ours, f.name)
    }


def compare(words, allowed: dict[str, set[str]]):
    """Parse `words` both ways; every field of TRL's four dataclasses equal in ours but those in `allowed`."""
    theirs = trl_grpo(list(words))
    ours = [*parse_train_args(list(words)), make_parser("grpo").parse_args_and_config(args=list(words))[3]]
    for name, their, our in zip(("script", "config", "model", "mixture"), theirs, ours, strict=True):
        found = differences(their, our)
        extra = set(found) - allowed.get(name, set())
        assert not extra, (name, {k: found[k] for k in extra})
    return theirs, ours


def test_our_script_arguments_are_trls_with_ours_after_them():
    assert issubclass(TrainScriptArguments, GRPOScriptArguments)
    theirs = {f.name: f for f in dataclasses.fields(GRPOScriptArguments)}
    ours = {f.name: f for f in dataclasses.fields(TrainScriptArguments)}
    assert list(ours)[: len(theirs)] == list(theirs)
    # Our own defaults, each where TRL's would not run offline or would break our short names (the class says why).
    own_defaults = {"dataset_name", "dataset_train_split", "reward_funcs"}
    for name, field in theirs.items():
        if name not in own_defaults:
            assert ours[name] is field, name  # TRL's own field: name, type, default and help


def test_the_docs_command_line_means_what_it_means_to_trl_grpo(tmp_path):
    words = argv(*DOCS_ARGV, output_dir=tmp_path / "out")
    # A named model and no --config: what the command line leaves out takes TRL's defaults (the offline default
    # recipe fills in only when no model is named), so only UP's fields may differ.
    (script, config, model, _), (our_script, our_config, our_model, _) = compare(words, {})
    assert our_script.dataset_name == script.dataset_name == "trl-lib/DeepMath-103K"
    assert our_script.dataset_config == "default" and our_script.reward_funcs == script.reward_funcs
    assert our_config.learning_rate == config.learning_rate == 1e-6
    assert our_model.model_name_or_path == model.model_name_or_path == "Qwen/Qwen2-0.5B-Instruct"


def test_the_same_recipe_means_the_same_to_trl_grpo(tmp_path, monkeypatch):
    """A recipe names everything it sets: no offline default then, and only UP's fields and ours may differ."""
    recipe = dict(model_name_or_path="Qwen/Qwen2-0.5B-Instruct", dataset_name="trl-lib/DeepMath-103K")
    recipe |= dict(dataset_config="default", dataset_train_split="train", dataset_test_split="validation")
    recipe |= dict(dataset_streaming=False, eval_strategy="steps", eval_steps=5, ignore_bias_buffers=True)
    recipe |= dict(reward_funcs=["accuracy_reward", "my_rewards.length_reward"], loss_type="dapo", beta=0.0)
    recipe |= dict(reward_model_name_or_path="some/reward-model", learning_rate=1.0e-6, per_device_train_batch_size=4)
    recipe |= dict(num_generations=4, max_completion_length=64, output_dir=str(tmp_path / "out"))
    recipe |= dict(use_cpu=True, bf16=False, env={"UP_TRL_TEST_RECIPE_ENV": "set"})
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    monkeypatch.delenv("UP_TRL_TEST_RECIPE_ENV", raising=False)
    (script, config, model, mixture), (ours, our_config, *_) = compare(argv(config=path), {})
    assert os.environ["UP_TRL_TEST_RECIPE_ENV"] == "set"  # the `env:` block, as TrlParser sets it
    assert ours.reward_model_name_or_path == "some/reward-model" and ours.ignore_bias_buffers
    assert ours.dataset_test_split == "validation" and our_config.eval_strategy == "steps"
    assert our_config.up_mode == "asymmetric"  # UP's fields: ours only
    # Flags override the recipe, for both alike.
    compare(argv(f"--config {path} --learning_rate 2e-6 --dataset_test_split test"), {})


def test_defaults_differ_only_where_named(tmp_path):
    """What a recipe leaves out takes TRL's default but for our three (`TrainScriptArguments` says why)."""
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump({"use_cpu": True, "bf16": False, "output_dir": str(tmp_path / "out")}))
    ours_only = {"script": {"dataset_name", "dataset_train_split", "reward_funcs"}}
    (script, *_), (ours, *_) = compare(argv(config=path), ours_only)
    assert (script.dataset_name, ours.dataset_name) == (None, "arithmetic")  # offline: generated in code
    assert (script.dataset_train_split, ours.dataset_train_split) == ("train", None)  # train, or math500's test
    assert (script.reward_funcs, ours.reward_funcs) == (None, ["math_accuracy"])


def mixture_recipe(tmp_path, **mixture) -> str:
    """The quickstart recipe plus a `datasets:` mixture of two local folders (16 and 8 problems)."""
    sums = {"question": [f"{i} + {i}?" for i in range(16)], "answer": [str(2 * i) for i in range(16)]}
    squares = {"question": [f"{i} squared?" for i in range(8)], "answer": [str(i * i) for i in range(8)]}
    recipe = yaml.safe_load(open(recipe_path("quickstart")))
    recipe["datasets"] = [
        {"path": hub_folder(tmp_path / name, rows), "split": "train"}
        for name, rows in (("sums", sums), ("squares", squares))
    ]
    (tmp_path / "mix.yaml").write_text(yaml.safe_dump({**recipe, **mixture}))
    return str(tmp_path / "mix.yaml")


def test_a_mixture_parses_as_trl_parses_it(tmp_path):
    mixture = {"datasets": [{"path": "trl-lib/DeepMath-103K", "split": "train"}], "test_split_size": 0.1}
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump({**mixture, "use_cpu": True, "bf16": False, "output_dir": str(tmp_path / "o")}))
    theirs = trl_grpo(argv(config=path))[3]
    assert make_parser("grpo").parse_args_and_config(args=argv(config=path))[3] == theirs
    assert theirs.datasets[0].path == "trl-lib/DeepMath-103K"


def test_a_mixture_loads_through_trls_get_dataset(tmp_path, tiny_model):
    """A recipe's `datasets:` mixture loads through TRL's `get_dataset`, over `dataset_name`, with its eval split."""
    recipe = mixture_recipe(tmp_path, test_split_size=0.25, seed=3)
    flags = argv(config=recipe, model_name_or_path=tiny_model, output_dir=tmp_path / "o")
    train_set, eval_set = load_data(check_train_args(argv(*flags, eval_strategy="steps")), is_async=False)
    assert (len(train_set), len(eval_set)) == (18, 6)  # 24 problems, a quarter held out
    rows = [*train_set, *eval_set]
    assert sorted(row["solution"] for row in rows) == sorted(
        [str(2 * i) for i in range(16)] + [str(i * i) for i in range(8)]
    )
    square = next(row for row in rows if row["solution"] == "9")
    assert square["prompt"][-1] == {"role": "user", "content": "3 squared?"}  # a `question`, made a chat prompt
    assert load_data(check_train_args(flags), is_async=False)[1] is None  # no eval without eval_strategy


def test_a_stream_needs_max_steps_in_one_line(tmp_path, capsys):
    """transformers' Trainer refuses a stream without max_steps only in train(), after the model loads."""
    line = one_line(capsys, argv("--dataset_streaming true --max_steps -1", output_dir=tmp_path / "o"))
    assert line == "--dataset_streaming True: a stream has no length: set --max_steps, the optimizer steps to train."


def test_a_streamed_dataset_is_read_lazily_as_prompts(tmp_path):
    folder = hub_folder(tmp_path / "qa", {"question": ["1 + 1?", "2 + 2?", "3 + 3?"], "answer": ["2", "", "6"]})
    rows = load_math_dataset(folder, streaming=True, system_prompt=None)
    assert isinstance(rows, IterableDataset)
    assert list(rows) == [
        {"prompt": [{"role": "user", "content": "1 + 1?"}], "solution": "2", "answer": "2"},
        {"prompt": [{"role": "user", "content": "3 + 3?"}], "solution": "6", "answer": "6"},  # no answer: skipped
    ]
    assert len(list(load_math_dataset(folder, streaming=True, limit=1))) == 1


def test_one_step_on_a_streamed_mixture(tmp_path, tiny_model):
    """`streaming: true` in the mixture: TRL's trainer reads an IterableDataset (`max_steps` set)."""
    recipe = mixture_recipe(tmp_path, streaming=True)
    run = train(tiny_train_argv(tiny_model, tmp_path / "out", reward="accuracy_reward", max_steps=1, config=recipe))
    assert run.state.global_step == 1 and (tmp_path / "out" / "model.safetensors").exists()
    assert type(run.train_dataset).__name__ == "IterableDataset"
    assert f"{tmp_path / 'sums'}, {tmp_path / 'squares'}" in (tmp_path / "out" / "README.md").read_text()  # the card


@pytest.mark.parametrize("key, closest", [
    ("dataset_tset_split", "dataset_test_split"),
    ("reward_model_name_or_pth", "reward_model_name_or_path"),
    ("leraning_rate", "learning_rate"),  # a TrainingArguments key
])  # fmt: skip
def test_a_misspelt_trl_key_names_the_real_one(tmp_path, capsys, key, closest):
    """A misspelt TRL key stops in one line naming the real one."""
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({key: "x"}))
    assert f"unknown key {key!r} (did you mean {closest}" in one_line(capsys, argv(config=path))
    assert f"unknown option --{key} (did you mean --{closest}" in one_line(capsys, argv(f"--{key} x"))


def test_one_step_with_a_reward_model_and_an_eval_split_as_trl_grpo_runs_them(tmp_path, tiny_model):
    """A reward model scores first, as in `trl grpo`, and the test split is evaluated."""
    scored = dict(reward="accuracy_reward", reward_model_name_or_path=tiny_model, max_steps=1)
    evaluation = dict(eval_strategy="steps", eval_steps=1, per_device_eval_batch_size=8)
    run = train(tiny_train_argv(tiny_model, tmp_path / "out", **scored, **evaluation))
    assert run.state.global_step == 1
    assert run.reward_func_names[1] == "accuracy_reward" and type(run.reward_funcs[0]).__name__.endswith(
        "ForSequenceClassification"
    )
    assert len(run.eval_dataset) > 0 and any("eval_loss" in h or "eval_reward" in h for h in run.state.log_history)
