"""`--dataset_name` takes what `load_dataset` takes and `save_to_disk` folders; `--reward_funcs` TRL's names."""

import datasets
import pytest
import trl.rewards
from conftest import TINY, argv, hub_folder, one_line, tiny_train_argv

from up_trl.cli import train
from up_trl.data import DataError, load_math_dataset
from up_trl.rewards import get_reward_funcs
from up_trl.rewards.registry import REWARD_FACTORIES, REWARD_FUNCS, TRL_REWARD_FUNCS, check_reward_names

CHAT = [[{"role": "user", "content": f"What is {i} + {i}?"}] for i in range(16)]
SUMS = [str(2 * i) for i in range(16)]


def test_a_hub_layout_folder_loads_with_prompts_as_trl_takes_them(tmp_path):
    """A `prompt` column and every other column are kept as written; `answer` fills a missing `solution`."""
    folder = hub_folder(tmp_path / "chat", {"prompt": CHAT, "solution": SUMS, "id": [*range(16)]})
    rows = load_math_dataset(folder)
    assert len(rows) == 16 and rows.column_names == ["prompt", "solution", "id"]
    assert rows[3] == {"prompt": CHAT[3], "solution": "6", "id": 3}
    plain = hub_folder(tmp_path / "plain", {"prompt": ["What is 1/2 of 1?"], "solution": [r"\frac{1}{2}"]})
    assert load_math_dataset(plain)[0] == {"prompt": "What is 1/2 of 1?", "solution": r"\frac{1}{2}"}
    answered = hub_folder(tmp_path / "answered", {"prompt": ["What is 1/2 of 1?"], "answer": [r"\frac{1}{2}"]})
    row = load_math_dataset(answered)[0]
    assert row == {"prompt": "What is 1/2 of 1?", "solution": r"$\frac{1}{2}$", "answer": r"\frac{1}{2}"}


def test_a_prompt_column_gets_a_system_turn_only_when_asked(tmp_path):
    """`prompt_system_prompt` is put first in a `prompt` column's prompts that have no system turn."""
    own = [{"role": "system", "content": "Mine."}, {"role": "user", "content": "1 + 1?"}]
    folder = hub_folder(tmp_path / "mixed", {"prompt": [CHAT[0], own], "solution": ["0", "2"]})
    assert load_math_dataset(folder, system_prompt="S")["prompt"] == [CHAT[0], own]
    rows = load_math_dataset(folder, prompt_system_prompt="S")
    assert rows["prompt"] == [[{"role": "system", "content": "S"}, *CHAT[0]], own]
    plain = hub_folder(tmp_path / "plain", {"prompt": ["1 + 1?"], "solution": ["2"]})
    turns = [{"role": "system", "content": "S"}, {"role": "user", "content": "1 + 1?"}]
    assert load_math_dataset(plain, prompt_system_prompt="S")[0]["prompt"] == turns


def test_a_short_name_that_is_also_a_folder_here_is_refused(tmp_path, monkeypatch):
    """`trl grpo --dataset_name gsm8k` reads a folder `gsm8k` where there is one; up-trl's set would be another."""
    hub_folder(tmp_path / "gsm8k", {"prompt": CHAT, "solution": SUMS})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match=r"^--dataset_name gsm8k names both up-trl's set 'gsm8k' and the folder "):
        load_math_dataset("gsm8k")
    assert load_math_dataset("./gsm8k")[3] == {"prompt": CHAT[3], "solution": "6"}


def test_a_save_to_disk_folder_loads(tmp_path):
    rows = {"prompt": CHAT[:2], "solution": ["0", "2"]}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows)}).save_to_disk(str(tmp_path / "saved"))
    assert load_math_dataset(str(tmp_path / "saved"))[1] == {"prompt": CHAT[1], "solution": "2"}
    with pytest.raises(DataError, match=r"has splits \('train',\), not 'test'"):
        load_math_dataset(str(tmp_path / "saved"), "test")
    datasets.Dataset.from_dict(rows).save_to_disk(str(tmp_path / "one"))  # a Dataset, no splits
    assert load_math_dataset(str(tmp_path / "one"))[0]["solution"] == "0"


def test_other_column_names_with_a_column_mapping(tmp_path):
    """A problem column gets the system prompt; a column mapped to `prompt` is kept as written."""
    folder = hub_folder(tmp_path / "qa", {"question_text": ["What is 2 + 2?"], "gold": ["4"], "messages": CHAT[:1]})
    with pytest.raises(DataError, match="Map yours with --column_mapping"):
        load_math_dataset(folder)
    rows = load_math_dataset(folder, column_mapping={"question_text": "problem", "gold": "answer"}, system_prompt="S")
    assert rows[0] == {"prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "What is 2 + 2?"}],
                       "solution": "4", "answer": "4", "messages": CHAT[0]}  # fmt: skip
    rows = load_math_dataset(folder, column_mapping={"messages": "prompt", "gold": "solution"}, system_prompt="S")
    assert rows[0] == {"prompt": CHAT[0], "solution": "4", "question_text": "What is 2 + 2?"}


def test_a_hub_id_not_in_the_cache_offline_is_one_line_before_any_model_loads(no_model_loads, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)  # as when set before Python starts
    line = one_line(capsys, argv(*TINY, output_dir=no_model_loads / "out", dataset_name="someone/no-such-set"))
    assert line.startswith("--dataset_name someone/no-such-set: Dataset 'someone/no-such-set' needs the Hugging Face")
    assert "HF_HUB_OFFLINE is set: it is not in the local cache" in line


def test_trl_reward_names_are_trls_functions():
    assert get_reward_funcs(["accuracy_reward"]) == [trl.rewards.accuracy_reward]
    assert set(TRL_REWARD_FUNCS) <= set(trl.rewards.__all__)
    assert not set(TRL_REWARD_FUNCS) & (set(REWARD_FUNCS) | set(REWARD_FACTORIES))  # no name of ours changes meaning
    check_reward_names(TRL_REWARD_FUNCS)


def test_train_one_step_on_a_hub_layout_folder_with_a_trl_reward(tmp_path, tiny_model):
    folder = hub_folder(tmp_path / "set", {"prompt": CHAT, "solution": SUMS})
    data = dict(dataset_name=folder, dataset_train_split="train")
    run = train(tiny_train_argv(tiny_model, tmp_path / "out", reward="accuracy_reward", max_steps=1, **data))
    assert run.state.global_step == 1 and (tmp_path / "out" / "model.safetensors").exists()
    assert [f.__name__ for f in run.reward_funcs] == ["accuracy_reward"]
    assert sorted(row["prompt"][0]["content"] for row in run.train_dataset) == sorted(c[0]["content"] for c in CHAT)
