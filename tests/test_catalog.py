"""Recipes and accelerate configs are package data found by name; `--accelerate_config` launches accelerate."""

import importlib
import json
import os
import subprocess
from pathlib import Path

import accelerate.commands.launch as launch_module
import pytest
import trl
import yaml
from conftest import ROOT, TINY, argv

from up_trl import cli
from up_trl.cli import catalog, main, parse, parse_train_args
from up_trl.cli.catalog import CatalogError, accelerate_config_names, accelerate_config_path, recipe_names, recipe_path
from up_trl.run.ending import LAUNCHED, launched_command

PACKAGE = Path(__import__("up_trl").__file__).parent
launch = importlib.import_module("up_trl.cli.launch")  # the module (`up_trl.cli.launch` is its function `launch`)


def test_recipes_and_accelerate_configs_live_in_the_package():
    assert Path(recipe_path("up_dapo")) == PACKAGE / "recipes" / "up_dapo.yaml"
    assert Path(accelerate_config_path("zero3")) == PACKAGE / "accelerate_configs" / "zero3.yaml"
    assert {"quickstart", "up_dapo", "dapo", "up_gspo", "gspo", "up_rloo", "up_async_grpo"} <= set(recipe_names())
    names = "single_gpu multi_gpu zero2 zero3 multi_node_zero3 zero3_cpu fsdp2"
    assert set(accelerate_config_names()) == set(names.split())


def test_the_checkouts_configs_accelerate_are_the_configs_found_by_name():
    """configs/accelerate/*.yaml are the files `--accelerate_config NAME` finds (one copy in git)."""
    folder = ROOT / "configs" / "accelerate"
    if not folder.is_dir():
        pytest.skip("not a checkout (an installed wheel): no configs/accelerate/")
    link = ROOT / "src" / "up_trl" / "accelerate_configs"
    assert link.is_symlink() and os.readlink(link) == "../../configs/accelerate"
    assert sorted(path.stem for path in folder.iterdir()) == accelerate_config_names()  # YAML only, all of them
    assert all(path.suffix == ".yaml" and not path.is_symlink() for path in folder.iterdir())
    for name in accelerate_config_names():
        found = Path(accelerate_config_path(name))
        assert found.resolve() == (folder / f"{name}.yaml").resolve(), name
        assert found.read_bytes() == (folder / f"{name}.yaml").read_bytes()
        assert "distributed_type" in yaml.safe_load(found.read_text())


def test_a_name_a_name_with_yaml_and_a_path_all_work(tmp_path, monkeypatch):
    assert recipe_path("up_dapo.yaml") == recipe_path("up_dapo")
    mine = tmp_path / "up_dapo.yaml"  # a local file wins over the packaged recipe of the same name
    mine.write_text("learning_rate: 1.0e-7\n")
    assert recipe_path(str(mine)) == str(mine)
    monkeypatch.chdir(tmp_path)
    assert recipe_path("up_dapo.yaml") == "up_dapo.yaml"
    with pytest.raises(CatalogError, match="no packaged recipe of that name .*up_dapo"):
        recipe_path("up_dapoo")
    with pytest.raises(CatalogError, match="no such file"):
        recipe_path("some/dir/up_dapo.yaml")  # a path to a missing file is not silently the packaged one


def test_config_by_name_parses_like_the_file():
    by_name = parse_train_args(argv("--use_cpu true --bf16 false", config="up_gspo"))[1]
    by_path = parse_train_args(argv("--use_cpu true --bf16 false", config=recipe_path("up_gspo")))[1]
    assert (by_name.importance_sampling_level, by_name.epsilon, by_name.delta) == ("sequence", 3e-4, 3.0)
    assert by_name.to_dict() == by_path.to_dict()


