"""DeepSpeed ZeRO-3 on CPU (2 processes): `up-trl train` end to end, and steps equal to one process's."""

import importlib.util
import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from conftest import ROOT, argv, tiny_train_argv
from distributed_step import LOSS_TYPES
from transformers import AutoModelForCausalLM

from up_trl.cli.catalog import accelerate_config_path
from up_trl.models.offline import save_tiny_model
from up_trl.run.checkpoints import checkpoint_problem, read_mark
from up_trl.trainers.grpo_trainer import UP_METRICS

TESTS = Path(__file__).resolve().parent
ZERO3_CPU = accelerate_config_path("zero3_cpu")
ZERO3_LAUNCH = "--accelerate_config zero3_cpu --num_processes 2"  # `up-trl train`'s own launch, with a free port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("deepspeed") is None,
        reason="deepspeed is not installed: pip install -e '.[deepspeed]' (CI installs it, so this runs there)",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:  # a fixed 29500 would collide with a concurrent test run on the same machine
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(config_file, *args) -> list[str]:
    """`accelerate launch --config_file CONFIG` on 2 processes, a free port, then `args`."""
    launch = argv(config_file=config_file, num_processes=2, main_process_port=_free_port())
    return [sys.executable, "-m", "accelerate.commands.launch", *launch, *map(str, args)]


def _run(cmd: list[str], timeout: int = 480) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", WANDB_DISABLED="true")
    env["TOKENIZERS_PARALLELISM"] = "false"
    # `distributed_step.length_reward` by dotted path, as a user's own reward module next to the recipe.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    noise = ("FutureWarning", "warnings.warn(", "return func(")
    stderr = "\n".join(line for line in proc.stderr.splitlines() if not any(n in line for n in noise))
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout ---\n{proc.stdout[-3000:]}\n"
        f"--- stderr ---\n{stderr[-8000:]}"
    )
    return proc


def test_cli_train_under_zero3_on_two_processes(tmp_path):
    tiny = save_tiny_model(tmp_path / "tiny")
    data = tmp_path / "arithmetic.jsonl"
    data.write_text(
        "".join(json.dumps({"problem": f"{i} + {i + 3} = ?", "answer": str(2 * i + 3)}) + "\n" for i in range(32))
    )
    out = tmp_path / "out"
    # The quickstart recipe fills what is not set here; a dense reward beside the default one gives every group spread.
    rewards = ["math_accuracy", "distributed_step.length_reward"]
    line = "--config quickstart --max_steps 2 --num_iterations 2 --per_device_train_batch_size 4 --num_generations 4"
    line += " --max_completion_length 8 --learning_rate 1e-2 --logging_steps 1 --use_cpu true --bf16 false"
    flags = argv(line, "--report_to none --save_strategy no --plot false", model_name_or_path=tiny, dataset_name=data,
                 reward_funcs=rewards, output_dir=out)  # fmt: skip
    # `up-trl train --accelerate_config zero3_cpu --num_processes 2`: the CLI launches itself through accelerate.
    _run([sys.executable, "-m", "up_trl", "train", *argv(ZERO3_LAUNCH, main_process_port=_free_port()), *flags])

    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = {r["step"]: r for r in records if "loss" in r}
    assert sorted(steps) == [1, 2]
    for step, record in steps.items():
        assert math.isfinite(record["loss"]), step
        missing = [k for k in UP_METRICS if k not in record]
        assert not missing, f"step {step} lacks {missing}"
        assert 0 < record["up/positive_token_frac"] < 1
    assert steps[2]["up/positive_abs_log_ratio_mean"] > 0  # step 2 is off-policy (num_iterations=2)

    # ZeRO-3 shards the parameters: the saved model must be the gathered, full one, and trained.
    before = dict(AutoModelForCausalLM.from_pretrained(tiny).named_parameters())
    after = dict(AutoModelForCausalLM.from_pretrained(out).named_parameters())
    assert before.keys() == after.keys()
    assert all(after[n].shape == p.shape and torch.isfinite(after[n]).all() for n, p in before.items())
    assert sum(not torch.equal(after[n], p) for n, p in before.items()) > 0


def _two_process_save_run(tmp_path: Path, out: Path) -> list[str]:
    """The command line of `up-trl train` on 2 ZeRO-3 processes saving every step, `--save_total_limit 1`."""
    tiny = tmp_path / "tiny"
    model = str(tiny) if tiny.exists() else save_tiny_model(tiny)
    line = "--dataset_name arithmetic --use_cpu true --bf16 false --report_to none --save_steps 1 --save_total_limit 1"
    flags = tiny_train_argv(model, out, *line.split(), reward="distributed_step.length_reward", max_steps=2,
                            per_device_train_batch_size=4, learning_rate=None)  # fmt: skip
    return [sys.executable, "-m", "up_trl", "train", *argv(ZERO3_LAUNCH, main_process_port=_free_port()), *flags]


def test_two_processes_each_mark_their_checkpoint_files(tmp_path):
    """2 ZeRO-3 processes saving every step: each marks its own files; the checkpoint kept is complete."""
    out = tmp_path / "out"
    _run(_two_process_save_run(tmp_path, out))
    assert [p.name for p in out.glob("checkpoint-*")] == ["checkpoint-2"]
    checkpoint = out / "checkpoint-2"
    main, rank1 = read_mark(checkpoint), read_mark(checkpoint, rank=1)
    assert main["world_size"] == 2 and rank1 is not None, sorted(p.name for p in checkpoint.iterdir())
    assert {"rng_state_1.pth", "rollout_buffer_rank1.pt"} <= {n.split("/")[-1] for n in rank1["files"]}, rank1
    assert not any("rank1" in n or n.endswith("_1.pth") for n in main["files"]), main["files"]
    assert checkpoint_problem(checkpoint) is None


