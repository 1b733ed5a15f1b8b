"""Every GPU recipe fits its GPUs by the arithmetic of benchmarks/recipe_memory.py."""

import dataclasses
import importlib
import re

import pytest
import yaml
from conftest import ROOT
from trl import GRPOConfig, RLOOConfig

memory = importlib.import_module("recipe_memory")  # benchmarks/, on pytest's pythonpath (as tests/test_benchmarks.py)

GPU_RECIPES = memory.gpu_recipes()


def recipe(name: str) -> dict:
    return yaml.safe_load((memory.RECIPES / f"{name}.yaml").read_text())


def test_every_recipe_but_the_cpu_default_is_a_gpu_recipe():
    every = sorted(path.stem for path in memory.RECIPES.glob("*.yaml"))
    assert sorted([*GPU_RECIPES, "quickstart"]) == every and recipe("quickstart")["use_cpu"]
    assert not any(recipe(name).get("use_cpu") for name in GPU_RECIPES)
    assert {name for pair in memory.twins() for name in pair} == set(GPU_RECIPES)  # every one has its twin


@pytest.mark.parametrize("name", GPU_RECIPES)
def test_every_gpu_recipe_names_its_hardware_fits_it_and_carries_its_figures(name):
    """Its first line says it has not run on a GPU; its vLLM comment lines are the arithmetic's, to the digit."""
    line = memory.first_line(name)
    assert line.startswith("# Not yet run on a GPU: sized by arithmetic for "), line
    assert "(docs/launching.md#memory)" in line
    memory.hardware(name)  # names a GPU kind and count that its launch line's accelerate config agrees with
    e = memory.estimate(name)
    assert e.fits_vllm, f"{name}: vLLM's KV room {e.kv_room:.1f} GiB < its budget {e.kv_budget:.1f} GiB"
    assert e.fits_gpu, f"{name}: {e.used:.1f} GiB per GPU > {e.gpu_memory:.0f} GiB"
    lines = memory.memory_lines(e)
    assert "\n".join(lines) in (memory.RECIPES / f"{name}.yaml").read_text(), "\n".join(lines)


@pytest.mark.parametrize("up, base", memory.twins())
def test_twins_have_the_same_figures(up, base):
    assert dataclasses.replace(memory.estimate(up), recipe=base) == memory.estimate(base)


@pytest.mark.parametrize("name, change, fails", [
    ("up_dapo", {"per_device_train_batch_size": 16, "steps_per_generation": 8}, "fits_gpu"),  # the old batch
    ("up_dapo", {"per_device_train_batch_size": 2}, "fits_gpu"),
    ("up_dapo", {"vllm_tensor_parallel_size": 1}, "fits_vllm"),  # 27.5 GiB of weights in a 19.5 GiB share
    ("up_dapo", {"vllm_gpu_memory_utilization": 0.15}, "fits_vllm"),
    ("up_dapo", {"vllm_gpu_memory_utilization": 0.35}, "fits_gpu"),
    ("up_gspo", {"vllm_tensor_parallel_size": 1}, "fits_vllm"),
    ("up_grpo", {"max_completion_length": 16384}, "fits_gpu"),
    ("up_grpo_vl", {"vllm_max_model_length": None}, "fits_vllm"),  # the model's 262,144 positions
    ("up_async_grpo", {"token_budget": 40960}, "fits_gpu"),  # TRL's default: the server's max_model_len
    ("up_async_grpo", {"dtype": "float32"}, "fits_gpu"),
    ("up_gsm8k_small", {"vllm_gpu_memory_utilization": 0.9}, "fits_gpu"),
])  # fmt: skip
def test_a_larger_batch_or_a_smaller_share_stops_fitting(name, change, fails):
    assert memory.estimate(name).fits_gpu and memory.estimate(name).fits_vllm
    changed = {**recipe(name), **change}
    assert not getattr(memory.estimate(name, changed), fails), change


