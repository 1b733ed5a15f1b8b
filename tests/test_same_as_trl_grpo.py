"""`up-trl train ARGV --up_mode off` trains what `trl grpo ARGV` trains, for each kind of input."""

import inspect
import re

import datasets
import pytest
import torch
import transformers
import trl.scripts.grpo as trl_grpo_script
from conftest import TINY, ModelLoaded, argv, hub_folder, one_line
from safetensors.torch import load_file
from transformers import Qwen2Config, Qwen2ForSequenceClassification
from trl import GRPOTrainer

import up_trl.extras
from up_trl.cli import main
from up_trl.models.offline import tiny_tokenizer
from up_trl.rewards.registry import COLUMNS_NOT_PASSED, TRAINER_REWARD_KWARGS

CHAT = [[{"role": "user", "content": f"What is {i} + {i}?"}] for i in range(16)]
PLAIN = [f"{i} + {i} =" for i in range(16)]


def shared_argv(model: str, data: str, *flags: str, **named) -> list[str]:
    """A short run on TRL's defaults (a named model, no recipe): 2 optimizer steps on one rollout batch."""
    line = "--use_cpu true --bf16 false --report_to none --seed 0 --max_steps 2 --per_device_train_batch_size 8"
    line += " --num_generations 4 --steps_per_generation 2 --max_completion_length 8 --learning_rate 1e-2"
    named |= dict(model_name_or_path=model, dataset_name=data)
    return [*argv(line, "--logging_steps 1 --save_strategy no", **named), *flags]


@pytest.fixture
def logged(monkeypatch):
    """The log history of each trainer that saves (both scripts call `save_model(output_dir)` once at the end)."""
    histories, save = [], transformers.Trainer.save_model

    def record(self, *args, **kwargs):
        histories.append([dict(h) for h in self.state.log_history])
        return save(self, *args, **kwargs)

    monkeypatch.setattr(transformers.Trainer, "save_model", record)
    if hasattr(transformers.Trainer, "end"):  # transformers >= 5.18, where `trl grpo` ends with it, after the save
        end = transformers.Trainer.end
        monkeypatch.setattr(transformers.Trainer, "end", lambda self: histories.append("end") or end(self))
    return histories


def run_both(tmp_path, words: list[str], logged) -> tuple[dict, dict]:
    """(TRL's tensors, ours) with equal logs for `trl grpo` and `--up_mode off`; UP's run differs."""
    theirs, ours, up = tmp_path / "trl", tmp_path / "off", tmp_path / "up"
    parsed = trl_grpo_script.make_parser().parse_args_and_config(args=[*words, *argv(output_dir=theirs)])
    trl_grpo_script.main(*parsed[:4])
    for out, mode in ((ours, "off"), (up, "asymmetric")):
        assert main(["train", *words, *argv(output_dir=out, up_mode=mode, plot=False)]) == 0
    ends = hasattr(transformers.Trainer, "end")
    assert [h == "end" for h in logged] == [False, True] * 3 if ends else [False] * 3  # each saved, then ended
    kept = [
        [{k: v for k, v in h.items() if "reward" in k or k.endswith("loss")} for h in run]
        for run in logged[:: 1 + ends]
    ]
    assert kept[0] == kept[1] and any(kept[0])
    weights = "adapter_model.safetensors" if (theirs / "adapter_model.safetensors").exists() else "model.safetensors"
    theirs, ours, up = (load_file(folder / weights) for folder in (theirs, ours, up))
    assert any(not torch.equal(theirs[name], up[name]) for name in theirs)
    return theirs, ours


def assert_same_trained_weights(theirs: dict, ours: dict, start: dict | None = None):
    assert theirs.keys() == ours.keys() and theirs
    for name in theirs:
        assert torch.equal(theirs[name], ours[name]), name
    if start is not None:  # training moved them: equal weights are not two untouched copies
        assert any(not torch.equal(start[n], theirs[n]) for n in theirs if n in start)


@pytest.fixture
def tiny_model_dir(tiny_model):
    return tiny_model, load_file(f"{tiny_model}/model.safetensors")


