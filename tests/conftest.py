"""Shared fixtures: one torch thread, offline Hub, tiny models built in code."""

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]  # the repository


@pytest.fixture
def tiny():
    """(model, tokenizer): a 2-layer, hidden-64 Qwen2 with a character tokenizer, seeded."""
    from up_trl.models.offline import tiny_model_and_tokenizer

    return tiny_model_and_tokenizer(seed=0)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """The folder of a saved tiny model, read only (a test that writes into its model folder saves its own)."""
    from up_trl.models.offline import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny")


@pytest.fixture
def prompts_dataset():
    """16 conversational prompts."""
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [[{"role": "user", "content": f"{i} + {i} = "}] for i in range(16)]})


@pytest.fixture
def fresh_pools(monkeypatch):
    """Reward worker pools started inside the test (forked after its monkeypatches and reservations), stopped after."""
    from up_trl.rewards import pool as reward_pool

    monkeypatch.setattr(reward_pool, "_POOLS", {})
    yield
    reward_pool.shutdown_workers()


def length_reward(completions, **kwargs):
    """A dense reward with spread inside every group: shorter replies score higher."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [-float(len(t)) for t in texts]


def logged(trainer, key) -> list:
    """The values the trainer logged under `key`, in order (None: not logged)."""
    return [h[key] for h in trainer.state.log_history if h.get(key) is not None]


def cpu_args(tmp_path, config_class=None, **overrides):
    """A UP config (UPGRPOConfig unless `config_class` says otherwise) for a seconds-long CPU run."""
    from up_trl import UPGRPOConfig

    kwargs = dict(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                  per_device_train_batch_size=8, num_generations=4, max_completion_length=8, max_steps=2,
                  logging_steps=1, learning_rate=1e-2, seed=0, temperature=1.0)  # fmt: skip
    return (config_class or UPGRPOConfig)(**(kwargs | overrides))


def make_trainer(
    tmp_path,
    tiny,
    dataset,
    reward=length_reward,
    callbacks=None,
    shared_prompt=False,
    parts=False,
    rloo=False,
    **overrides,
):
    """UPGRPOTrainer (`rloo`: UPRLOOTrainer, beta 0 unless set) on the tiny model, built by `build`."""
    from up_trl import UPGRPOTrainer, UPRLOOConfig, UPRLOOTrainer

    model, tokenizer = tiny
    args = cpu_args(tmp_path, UPRLOOConfig, **{"beta": 0.0, **overrides}) if rloo else cpu_args(tmp_path, **overrides)
    kwargs = dict(reward_funcs=reward, train_dataset=dataset, processing_class=tokenizer, callbacks=callbacks)
    return build(UPRLOOTrainer if rloo else UPGRPOTrainer, parts, shared_prompt, model=model, args=args, **kwargs)


def make_rloo_trainer(*args, **kwargs):
    """`make_trainer` for UPRLOOTrainer."""
    return make_trainer(*args, rloo=True, **kwargs)


def build(trainer_class, parts: bool = False, shared_prompt: bool = False, **kwargs):
    """`trainer_class(**kwargs)`, with the CPU saving and the mixin parts (`shared_prompt`: `with_parts(cls,
    share_prompt_prefix=True)`) or every opt-in part attached (`parts`), as `up-trl train` builds it."""
    from up_trl.run.parts import attach_parts, with_parts

    if not (parts or shared_prompt):
        return trainer_class(**kwargs)
    trainer = with_parts(trainer_class, share_prompt_prefix=shared_prompt)(**kwargs)
    if parts:
        attach_parts(trainer)
    return trainer


def gradients(model, loss) -> list:
    """The gradient of `loss` for each parameter of `model`, which is left with no gradient."""
    model.zero_grad()
    loss.backward()
    grads = [p.grad.detach().clone() for p in model.parameters()]
    model.zero_grad()
    return grads


def four_completions(vocab: int, g: torch.Generator) -> dict:
    """A hand-made batch: 4 completions (6 positions, 6/3/5/1 real) of left-padded prompts, mixed-sign advantages."""
    return dict(
        prompt_ids=torch.randint(4, vocab, (4, 3), generator=g),
        prompt_mask=torch.tensor([[1, 1, 1], [0, 1, 1], [1, 1, 1], [0, 0, 1]]),
        completion_ids=torch.randint(4, vocab, (4, 6), generator=g),
        completion_mask=torch.tensor([[1] * 6, [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 0], [1, 0, 0, 0, 0, 0]]),
        advantages=torch.tensor([1.2, -0.7, 0.5, -1.5]),
        num_items_in_batch=torch.tensor(4 * 15.0),
    )


def param_snapshots():
    """A callback that keeps a copy of the parameters after every optimizer step, by step."""
    from transformers import TrainerCallback

    class ParamSnapshots(TrainerCallback):
        def __init__(self):
            self.params = {}

        def on_step_end(self, args, state, control, model=None, **kwargs):
            self.params[state.global_step] = [p.detach().clone() for p in model.parameters()]

    return ParamSnapshots()


def assert_loss_leaves_batch_unchanged(trainer, batch):
    """The trainer's loss and backward never write into the batch (TRL reuses it when rollouts are reused)."""
    before = {k: v.clone() for k, v in batch.items()}
    trainer.compute_loss(trainer.model, batch).backward()
    trainer.model.zero_grad()
    assert batch.keys() == before.keys()
    for k in before:
        assert torch.equal(batch[k], before[k]), k