def test_up_trl_recipes_lists_every_recipe_with_what_it_trains(capsys):
    assert main(["recipes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[0]: line for line in lines if line and line.split()[0] in recipe_names()}
    assert set(listed) == set(recipe_names())
    assert "UP-GSPO: Qwen/Qwen3-30B-A3B-Base on dapo-math-17k (twin: gspo)" in listed["up_gspo"]
    assert listed["quickstart"].endswith("UP-DAPO: SmolLM2-135M-Instruct (offline) on arithmetic, CPU")
    for name in recipe_names():  # every line is the recipe's own values
        recipe = yaml.safe_load(Path(recipe_path(name)).read_text())
        assert recipe.get("dataset_name", "arithmetic") in catalog.describe_recipe(name)


def test_accelerate_config_launches_through_accelerate(monkeypatch):
    """The job's flags stay the job's; accelerate's own flags go to accelerate launch."""
    launched, checked = [], []
    monkeypatch.setattr(launch_module, "launch_command", launched.append)
    monkeypatch.setattr(parse, "check_train_args", checked.append)  # up_dapo's use_vllm needs vllm installed
    argv = "--accelerate_config zero3 --num_processes 8 --config up_dapo --main_process_port 29501"
    argv += " --learning_rate 5e-7 --multi_gpu"
    assert main(["train", *argv.split()]) == 0
    (args,) = launched
    assert args.config_file == accelerate_config_path("zero3") and args.num_processes == 8
    assert args.main_process_port == 29501 and args.multi_gpu
    assert args.module and args.training_script == "up_trl"
    assert args.training_script_args == ["train", "--config", "up_dapo", "--learning_rate", "5e-7"]
    assert checked == [args.training_script_args[1:]]


def launched_by(monkeypatch, line: str):
    """`up-trl train LINE`'s parsed `accelerate launch` arguments, or None where it trained in this process. The job's
    checks run (a tiny job, `TINY`); no process starts and no model loads. The processes it would start get the whole
    line (their resume command repeats it)."""
    launched, trained = [], []

    def launch_command(args):
        assert launched_command() == line.split()
        launched.append(args)

    monkeypatch.setattr(launch_module, "launch_command", launch_command)
    monkeypatch.setattr(cli, "train", trained.append)
    assert main(["train", *line.split()]) == 0
    assert len(launched) + len(trained) == 1
    return launched[0] if launched else None


def test_what_trl_grpo_launches_up_trl_train_launches(monkeypatch, no_model_loads, capsys):
    """`trl grpo` hands what its parser does not take to `accelerate launch` (with or without --accelerate_config,
    TRL's config names too), reads accelerate's default config, and starts one process per GPU without one."""
    job = " ".join(TINY)
    assert launched_by(monkeypatch, job) is None  # one plain process: this one
    # a recipe's keys TRL's config takes are the job's, though accelerate has some too (gradient_accumulation_steps)
    assert launched_by(monkeypatch, f"--config quickstart --gradient_accumulation_steps 2 {job}") is None
    for line in (f"--num_processes 2 {job}", f"--num_processes=2 {job}"):
        args = launched_by(monkeypatch, line)
        assert args.num_processes == 2 and args.config_file is None and args.training_script_args == ["train", *TINY]
    trls = Path(trl.__file__).parent / "accelerate_configs" / "zero1.yaml"  # a name only TRL ships: TRL's file
    for line in (f"--accelerate_config zero1 {job}", f"--accelerate_config=zero1 {job}"):
        assert Path(launched_by(monkeypatch, line).config_file) == trls
    assert main(argv("train --accelerate_config zero9")) == 2
    assert "no packaged accelerate config of that name" in capsys.readouterr().err
    assert main(argv("train --cpu true", *TINY)) == 2  # accelerate would run a script named "true"
    assert "--cpu is a flag of `accelerate launch` that takes no value: drop 'true'." in capsys.readouterr().err

    monkeypatch.setattr(launch, "visible_gpus", lambda: 2)  # accelerate's rule: one process per GPU
    assert launched_by(monkeypatch, job).config_file is None
    monkeypatch.setattr(launch, "visible_gpus", lambda: 1)
    default = no_model_loads / "default_config.yaml"  # `accelerate config` wrote one: accelerate reads it
    default.write_text("distributed_type: MULTI_GPU\nnum_processes: 2\n")
    monkeypatch.setattr(launch_module, "default_config_file", str(default))
    args = launched_by(monkeypatch, job)
    assert args.config_file is None and args.training_script_args == ["train", *TINY]
    monkeypatch.setenv("ACCELERATE_DYNAMO_USE_FULLGRAPH", "False")  # in a process `accelerate launch` started
    assert launched_by(monkeypatch, job) is None  # it does not launch again


def test_a_recipes_launch_keys_go_to_accelerate_and_the_line_wins(monkeypatch, no_model_loads):
    """TRL's parser hands a recipe's unknown keys on as flags: `num_processes` and `accelerate_config` launch (0 is a
    value). The processes it starts read the same recipe without them."""
    recipe = no_model_loads / "mine.yaml"
    launch_keys = "num_processes: 4\naccelerate_config: multi_gpu\nmachine_rank: 0\n"
    recipe.write_text(Path(recipe_path("quickstart")).read_text() + launch_keys)
    args = launched_by(monkeypatch, f"--config {recipe} {' '.join(TINY)}")
    assert (args.num_processes, args.machine_rank) == (4, 0) and args.config_file == accelerate_config_path(
        "multi_gpu"
    )
    assert args.training_script_args == ["train", "--config", str(recipe), *TINY]
    args = launched_by(monkeypatch, f"--config {recipe} --num_processes 2 --accelerate_config zero2 {' '.join(TINY)}")
    assert args.num_processes == 2 and args.config_file == accelerate_config_path("zero2")
    monkeypatch.setenv(LAUNCHED, "1")  # one of the processes it started: the recipe parses, the keys unread
    assert launched_by(monkeypatch, f"--config {recipe} {' '.join(TINY)}") is None
    assert parse_train_args(["--config", str(recipe), *TINY])[1].per_device_train_batch_size == 8


def test_a_launched_process_gives_accelerates_flag_back_to_the_launcher(monkeypatch, capsys):
    monkeypatch.setenv(LAUNCHED, "1")
    assert main(argv("train --num_processes 2 --max_steps 1")) == 2
    assert "give it to the launcher (`accelerate launch --num_processes ..." in capsys.readouterr().err


def test_a_launched_process_exit_status_is_the_commands(monkeypatch, no_model_loads, capsys):
    """The process said why, in its own line (a usage error: 2); the launcher adds no line and returns its status."""

    def fails(args):
        raise subprocess.CalledProcessError(2, ["python", "-m", "up_trl", "train"])

    monkeypatch.setattr(launch_module, "launch_command", fails)
    assert main(["train", "--num_processes", "2", *TINY]) == 2
    assert "error" not in capsys.readouterr().err


def test_a_launched_processs_resume_command_repeats_the_launch(monkeypatch, no_model_loads):
    line = ["--accelerate_config", "multi_gpu", "--num_processes", "2", *TINY]
    monkeypatch.setenv(LAUNCHED, json.dumps(line))  # what `up-trl train` hands the processes it starts
    job = parse.check_train_args(list(TINY))
    assert job.given == line and "num_processes" not in job.flags


def test_the_batch_shape_is_checked_with_the_processes_accelerate_starts(monkeypatch, no_model_loads, capsys):
    """16 completions a group: 2 mini-batches of 1 a process fill a group on 8 processes, not on 1. TRL's config
    builds the generation batch from `world_size`, 1 in the launcher: the launcher checks it as the processes do, as
    many as accelerate starts (without a config and with no GPU, one, whatever --num_processes says)."""
    shape = "--num_generations 16 --per_device_train_batch_size 1 --steps_per_generation 2"
    job = " ".join(argv(*TINY, "--max_completion_length 4", num_generations=None, per_device_train_batch_size=None))
    on_8 = launched_by(monkeypatch, f"--accelerate_config multi_gpu --num_processes 8 {shape} {job}")
    assert on_8.num_processes == 8
    assert launched_by(monkeypatch, f"--accelerate_config multi_gpu {shape} {job}").num_processes is None  # its 8
    for line, size in (
        (f"--accelerate_config multi_gpu --num_processes 2 {shape}", 4),
        (f"--num_processes 8 {shape}", 2),
    ):
        assert main(["train", *f"{line} {job}".split()]) == 2
        assert f"generation_batch_size ({size}) must be divisible by num_generations (16)" in capsys.readouterr().err


def test_trls_dashed_aliases_are_flags_too():
    """TRL's parser takes `--learning-rate` for `--learning_rate` (transformers' HfArgumentParser): so do we."""
    config = parse_train_args(argv("--use_cpu true --bf16 false --learning-rate 3e-6 --max-steps 2"))[1]
    assert (config.learning_rate, config.max_steps) == (3e-6, 2)


@pytest.mark.parametrize(
    "job",
    [["--leraning_rate", "1"], ["--learning_rate", "abc"], ["--top_p", "2"], ["--dataset_name", "missing.jsonl"]],
)
def test_accelerate_config_checks_the_job_before_launching(job, monkeypatch, capsys, tmp_path):
    # The same one line as without --accelerate_config, and accelerate is never started.
    def refuse(args):
        raise AssertionError("accelerate launch was called for a command line with a usage error")

    def answer(argv):  # (exit status, stderr); a value argparse refuses exits, as `up-trl train` does
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
        return code, capsys.readouterr().err

    monkeypatch.setattr(launch_module, "launch_command", refuse)
    monkeypatch.chdir(tmp_path)
    code, alone = answer(["train", *job])
    assert code == 2 and alone.startswith(("up-trl train: error:", "usage: up-trl train")), alone
    assert answer([*argv("train --accelerate_config multi_gpu --num_processes 2"), *job]) == (2, alone)