HALF = [str(2 * i) for i in range(16)]
SETS = [  # `target` reaches the reward as a keyword; open-r1's shape: the `prompt` is trained on, as written
    pytest.param({"prompt": CHAT, "target": HALF}, "cli_rewards.says_target", id="extra_column_for_a_dotted_reward"),
    pytest.param({"prompt": CHAT, "problem": [f"{i} + {i}" for i in range(16)], "answer": HALF}, "cli_rewards.length",
                 id="prompt_beside_problem_and_answer"),
    pytest.param({"prompt": PLAIN}, "cli_rewards.length", id="trls_quickstart_prompt_only_length_reward"),
]  # fmt: skip


@pytest.mark.parametrize("columns, reward", SETS)
def test_a_set_trains_as_in_trl_grpo(tmp_path, tiny_model_dir, logged, columns, reward):
    model, start = tiny_model_dir
    run = shared_argv(model, hub_folder(tmp_path / "set", columns), reward_funcs=reward)
    assert_same_trained_weights(*run_both(tmp_path, run, logged), start)


def test_a_prompt_only_set_scored_by_a_reward_model(tmp_path, tiny_model_dir, logged):
    """TRL's own CLI case: `--reward_model_name_or_path` on a prompt-only set."""
    tokenizer = tiny_tokenizer()
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, num_labels=1,
                         pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(1)
    Qwen2ForSequenceClassification(config).save_pretrained(tmp_path / "scorer")
    tokenizer.save_pretrained(tmp_path / "scorer")
    model, start = tiny_model_dir
    data = hub_folder(tmp_path / "set", {"prompt": PLAIN})
    run = shared_argv(model, data, reward_model_name_or_path=tmp_path / "scorer")
    assert_same_trained_weights(*run_both(tmp_path, run, logged), start)


def test_lora_through_use_peft(tmp_path, tiny_model_dir, logged):
    """`--use_peft` with LoRA options: the same adapter weights."""
    model, _ = tiny_model_dir
    data = hub_folder(tmp_path / "set", {"prompt": CHAT})
    lora = "--use_peft true --lora_r 4 --lora_alpha 8 --lora_dropout 0.0 --lora_target_modules q_proj v_proj".split()
    theirs, ours = run_both(tmp_path, shared_argv(model, data, *lora, reward_funcs="cli_rewards.length"), logged)
    assert_same_trained_weights(theirs, ours)
    assert all("lora_" in name for name in theirs) and any(t.abs().sum() > 0 for n, t in theirs.items() if "_B" in n)


def test_an_eval_split_evaluated_as_trl_evaluates_it(tmp_path, tiny_model_dir, logged):
    """`--dataset_test_split` with `--eval_strategy steps`: the same eval rewards logged, the same weights."""
    model, start = tiny_model_dir
    folder = tmp_path / "set"
    (folder / "data").mkdir(parents=True)
    for split, rows in (("train", CHAT), ("test", CHAT[:8])):
        datasets.Dataset.from_dict({"prompt": rows}).to_parquet(str(folder / f"data/{split}-00000-of-00001.parquet"))
    evaluation = "--dataset_test_split test --eval_strategy steps --eval_steps 1 --per_device_eval_batch_size 8"
    run = shared_argv(model, str(folder), *evaluation.split(), reward_funcs="cli_rewards.length")
    assert_same_trained_weights(*run_both(tmp_path, run, logged), start)
    assert all(any("eval_reward" in h for h in run) for run in logged if run != "end")