def hub_folder(root, columns: dict) -> str:
    """A folder laid out as a Hub dataset repo: its train split in data/train-00000-of-00001.parquet."""
    from datasets import Dataset

    (root / "data").mkdir(parents=True)
    Dataset.from_dict(columns).to_parquet(str(root / "data" / "train-00000-of-00001.parquet"))
    return str(root)


def same_code_env() -> dict:
    """The environment for a subprocess that imports the up_trl this test imported (from any working directory)."""
    import up_trl

    src = str(Path(up_trl.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}


def argv(*words: str, **flags) -> list[str]:
    """Tokens: `words` split at spaces, then `--name value` per flag (a list: one token each; None: removed)."""
    tokens = [token for word in words for token in word.split()]
    for name, value in flags.items():
        i = tokens.index(f"--{name}") if f"--{name}" in tokens else len(tokens)
        end = next((j for j in range(i + 1, len(tokens)) if tokens[j].startswith("--")), len(tokens))
        values = value if isinstance(value, (list, tuple)) else [] if value is None else [value]
        new = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
        tokens[i:end] = [] if value is None else [f"--{name}", *new]
    return tokens


def tiny_train_argv(model, out, *flags, reward="cli_rewards.spread", max_steps=4, **overrides) -> list[str]:
    """`up-trl train`'s flags for a short run of the tiny model in `out` (`overrides` as in `argv`)."""
    import cli_rewards

    cli_rewards.reset()
    line = "--config quickstart --dataset_limit 16 --per_device_train_batch_size 8 --num_generations 4 --plot false"
    named = dict(model_name_or_path=model, output_dir=out, reward_funcs=reward, max_steps=max_steps) | overrides
    return [*argv(line, "--max_completion_length 4 --learning_rate 1e-2", **named), *flags]


@pytest.fixture(autouse=True)
def no_default_accelerate_config(monkeypatch, tmp_path_factory):
    """accelerate's default config (`accelerate config`) and the GPUs are this machine's: in-process tests run as on a
    machine with neither, so that `up-trl train` launches as their flags say (tests/test_catalog.py sets them where it
    means to). Tests that start `up-trl` in a subprocess see the machine's own."""
    import importlib

    import accelerate.commands.launch

    missing = tmp_path_factory.getbasetemp() / "no-accelerate-config" / "default_config.yaml"
    monkeypatch.setattr(accelerate.commands.launch, "default_config_file", str(missing))
    monkeypatch.setattr(importlib.import_module("up_trl.cli.launch"), "visible_gpus", lambda: 0)


# --- `up-trl train` / `up-trl eval` bad input: one line, exit 2, before any model loads --------------------------
TINY = argv("--use_cpu true --bf16 false --max_steps 1 --per_device_train_batch_size 8 --num_generations 4",
            "--max_completion_length 4 --dataset_limit 16")  # fmt: skip


class ModelLoaded(BaseException):
    """Raised by `no_model_loads`: a BaseException, so that `cli.main`'s catch-all cannot swallow it."""


@pytest.fixture
def no_model_loads(monkeypatch, tmp_path):
    """Any model load fails the test; the working directory holds a fake `outputs/quickstart` run."""
    import transformers

    import up_trl.models.offline

    def refuse(*args, **kwargs):
        raise ModelLoaded("a model was loaded before the input was checked")

    monkeypatch.setattr(up_trl.models.offline, "smollm2_path", refuse)
    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", classmethod(refuse))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs" / "quickstart").mkdir(parents=True)
    (tmp_path / "outputs" / "quickstart" / "config.json").write_text('{"model_type": "qwen2"}')
    (tmp_path / "outputs" / "quickstart" / "model.safetensors").write_bytes(b"")
    return tmp_path


def one_line(capsys, argv, command="train", code=2) -> str:
    """The single stderr line `up-trl COMMAND ARGV` ends with; it must exit `code`, with no traceback."""
    from up_trl.cli import main

    assert main([command, *argv]) == code  # "train" or "eval"
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip() and "examples/s]" not in line]
    assert len(err) == 1 and err[0].startswith(f"up-trl {command}: error: "), err  # datasets' progress bars aside
    return err[0].split(": error: ", 1)[1]


# --- vLLM: tests marked `vllm` need vLLM's engine (`.ci/vllm_stack` installs its CPU build) ----------------------
def pytest_collection_modifyitems(config, items):
    """Skip the `vllm` tests, with the reason, where vLLM is not installed (the default stack)."""
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        return
    skip = pytest.mark.skip(reason="vLLM is not installed: .ci/vllm_stack runs these tests beside vLLM's CPU build")
    for item in items:
        if item.get_closest_marker("vllm") is not None:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """UP_TRL_REQUIRE_VLLM=1 (.ci/vllm_stack): a skipped `vllm` test fails."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("UP_TRL_REQUIRE_VLLM") == "1" and report.skipped and item.get_closest_marker("vllm"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"UP_TRL_REQUIRE_VLLM=1, but this vllm test was skipped: {reason}"