# A process of a launched run whose C++ worker thread (gloo's, in a real run) still holds a released GIL when the
# interpreter starts its teardown: retaking the GIL then ends the thread inside C++ frames, and the process aborts
# ("terminate called without an active exception", exit 134). Here a daemon thread in a torch matmul stands in for
# gloo's worker: the abort is certain, not a matter of load.
LATE_THREAD = """
import os, sys, threading, time
import torch
torch.set_num_threads(1)
import up_trl.cli as cli
os.environ["WORLD_SIZE"] = "2"  # one of two processes `accelerate launch` started
a = torch.randn(1500, 1500)
started = threading.Event()
def late():
    started.set()
    for _ in range(100):
        a @ a
threading.Thread(target=late, daemon=True).start()
started.wait(); time.sleep(0.05)
cli.train_command = lambda rest: 0  # a run that finished
if sys.argv[1] == "plain":
    sys.exit(0)  # the interpreter's own exit, teardown and all
sys.exit(cli.main(["train"]))
"""


def test_a_launched_process_exits_0_with_a_worker_thread_still_in_cpp():
    """A launched process skips the interpreter's teardown, so a late C++ thread cannot abort it."""
    plain = subprocess.run([sys.executable, "-c", LATE_THREAD, "plain"], capture_output=True, text=True, timeout=300)
    if plain.returncode == 0:
        pytest.skip("this interpreter does not end a thread that retakes the GIL during its teardown")
    assert "terminate called without an active exception" in plain.stderr, plain.stderr[-2000:]
    ours = subprocess.run([sys.executable, "-c", LATE_THREAD, "cli"], capture_output=True, text=True, timeout=300)
    assert ours.returncode == 0, ours.stderr[-2000:]


def test_two_processes_exit_0_on_a_busy_machine(tmp_path):
    """The same 2-process ZeRO-3 run twice beside two busy processes: every run exits 0."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for run in range(2):
            _run(_two_process_save_run(tmp_path, tmp_path / f"out{run}"))  # asserts exit 0, with the output if not
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def one_and_two_processes(tmp_path_factory):
    """tests/distributed_step.py on 1 plain process and on 2 ZeRO-3 processes: {loss_type: result} each."""
    tmp = tmp_path_factory.mktemp("distributed_step")
    script = str(TESTS / "distributed_step.py")
    _run([sys.executable, script, str(tmp / "one.pt")])
    _run(_launch(ZERO3_CPU, script, tmp / "two.pt"))
    return torch.load(tmp / "one.pt"), torch.load(tmp / "two.pt")


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_zero3_two_processes_equal_one_process(one_and_two_processes, loss_type):
    one, two = (results[loss_type] for results in one_and_two_processes)
    assert (one["world_size"], one["zero_stage"]) == (1, None)
    assert (two["world_size"], two["zero_stage"]) == (2, 3)
    # Measured (2-core CPU): loss within 6e-8, grad norm within 2e-7 relative, parameters within 1.3e-7 (fp32
    # reduction order) after two SGD steps that move them by 0.17-0.31; a normalisation off by the number of
    # processes (dapo without "/ num_processes") moves them by 0.3.
    assert len(one["loss"]) == len(two["loss"]) == 2
    torch.testing.assert_close(torch.tensor(two["loss"]), torch.tensor(one["loss"]), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.tensor(two["grad_norm"]), torch.tensor(one["grad_norm"]), rtol=1e-5, atol=1e-6)
    assert one["final"].keys() == two["final"].keys() == one["initial"].keys()
    update = max((one["final"][n] - one["initial"][n]).abs().max().item() for n in one["initial"])
    assert update > 0.1, "the steps must move the parameters for the comparison to mean anything"
    for name, param in one["final"].items():
        torch.testing.assert_close(two["final"][name], param, rtol=0, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")


# --- examples/multi_process.py: a Python script under `accelerate launch` ------------------------------------------
def _example_on_two_processes(config_file: str, out: Path) -> dict:
    """examples/multi_process.py under `accelerate launch CONFIG` (2 processes, tiny model): rank 0's JSON line."""
    cmd = _launch(config_file, ROOT / "examples" / "multi_process.py", *argv(output_dir=out))
    return json.loads(_run(cmd).stdout.strip().splitlines()[-1])


def test_the_multi_process_example_trains_under_zero3(tmp_path):
    result = _example_on_two_processes(str(ZERO3_CPU), tmp_path / "out")
    assert (result["processes"], result["sharding"]) == (2, "deepspeed") and len(result["rewards"]) >= 2
    AutoModelForCausalLM.from_pretrained(tmp_path / "out")  # the weights gathered from both processes, loadable


def test_fsdp_on_cpu_runs_as_plain_data_parallel(tmp_path):
    """On CPU accelerate runs `fsdp2.yaml` as data parallel; when this fails, test FSDP here."""
    config = yaml.safe_load(Path(accelerate_config_path("fsdp2")).read_text())
    assert config["distributed_type"] == "FSDP" and config["fsdp_config"]["fsdp_version"] == 2
    config |= {"use_cpu": True, "mixed_precision": "no", "num_processes": 2}
    (tmp_path / "fsdp2_cpu.yaml").write_text(yaml.safe_dump(config))
    result = _example_on_two_processes(str(tmp_path / "fsdp2_cpu.yaml"), tmp_path / "out")
    assert (result["processes"], result["sharding"], result["parameter"]) == (2, "none", "Parameter")