def test_a_resume_with_smaller_micro_batches_trains_as_in_trl_grpo(tmp_path, tiny_model_dir, caplog):
    """Resumed inside a rollout cycle with micro-batches of 4 and twice the accumulation (after an out-of-memory
    crash, say): TRL saves no rollout batch and generates a new one; `--up_mode off` leaves its saved batch, which has
    the old shape, unread, and says so."""
    model, start = tiny_model_dir
    run = shared_argv(model, hub_folder(tmp_path / "set", {"prompt": CHAT}), reward_funcs="cli_rewards.spread")
    run = argv(*run, lr_scheduler_type="constant")  # the run cut at step 1 leaves step 2 a rate above 0
    cut = argv(*run, save_strategy="steps", save_steps=1, max_steps=1)  # checkpoint-1: half a rollout batch left
    smaller = dict(per_device_train_batch_size=4, gradient_accumulation_steps=2)
    theirs, ours = tmp_path / "trl", tmp_path / "off"
    for words, resume in ((cut, {}), (argv(*run, **smaller), {"resume_from_checkpoint": "checkpoint-1"})):
        resume = {k: theirs / v for k, v in resume.items()}
        parsed = trl_grpo_script.make_parser().parse_args_and_config(args=argv(*words, output_dir=theirs, **resume))
        trl_grpo_script.main(*parsed[:4])
        resume = {k: ours / v.name for k, v in resume.items()}
        with caplog.at_level("WARNING"):
            assert main(["train", *argv(*words, output_dir=ours, up_mode="off", plot=False, **resume)]) == 0
        assert (ours / "checkpoint-1" / "rollout_buffer_rank0.pt").exists()
    assert "rollout batch was generated with another per_device_train_batch_size" in caplog.text
    final = load_file(ours / "model.safetensors")
    assert_same_trained_weights(load_file(theirs / "model.safetensors"), final, start)
    assert_same_trained_weights(final, final, load_file(ours / "checkpoint-1" / "model.safetensors"))  # step 2 moved


# --- the model flags reach `from_pretrained` as in `trl grpo`, or stop in one line ----------------------------------
MODEL_FLAGS = (
    "--model_revision main --attn_implementation eager --dtype float32 --trust_remote_code false --use_peft true"
)


@pytest.mark.parametrize("quantization", [
    pytest.param("--load_in_4bit true --bnb_4bit_quant_type fp4 --use_bnb_nested_quant true".split(), id="4bit"),
    pytest.param("--load_in_8bit true".split(), id="8bit"),
    pytest.param([], id="no_quantization"),
])  # fmt: skip
def test_model_flags_reach_from_pretrained_as_in_trl_grpo(tmp_path, tiny_model_dir, monkeypatch, quantization):
    """`from_pretrained` receives the same arguments under both scripts."""
    monkeypatch.setattr(up_trl.extras, "installed", lambda module: True)  # bitsandbytes, as up-trl's check sees it
    received = []

    def capture(cls, *args, **kwargs):
        received.append(kwargs)
        raise ModelLoaded

    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", classmethod(capture))
    model, _ = tiny_model_dir
    data = hub_folder(tmp_path / "set", {"prompt": PLAIN})
    run = shared_argv(model, data, *MODEL_FLAGS.split(), *quantization, reward_funcs="cli_rewards.length")
    parsed = trl_grpo_script.make_parser().parse_args_and_config(args=[*run, *argv(output_dir=tmp_path / "a")])
    with pytest.raises(ModelLoaded):
        trl_grpo_script.main(*parsed[:4])
    with pytest.raises(ModelLoaded):
        main(["train", *run, *argv(output_dir=tmp_path / "b")])
    theirs, ours = ({k: v.to_dict() if hasattr(v, "to_dict") else v for k, v in r.items()} for r in received)
    assert theirs == ours and {"revision", "attn_implementation", "dtype", "trust_remote_code"} <= set(ours)
    if quantization:
        assert ours["quantization_config"]["load_in_4bit" if "--load_in_4bit" in quantization else "load_in_8bit"]


QUANTIZATION_REFUSALS = [
    pytest.param("--load_in_8bit true --use_peft true", "--load_in_8bit true loads the model with "
                 "bitsandbytes, not installed here: pip install bitsandbytes.", id="no_bitsandbytes"),
    pytest.param("--load_in_4bit true", "--load_in_4bit true: a quantized model trains only through adapters "
                 "(QLoRA): add --use_peft true.", id="no_adapters"),
    pytest.param("--load_in_4bit true --trainer async_grpo",
                 "--load_in_4bit true: TRL's AsyncGRPOTrainer loads no quantized model", id="async"),
]  # fmt: skip


