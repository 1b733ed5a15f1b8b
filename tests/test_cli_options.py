"""A usage error answers without importing torch, TRL or transformers (`up_trl.cli.options`: the stand-in parser),
and it is the same answer the real parser gives; a missing optional dependency names its extra (`up_trl.extras`)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import same_code_env

from up_trl.cli import options, write_options
from up_trl.cli.catalog import recipe_names, recipe_path
from up_trl.cli.checks import UsageError
from up_trl.cli.parse import (
    TRAINERS,
    USAGE_TRAIN,
    checked_train_args,
    make_parser,
    parse_train_args,
    precheck_train_args,
)

HEAVY = ("torch", "trl", "transformers", "accelerate", "deepspeed")

# Each ends in a usage error (or prints help): none may import a heavy package.
USAGE_ERRORS = [
    ["train", "--leraning_rate", "1"],
    ["train", "--learning_rate", "abc"],
    ["train", "--top_p", "2"],
    ["train", "--up_mode", "sideways"],
    ["train", "--trainer", "rloo", "--loss_type", "dapo"],
    ["train", "--trainer", "nope"],
    ["train", "--num_generations", "3"],
    ["train", "--config", "no_such_recipe"],
    ["train", "--reward_funcs", "no_such_reward"],
    ["train", "--dataset_name", "missing.jsonl"],
    ["train", "--model_name_or_path", "./no_such_folder"],
    ["train", "--num_processes", "2"],
    ["train", "--accelerate_config", "multi_gpu", "--num_processes", "2", "--leraning_rate", "1"],
    ["train", "--help"],
    ["train", "--help-all"],
    ["train", "--trainer", "async_grpo", "--help-all"],
    ["eval", "--help"],
    ["eval", "--k", "0"],
    ["eval", "--benchmarks", "nope"],
    ["eval", "--model", "./no_such_folder"],
    ["recipes"],
    ["--help"],
]


def test_the_written_options_are_current():
    # Stale (a TRL bump, a new config field): `up-trl train` still checks everything, on TRL's parser, slowly.
    written = json.loads(options.OPTIONS_FILE.read_text())
    assert written == json.loads(json.dumps(write_options.build())), (
        "src/up_trl/cli/options.json is stale: rewrite it with `PYTHONPATH=src python -m up_trl.cli.write_options`"
    )
    assert options.current() is not None


def test_usage_errors_import_no_torch_trl_or_transformers(tmp_path):
    # One process runs every command (sys.modules only grows), from an empty folder.
    code = (
        "import json, sys\nfrom up_trl.cli import main\ncodes = []\n"
        f"for argv in {USAGE_ERRORS!r}:\n"
        "    try:\n        codes.append(main(argv))\n    except SystemExit as exit:\n        codes.append(exit.code)\n"
        f"print(json.dumps([codes, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    run = [sys.executable, "-c", code]  # the timeout is a hang guard, not a speed check
    out = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path, env=same_code_env(), timeout=300)
    codes, heavy = json.loads(out.stdout.splitlines()[-1])
    expected = [0 if argv[-1] in ("--help", "--help-all", "recipes") else 2 for argv in USAGE_ERRORS]
    assert codes == expected, out.stderr
    assert heavy == [], f"imported {heavy} on the way to a usage error"


@pytest.mark.parametrize("trainer", list(TRAINERS))
@pytest.mark.parametrize("recipe", [None, *recipe_names()])
def test_the_stand_in_parses_as_trls_parser_does(trainer, recipe):
    argv = ["--trainer", trainer] + (["--config", recipe_path(recipe)] if recipe else [])
    try:
        real, real_argv = checked_train_args(list(argv))
    except UsageError as error:  # a recipe for another trainer: the stand-in refuses it in the same words
        with pytest.raises(UsageError) as stand_in:
            checked_train_args(list(argv), options.stand_in_parser)
        assert str(stand_in.value) == str(error)
        return
    stand_in, stand_in_argv = checked_train_args(list(argv), options.stand_in_parser)
    assert stand_in_argv == real_argv

    def plain(values):
        return {
            k: [getattr(x, "value", x) for x in v] if isinstance(v, list) else getattr(v, "value", v)
            for k, v in values.items()
        }

    assert plain(vars(stand_in.parse_known_args(stand_in_argv)[0])) == plain(vars(real.parse_known_args(real_argv)[0]))


@pytest.mark.parametrize(
    "argv",
    [
        ["--leraning_rate", "1"],
        ["--top_p", "2"],
        ["--trainer", "rloo", "--loss_type", "dapo"],
        ["--trainer", "async_grpo", "--beta", "0.1"],
        ["--num_generations", "3"],
        ["--loss_type", "cispo"],
        ["--num_processes", "2"],
        ["--save_steps", "2", "--save_strategy", "no"],
    ],
)
def test_the_stand_in_answers_as_the_real_parser(argv):
    with pytest.raises(UsageError) as real:
        parse_train_args(list(argv))
    with pytest.raises(UsageError) as stand_in:
        precheck_train_args(list(argv))
    assert str(stand_in.value) == str(real.value)


@pytest.mark.parametrize("trainer", list(TRAINERS))
def test_help_all_prints_what_trls_parser_prints(trainer, monkeypatch, capsys):
    # The stand-in wraps the help TRL's formatter filled in: the same text at any terminal width, and the same
    # text when options.json is stale and TRL's parser prints it.
    from up_trl.cli import main

    for columns in ("50", "100", "250"):
        monkeypatch.setenv("COLUMNS", columns)
        real = make_parser(trainer).format_help()
        assert options.stand_in_parser(trainer, prog="up-trl train", usage=USAGE_TRAIN).format_help() == real
        assert main(["train", "--trainer", trainer, "--help-all"]) == 0
        assert capsys.readouterr().out == real
    monkeypatch.setattr(options, "current", lambda: None)  # stale: TRL's parser answers
    assert main(["train", "--trainer", trainer, "--help-all"]) == 0
    assert capsys.readouterr().out == real


@pytest.mark.parametrize(
    "job",
    [["--leraning_rate", "1"], ["--learning_rate", "abc"], ["--top_p", "2"], ["--dataset_name", "missing.jsonl"]],
)
def test_accelerate_config_checks_the_job_before_launching(job, monkeypatch, capsys, tmp_path):
    # The same one line as without --accelerate_config, and accelerate is never started.
    import accelerate.commands.launch as launch_module

    def refuse(args):
        raise AssertionError("accelerate launch was called for a command line with a usage error")

    def answer(argv):  # (exit status, stderr); a value argparse refuses exits, as `up-trl train` does
        from up_trl.cli import main

        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
        return code, capsys.readouterr().err

    monkeypatch.setattr(launch_module, "launch_command", refuse)
    monkeypatch.chdir(tmp_path)
    code, alone = answer(["train", *job])
    assert code == 2 and alone.startswith(("up-trl train: error:", "usage: up-trl train")), alone
    assert answer(["train", "--accelerate_config", "multi_gpu", "--num_processes", "2", *job]) == (2, alone)


def test_a_stale_file_is_not_used(monkeypatch):
    monkeypatch.setattr(options, "fingerprint", lambda: {"trl": "0.0.0"})
    options.current.cache_clear()
    try:
        assert options.current() is None
        precheck_train_args(["--leraning_rate", "1"])  # nothing checked here: the real parser will
    finally:
        options.current.cache_clear()


# --- a missing optional dependency names its extra ----------------------------------------------------------------


@pytest.fixture
def without(monkeypatch):
    """`without("gguf")`: find_spec reports that module missing (nothing is uninstalled)."""
    real = importlib.util.find_spec
    gone: set[str] = set()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in gone else real(name, *a))
    return gone.add


def one_error_line(capsys, argv) -> str:
    from up_trl.cli import main

    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_the_offline_model_without_gguf_names_the_extra(without, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("UP_TRL_CACHE", str(tmp_path))  # nothing converted yet
    without("gguf")
    line = one_error_line(capsys, ["train", "--output_dir", str(tmp_path / "out")])
    assert '`pip install -e ".[offline]"`' in line and "gguf" in line


def test_deepspeed_and_vllm_missing_name_their_extras(without, capsys, tmp_path):
    without("deepspeed")
    without("vllm")
    line = one_error_line(capsys, ["train", "--accelerate_config", "zero3"])
    assert line.startswith("up-trl train: error: --accelerate_config zero3:") and '".[deepspeed]"' in line
    line = one_error_line(capsys, ["train", "--use_vllm", "true", "--output_dir", str(tmp_path / "out")])
    assert "use_vllm True" in line and '".[vllm]"' in line
    line = one_error_line(capsys, ["eval", "--backend", "vllm", "--model", str(tmp_path)])
    assert '".[vllm]"' in line


def test_the_hint_from_a_wheel_names_the_package(monkeypatch):
    from up_trl import extras

    monkeypatch.setattr(extras, "from_checkout", lambda: False)
    assert extras.install_hint("offline") == '`pip install "up-trl[offline]"`'
