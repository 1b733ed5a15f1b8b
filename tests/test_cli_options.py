"""A usage error answers without importing torch, TRL or transformers (`up_trl.cli.options`: the stand-in parser),
and it is the same answer the real parser gives; a missing optional dependency names its extra (`up_trl.extras`)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import same_code_env

import up_trl
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


@pytest.fixture(scope="module", autouse=True)
def options_table():
    """The options table for the installed versions, written as the first `up-trl train` writes it."""
    written = write_options.remember()
    assert written is not None and options.current() is not None, "the options cache could not be written"
    return written


def run_main(argv: list[str], cwd, **env) -> tuple[int, str, list[str]]:
    """`up_trl.cli.main(argv)` in a fresh process: (exit status, stderr, the heavy modules it imported)."""
    code = (
        "import json, sys\nfrom up_trl.cli import main\n"
        f"try:\n    code = main({argv!r})\nexcept SystemExit as exit:\n    code = exit.code\n"
        f"print(json.dumps([code, sorted(m for m in {HEAVY!r} if m in sys.modules)]))\n"
    )
    run = [sys.executable, "-c", code]  # the timeout is a hang guard, not a speed check
    out = subprocess.run(run, capture_output=True, text=True, cwd=cwd, env={**same_code_env(), **env}, timeout=300)
    status, heavy = json.loads(out.stdout.splitlines()[-1])
    return status, out.stderr, heavy


def test_the_table_is_written_on_first_use_then_answers_without_trl(tmp_path):
    cache = tmp_path / "cache"
    argv = ["train", "--leraning_rate", "1"]
    first = run_main(argv, tmp_path, UP_TRL_CACHE=str(cache))  # nothing written yet: TRL's parser answers
    tables = list((cache / "cli-options").glob("*.json"))
    assert first[0] == 2 and "--learning_rate" in first[1] and "trl" in first[2]
    assert len(tables) == 1 and json.loads(tables[0].read_text())["fingerprint"]["up-trl"] == up_trl.__version__
    second = run_main(argv, tmp_path, UP_TRL_CACHE=str(cache))  # the same line, before any heavy import
    assert second == (2, first[1], [])
    assert list((cache / "cli-options").iterdir()) == tables  # no temporary file left beside it


def test_an_unwritable_cache_still_gives_the_same_answer(tmp_path):
    blocked = tmp_path / "a_file"
    blocked.write_text("")  # a cache folder under a file cannot be created, whoever runs the tests
    answers = [run_main(["train", "--top_p", "2"], tmp_path, UP_TRL_CACHE=str(blocked / "cache")) for _ in range(2)]
    assert answers[0][0] == 2 and "top_p" in answers[0][1]
    assert answers[1] == answers[0]  # the real parser answered both times: nothing was written, nothing failed


@pytest.mark.slow
def test_ranks_starting_at_once_write_one_table(tmp_path):
    # Four processes with an empty cache (the ranks of a first launch) each build and write the table.
    code = "from up_trl.cli.write_options import remember; print(remember())"
    env = {**same_code_env(), "UP_TRL_CACHE": str(tmp_path)}
    runs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env) for _ in range(4)
    ]
    paths = {run.communicate(timeout=600)[0].strip() for run in runs}
    assert all(run.returncode == 0 for run in runs)
    assert len(paths) == 1 and list((tmp_path / "cli-options").iterdir()) == [Path(paths.pop())]
    table = json.loads((tmp_path / "cli-options").iterdir().__next__().read_text())
    assert table == json.loads(json.dumps(write_options.build()))


def test_a_table_for_other_versions_is_not_used(monkeypatch, tmp_path):
    monkeypatch.setenv("UP_TRL_CACHE", str(tmp_path))
    options.current.cache_clear()
    try:
        found = options.fingerprint()
        stale = json.loads(json.dumps(write_options.build()))
        stale["fingerprint"] = {**found, "trl": "0.0.0"}  # a table written for another trl, at this one's name
        options.cache_file(found).parent.mkdir(parents=True)
        options.cache_file(found).write_text(json.dumps(stale))
        assert options.current() is None
        assert precheck_train_args(["--leraning_rate", "1"]) is None  # nothing checked here: the real parser will
        with pytest.raises(UsageError, match="leraning_rate"):
            parse_train_args(["--leraning_rate", "1"])  # ... and does; then `up-trl train` writes this one's table
        assert write_options.remember() == options.cache_file(found)
        assert options.current()["fingerprint"] == found
        with pytest.raises(UsageError, match="leraning_rate"):
            precheck_train_args(["--leraning_rate", "1"])
    finally:
        options.current.cache_clear()


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
    # text when no table is written and TRL's parser prints it.
    from up_trl.cli import main

    for columns in ("50", "100", "250"):
        monkeypatch.setenv("COLUMNS", columns)
        real = make_parser(trainer).format_help()
        assert options.stand_in_parser(trainer, prog="up-trl train", usage=USAGE_TRAIN).format_help() == real
        assert main(["train", "--trainer", trainer, "--help-all"]) == 0
        assert capsys.readouterr().out == real
    monkeypatch.setattr(options, "current", lambda: None)  # no table: TRL's parser answers
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