@pytest.mark.parametrize("flags, expected", QUANTIZATION_REFUSALS)
def test_quantization_that_cannot_work_is_one_line_before_the_model(
    no_model_loads, capsys, monkeypatch, flags, expected
):
    installed = "pip install bitsandbytes" not in expected  # the other checks, where bitsandbytes is installed
    monkeypatch.setattr(up_trl.extras, "installed", lambda module: installed)
    line = one_line(capsys, argv(*TINY, flags, model_name_or_path="outputs/quickstart"))
    assert line.startswith(expected)


# --- data and rewards that do not fit: one line, before the model loads --------------------------------------------
NOT_PASSED = "which the training set does not pass to rewards"
UNSCORABLE_SETS = [
    pytest.param({"prompt": PLAIN}, "math_accuracy", f"--reward_funcs math_accuracy reads the column 'solution', "
                 f"{NOT_PASSED}; its columns are ['prompt'] (the gold answer", id="no_gold"),
    pytest.param({"prompt": PLAIN}, "accuracy_reward", "--reward_funcs accuracy_reward reads the column 'solution'",
                 id="trls_accuracy_without_gold"),
    pytest.param({"prompt": PLAIN, "answer": ["1"] * 16}, "cli_rewards.says_target", "--reward_funcs "
                 f"cli_rewards.says_target reads the column 'target', {NOT_PASSED}; its columns are ['prompt', "
                 "'solution', 'answer']: add it", id="reward_columns"),
    pytest.param({"prompt": PLAIN}, "cli_rewards.reads_prompt", "--reward_funcs cli_rewards.reads_prompt reads the "
                 f"column 'prompt', {NOT_PASSED}", id="prompt_is_not_passed"),
    pytest.param({"text": PLAIN}, "cli_rewards.length", "--dataset_name ", id="no_prompt_or_problem"),
]  # fmt: skip


@pytest.mark.parametrize("columns, reward, expected", UNSCORABLE_SETS)
def test_a_set_the_rewards_cannot_score_is_one_line(no_model_loads, capsys, columns, reward, expected):
    data = hub_folder(no_model_loads / "set", columns)
    capsys.readouterr()  # the set's own writing, not the run's
    flags = dict(model_name_or_path="outputs/quickstart", dataset_name=data, reward_funcs=reward)
    line = one_line(capsys, argv(*TINY, output_dir=no_model_loads / "out", **flags))
    assert line.startswith(expected)
    if "text" in columns:
        assert "Need a `prompt` column" in line and "found ['text']" in line and '{"text": "prompt"}' in line


def test_the_reward_kwargs_are_trls():
    """`rewards.registry`'s list of what TRL passes every reward, and of the columns it keeps back, is TRL's."""
    source = inspect.getsource(GRPOTrainer._calculate_rewards)
    assert f"if key not in {list(COLUMNS_NOT_PASSED)}".replace("'", '"') in source
    passed = {"prompts", "completions", "completion_ids"} | set(re.findall(r'(?<!_)reward_kwargs\["(\w+)"\]', source))
    assert passed == TRAINER_REWARD_KWARGS


@pytest.mark.parametrize("source, expected", [
    pytest.param("", "--dataset_name is empty: name a Hub id, a local folder or data file", id="empty_name"),
    pytest.param("bad.jsonl", "--dataset_name bad.jsonl: datasets cannot read it as json (", id="malformed_jsonl"),
])  # fmt: skip
def test_a_source_datasets_cannot_read_is_our_line_alone(no_model_loads, capsys, source, expected):
    """Nothing of datasets' own before our line: stderr is one line [unreadable_source]."""
    (no_model_loads / "bad.jsonl").write_text('{"prompt": "a", "solution": "1"}\n{"prompt": "b", "solu\n')
    flags = dict(model_name_or_path="outputs/quickstart", dataset_name=source, output_dir=no_model_loads / "out")
    assert main(argv("train", *TINY, **flags)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"up-trl train: error: {expected}"), err