def test_the_paper_recipes_as_they_were_did_not_fit():
    """TRL 1.16's defaults could not hold Qwen3-14B's or Qwen3-30B-A3B's weights, nor train beside them."""
    old = {"per_device_train_batch_size": 16, "steps_per_generation": 8, "vllm_gpu_memory_utilization": 0.3}
    dapo = memory.estimate("up_dapo", {**recipe("up_dapo"), **old, "vllm_tensor_parallel_size": 1})
    assert dapo.kv_room < 0 and not dapo.fits_gpu
    h100s = memory.Hardware(8, "H100 80 GB", 3)
    gspo = {**recipe("up_gspo"), **old, "per_device_train_batch_size": 8, "vllm_tensor_parallel_size": 1}
    assert memory.estimate("up_gspo", gspo, h100s).kv_room < 0


def test_a_gpu_kind_or_launch_the_arithmetic_does_not_know_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "RECIPES", tmp_path)
    (tmp_path / "a.yaml").write_text("# Not yet run on a GPU: sized by arithmetic for 8 x A100 40 GB\n")
    with pytest.raises(ValueError, match="names no hardware"):
        memory.hardware("a")
    (tmp_path / "b.yaml").write_text(
        "# Not yet run on a GPU: sized by arithmetic for 8 x H100 80 GB\n"
        "# Launch: up-trl train --accelerate_config zero3 --num_processes 4 --config b\n"
    )
    with pytest.raises(ValueError, match="4 processes launched on 8 x H100 80 GB a machine, 1 machine"):
        memory.hardware("b")


@pytest.mark.parametrize("name", ["Qwen/Qwen3-14B-Base", "Qwen/Qwen3-8B", "Qwen/Qwen2.5-0.5B-Instruct"])
def test_the_model_table_adds_up(name):
    """A dense model's parameter count from its shape is the table's, to 1%."""
    m = memory.MODELS[name]
    attention = 2 * m.hidden * m.heads * m.head_dim + 2 * m.hidden * m.kv_heads * m.head_dim
    counted = m.layers * (attention + 3 * m.hidden * m.mlp_width) + m.vocab * m.hidden * (1 if m.tied else 2)
    assert counted == pytest.approx(m.params, rel=0.01)


def test_the_arithmetic_reads_trls_defaults():
    """Where a recipe leaves a vLLM setting or the KL coefficient out, the arithmetic takes TRL 1.16's default."""
    for config in (GRPOConfig, RLOOConfig):
        fields = config.__dataclass_fields__
        assert (fields["vllm_gpu_memory_utilization"].default, fields["vllm_tensor_parallel_size"].default) == (0.3, 1)
    assert GRPOConfig.__dataclass_fields__["beta"].default == memory.TRL_BETA["grpo"]
    assert RLOOConfig.__dataclass_fields__["beta"].default == memory.TRL_BETA["rloo"]


def test_launching_md_shows_the_table_and_the_first_runs_figures():
    page = (ROOT / "docs" / "launching.md").read_text()
    assert memory.table() in page
    minutes = round(memory.estimate_minutes(memory.FIRST_RUN))
    assert f"about {minutes} minutes" in page
    assert f"about {minutes} minutes" in (memory.RECIPES / f"{memory.FIRST_RUN}.yaml").read_text()
    first = memory.estimate(memory.FIRST_RUN)
    assert re.search(rf"{first.used:.1f} of {first.gpu_memory:.0f} GiB", page)
    for line in memory.first_run_on_small_gpus():  # a notebook's GPU: only micro-batches of 4 on 24 GB fit
        assert f"- {line}\n" in page
    assert [line.endswith(", fits") for line in memory.first_run_on_small_gpus()] == [False, True, False, False]


def test_the_first_run_is_off_policy_so_that_up_acts():
    """Two optimizer steps per rollout batch: the second is off-policy, where UP acts."""
    r = recipe(memory.FIRST_RUN)
    assert r["gradient_accumulation_steps"] % (r["steps_per_generation"] * r.get("num_iterations", 1)) != 0
    assert r["use_vllm"] and r["vllm_mode"] == "colocate" and memory.hardware(memory.FIRST_RUN).gpus == 1
    assert memory.MODELS[r["model_name_or_path"]].params < 0.7e9 and r["dataset_name"] == "gsm8k"
