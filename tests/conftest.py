"""Shared fixtures: one torch thread, offline Hub, tiny models built in code."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture
def tiny():
    """(model, tokenizer): a 2-layer, hidden-64 Qwen2 with a character tokenizer, seeded."""
    from up_trl.models.offline import tiny_model_and_tokenizer

    return tiny_model_and_tokenizer(seed=0)


@pytest.fixture
def prompts_dataset():
    """16 conversational prompts."""
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [[{"role": "user", "content": f"{i} + {i} = "}] for i in range(16)]})


def length_reward(completions, **kwargs):
    """A dense reward with spread inside every group: shorter replies score higher."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [-float(len(t)) for t in texts]


def cpu_args(tmp_path, config_class=None, **overrides):
    """A UP config (UPGRPOConfig unless `config_class` says otherwise) for a seconds-long CPU run."""
    from up_trl import UPGRPOConfig

    kwargs = dict(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                  per_device_train_batch_size=8, num_generations=4, max_completion_length=8, max_steps=2,
                  logging_steps=1, learning_rate=1e-2, seed=0, temperature=1.0)  # fmt: skip
    return (config_class or UPGRPOConfig)(**(kwargs | overrides))


def make_trainer(
    tmp_path, tiny, dataset, reward=length_reward, callbacks=None, shared_prompt=False, parts=False, **overrides
):
    """UPGRPOTrainer on the tiny model with `cpu_args(tmp_path, **overrides)` (`shared_prompt`: the opt-in
    CPU saving; `parts`: with every opt-in part, as `up-trl train` builds it, `with_parts`)."""
    from up_trl import UPGRPOTrainer

    model, tokenizer = tiny
    kwargs = dict(reward_funcs=reward, train_dataset=dataset, processing_class=tokenizer, callbacks=callbacks)
    return build(UPGRPOTrainer, parts, shared_prompt, model=model, args=cpu_args(tmp_path, **overrides), **kwargs)


def build(trainer_class, parts: bool = False, shared_prompt: bool = False, **kwargs):
    """`trainer_class(**kwargs)`; `shared_prompt`: the class with every mixin part and the opt-in CPU saving
    (`up_trl.run.parts.with_parts(cls, share_prompt_prefix=True)`); `parts`: the class with every mixin part and every
    callback part attached (`attach_parts`), as `up-trl train` builds its trainer."""
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


def same_code_env() -> dict:
    """The environment for a subprocess that imports the up_trl this test imported (from any working directory)."""
    from pathlib import Path

    import up_trl

    src = str(Path(up_trl.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}


def argv(*words: str, **flags) -> list[str]:
    """Command-line tokens: `words` split at spaces, then `--name value` per flag, in place of a `--name` already
    there (a list: one token per item; a bool: true/false; None: the flag removed). Paths and JSON go in `flags`."""
    tokens = [token for word in words for token in word.split()]
    for name, value in flags.items():
        i = tokens.index(f"--{name}") if f"--{name}" in tokens else len(tokens)
        end = next((j for j in range(i + 1, len(tokens)) if tokens[j].startswith("--")), len(tokens))
        values = value if isinstance(value, (list, tuple)) else [] if value is None else [value]
        new = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
        tokens[i:end] = [] if value is None else [f"--{name}", *new]
    return tokens


def tiny_train_argv(model, out, *flags, reward="cli_rewards.spread", max_steps=4, **overrides) -> list[str]:
    """`up-trl train`'s flags for a short run of the tiny model in `out`: 2 optimizer steps per rollout batch (the
    offline default's, from its recipe), 16 problems, no plot; `overrides` as in `argv`, `flags` last (they win)."""
    import cli_rewards

    cli_rewards.reset()
    line = "--config quickstart --dataset_limit 16 --per_device_train_batch_size 8 --num_generations 4 --plot false"
    named = dict(model_name_or_path=model, output_dir=out, reward_funcs=reward, max_steps=max_steps) | overrides
    return [*argv(line, "--max_completion_length 4 --learning_rate 1e-2", **named), *flags]


# --- `up-trl train` / `up-trl eval` bad input: one line, exit 2, before any model loads --------------------------

TINY = argv("--use_cpu true --bf16 false --max_steps 1 --per_device_train_batch_size 8 --num_generations 4",
            "--max_completion_length 4 --dataset_limit 16")  # fmt: skip


class ModelLoaded(BaseException):
    """Raised by `no_model_loads` when a model loads: a BaseException, so that `cli.main`'s catch-all of Exception
    (one line for what escapes a library) cannot swallow it and the test fails loudly."""


@pytest.fixture
def no_model_loads(monkeypatch, tmp_path):
    """Any model load fails the test; the working directory is an empty folder with an `outputs/quickstart` run
    (a config.json naming a known model_type, and a weights file: files only, it never loads)."""
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

    if command == "train":
        assert main(["train", *argv]) == code
    else:
        assert main(["eval", *argv]) == code
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
    """UP_TRL_REQUIRE_VLLM=1 (set by .ci/vllm_stack): a skipped `vllm` test fails, whatever skipped it, since a
    stack built to run them proves nothing by skipping them."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("UP_TRL_REQUIRE_VLLM") == "1" and report.skipped and item.get_closest_marker("vllm"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"UP_TRL_REQUIRE_VLLM=1, but this vllm test was skipped: {reason}"
