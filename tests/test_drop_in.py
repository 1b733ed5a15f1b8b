"""The drop-in changes only the objective: a UP trainer and its TRL parent built alike have the same callbacks (but
the collapse warning), rewards, warnings filters, checkpoint files and TRL's card; nothing the parent accepts is
refused; the extras are opt-in parts; each trainer's import closure stays small."""

from __future__ import annotations

import ast
import copy
import inspect
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import cpu_args, length_reward
from datasets import Dataset
from test_import_graph import MODULES, imported_modules
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer

import up_trl.run.job
from up_trl import UPAsyncGRPOTrainer, UPGRPOConfig, UPGRPOTrainer, UPRLOOConfig, UPRLOOTrainer
from up_trl.cli.parse import trainer_classes
from up_trl.models.offline import tiny_model_and_tokenizer
from up_trl.run import parts
from up_trl.run.checkpoints import rollout_file
from up_trl.run.parts import ResumeSettingsMixin, RolloutCheckpointMixin, RunCardMixin, attach_parts, with_parts
from up_trl.trainers.collapse_warning import CollapseWarningCallback
from up_trl.trainers.grpo_config import check_up_compatible


def pair(tmp_path, tiny, dataset, kind="grpo", up_mode="asymmetric", reward=length_reward, train=False, **overrides):
    """(parent, UP trainer) on copies of the tiny model with the same arguments; `train`: each trained."""
    model, tokenizer = tiny
    parent_cls, up_cls, parent_config, up_config = {
        "grpo": (GRPOTrainer, UPGRPOTrainer, GRPOConfig, UPGRPOConfig),
        "rloo": (RLOOTrainer, UPRLOOTrainer, RLOOConfig, UPRLOOConfig),
    }[kind]
    if kind == "rloo":
        overrides.setdefault("beta", 0.0)
    ups = {k: v for k, v in overrides.items() if k.startswith("up_")}  # UP's fields: the UP trainer's config only
    shared = {k: v for k, v in overrides.items() if k not in ups}
    trainers = []
    for name, cls, config_cls, extra in (
        ("parent", parent_cls, parent_config, {}),
        ("up", up_cls, up_config, {"up_mode": up_mode, **ups}),
    ):
        settings = dict(steps_per_generation=2, **shared, **extra)
        args = cpu_args(tmp_path / name, config_class=config_cls, **settings)
        trainer = cls(copy.deepcopy(model), reward, args=args, train_dataset=dataset, processing_class=tokenizer)
        if train:
            trainer.train()
        trainers.append(trainer)
    return trainers


def names(callbacks) -> list[str]:
    return [type(c).__name__ for c in callbacks]


@pytest.mark.parametrize("kind", ["grpo", "rloo"])
def test_the_parents_callbacks_and_reward_functions_and_no_warnings_filter(tmp_path, tiny, prompts_dataset, kind):
    filters = list(warnings.filters)
    parent, up = pair(tmp_path, tiny, prompts_dataset, kind)
    assert warnings.filters == filters  # no process-wide filter installed by either
    ups = names(up.callback_handler.callbacks)
    assert ups == names(parent.callback_handler.callbacks) + ["CollapseWarningCallback"]
    assert up.reward_funcs == parent.reward_funcs == [length_reward]  # passed through as given, not wrapped
    no_warning = pair(tmp_path / "quiet", tiny, prompts_dataset, kind, up_collapse_warning=False)[1]
    assert names(no_warning.callback_handler.callbacks) == names(parent.callback_handler.callbacks)


def test_the_collapse_warning_only_logs(tmp_path, tiny, prompts_dataset):
    """The collapse warning never changes `control` unless `up_stop_on_collapse` is set."""
    callback = CollapseWarningCallback()
    control = type("Control", (), {"should_training_stop": False, "should_save": False})()
    state = type("State", (), {"global_step": 0, "is_world_process_zero": True})()
    for step in range(1, 200):  # entropy climbing far above its start: the runaway rule fires
        state.global_step = step
        logs = {"entropy": 1.0 + step * 0.05, "reward": 0.5, "frac_reward_zero_std": 0.0}
        callback.on_log(None, state, control, logs=logs)
    assert callback.rule.fired and not control.should_training_stop and not control.should_save


@pytest.mark.parametrize("kind", ["grpo", "rloo"])
def test_checkpoints_hold_the_parents_files_and_off_trains_as_the_parent(tmp_path, tiny, prompts_dataset, kind):
    saving = dict(save_strategy="steps", save_steps=1, max_steps=2)
    parent, up = pair(tmp_path, tiny, prompts_dataset, kind, "off", train=True, **saving)
    for step in (1, 2):
        parent_files = sorted(p.name for p in (tmp_path / "parent/out" / f"checkpoint-{step}").iterdir())
        up_files = sorted(p.name for p in (tmp_path / "up/out" / f"checkpoint-{step}").iterdir())
        assert up_files == parent_files and not any("rollout" in f for f in up_files)
    for (name, a), b in zip(parent.model.named_parameters(), up.model.parameters()):
        assert torch.equal(a, b), name  # up_mode="off" is the parent, bit for bit
    modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "up/out/checkpoint-2").iterdir()}
    parent_modes = {p.name: p.stat().st_mode & 0o777 for p in (tmp_path / "parent/out/checkpoint-2").iterdir()}
    assert modes == parent_modes  # file modes left as transformers writes them


def test_no_setup_the_parent_accepts_is_refused(tmp_path, tiny):
    """A dataset smaller than a generation batch builds in both (what UP refuses: test_training's refusals)."""
    small = Dataset.from_dict({"prompt": [[{"role": "user", "content": "1 + 1 = "}]]})
    parent, up = pair(tmp_path, tiny, small)
    assert len(up.train_dataset) == len(parent.train_dataset) == 1


@pytest.mark.parametrize("kind", ["grpo", "rloo"])
def test_a_model_object_with_a_kl_behaves_as_in_the_parent(tmp_path, prompts_dataset, kind):
    """beta > 0 with a model built in code: the UP trainer fails as TRL's does."""
    errors = []
    for index in range(2):
        model, tokenizer = tiny_model_and_tokenizer(seed=0)
        try:
            pair(tmp_path / str(index), (model, tokenizer), prompts_dataset, kind, beta=0.05)
        except Exception as error:  # noqa: BLE001 (whatever TRL raises, both raise it)
            errors.append(type(error))
    assert len(errors) == 2 and errors[0] is errors[1]


def test_the_model_card_is_trls_naming_up(tmp_path, tiny, prompts_dataset):
    parent, up = pair(tmp_path, tiny, prompts_dataset, loss_type="dapo", up_positive_min_prob=0.05)
    up.create_model_card(dataset_name="toy")
    card = (tmp_path / "up/out/README.md").read_text()
    (prose,) = [line for line in card.splitlines() if line.startswith("This model was trained with")]
    assert prose.startswith("This model was trained with UP-DAPO with the rare clip (p_min 0.05), a method")
    assert "=" not in prose and "None" not in prose  # the settings are the run card's table, not the name
    assert "Cite UP-DAPO with the rare clip (p_min 0.05) as:" in card
    assert "2607.06987" in card and "Unbounded Positive" in card and "- up" in card
    assert "generated_from_trainer" in card  # TRL's template (`trl.trainer.utils.generate_model_card`)
    off_parent, off = pair(tmp_path / "off", tiny, prompts_dataset, up_mode="off", loss_type="dapo")
    for trainer in (off_parent, off):
        trainer.create_model_card(dataset_name="toy")
    parent_card = (tmp_path / "off/parent/out/README.md").read_text()
    assert (tmp_path / "off/up/out/README.md").read_text() == parent_card  # off: the parent's card


def test_every_part_is_one_line_and_up_trl_train_attaches_them(tmp_path, tiny, prompts_dataset):
    class MyTrainer(RolloutCheckpointMixin, ResumeSettingsMixin, UPGRPOTrainer):
        pass  # noqa: E701 (one line)

    model, tokenizer = tiny
    args = cpu_args(tmp_path, steps_per_generation=2)
    trainer = MyTrainer(model, length_reward, args=args, train_dataset=prompts_dataset, processing_class=tokenizer)
    assert names(trainer.callback_handler.callbacks)[0] == "RolloutCheckpointCallback"
    trainer.add_callback(parts.nonfinite_guard(trainer))
    trainer.add_callback(parts.UsualFileModesCallback())
    parts.record_unscorable(trainer)
    assert trainer.reward_funcs[0] is not length_reward and trainer.reward_funcs[0].__name__ == "length_reward"
    callbacks = names(trainer.callback_handler.callbacks)
    assert "NonFiniteGuardCallback" in callbacks and "UsualFileModesCallback" in callbacks
    built = with_parts(UPGRPOTrainer)
    mixins = (RunCardMixin, parts.LeadingIndicatorsMixin, RolloutCheckpointMixin, ResumeSettingsMixin)
    assert built.__mro__[1:5] == mixins
    assert built.__name__ == "UPGRPOTrainer" and issubclass(built, UPGRPOTrainer)
    assert callable(attach_parts)

    source = inspect.getsource(up_trl.run.job.run_job)
    assert "with_parts(trainer_cls, script_args.share_prompt_prefix)" in source  # `up-trl train` attaches them all
    assert "attach_parts(trainer," in source


@pytest.mark.parametrize("kind, share", [("grpo", False), ("grpo", True), ("rloo", True), ("async_grpo", False)])
def test_a_runs_trainer_overrides_a_method_once_or_through_super(kind, share):
    """A method two of our classes define in a run's MRO calls the next through `super()`, and says so."""
    mro = with_parts(trainer_classes(kind)[1], share_prompt_prefix=share).__mro__
    ours = [c for c in mro if c.__module__.startswith("up_trl")]
    defined: dict[str, list] = {}
    for cls in ours:
        for name, value in vars(cls).items():
            if inspect.isfunction(value):
                defined.setdefault(name, []).append(value)
    shared = {name: functions for name, functions in defined.items() if len(functions) > 1}
    assert {"__init__", "_log_up_metrics"} <= set(shared)
    assert kind == "async_grpo" or "_load_optimizer_and_scheduler" in shared
    for name, functions in shared.items():
        for function in functions[:-1]:
            where = function.__qualname__
            assert f"super().{name}(" in inspect.getsource(function), f"{where} does not call the next {name}"
            assert "super()" in (function.__doc__ or ""), f"{where}'s docstring does not say it calls super()"


# --- the import closure a reader opens to follow a trainer -----------------------------------------------------------
TRAINER_MODULES = [f"up_trl.trainers.{kind}_trainer" for kind in ("grpo", "rloo", "async_grpo")]


def module_level_imports(name: str) -> set[str]:
    """The up_trl modules `name` imports at module level (not inside a function), package `__init__`s included."""
    tree = ast.parse(MODULES[name].read_text())
    functions = ast.FunctionDef | ast.AsyncFunctionDef
    body = [n for n in tree.body if not isinstance(n, functions | ast.ClassDef)]
    body += [n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body if not isinstance(n, functions)]
    return imported_modules(name, ast.unparse(ast.Module(body=body, type_ignores=[]))) | packages_of(name)


def all_imports(name: str) -> set[str]:
    """Every up_trl module `name` imports, inside functions too, and those named by `importlib.import_module`."""
    found = imported_modules(name) | packages_of(name)
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                target = node.args[0].value.lstrip(".")
                found |= {m for m in MODULES if m.endswith(target) and m.startswith("up_trl")}
            else:  # an f-string: any module it could name
                found |= {m for m in MODULES if m.startswith("up_trl.trainers.")}
    return found - {name}


def packages_of(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in MODULES}


def closure(name: str, step) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += sorted(step(module) - seen)
    return seen


def lines(modules: set[str]) -> int:
    return sum(len(Path(MODULES[m]).read_text().splitlines()) for m in modules)


@pytest.mark.parametrize("module", TRAINER_MODULES)
def test_a_trainers_import_closure_fits_a_reading(module):
    at_import = closure(module, module_level_imports)
    everything = closure(module, all_imports)
    print(
        f"{module}: {len(at_import)} modules / {lines(at_import)} lines at import, {len(everything)} / "
        f"{lines(everything)} with imports inside functions"
    )
    assert lines(at_import) <= 800, sorted(at_import)  # issue 56: a reading, at most 800 lines
    assert lines(everything) <= 1200, sorted(everything)
    assert "up_trl.run.card" not in everything and "up_trl.run.checkpoints" not in everything


def test_the_parts_attach_to_trls_own_trainer(tmp_path, tiny, prompts_dataset):
    """On TRL's GRPOTrainer the parts save the rollout batch and log the counts; no run card."""
    model, tokenizer = tiny
    built = with_parts(GRPOTrainer)
    assert RunCardMixin not in built.__mro__
    args = cpu_args(tmp_path, config_class=GRPOConfig, steps_per_generation=2, save_strategy="steps", save_steps=1)
    trainer = built(model, length_reward, args=args, train_dataset=prompts_dataset, processing_class=tokenizer)
    attach_parts(trainer)
    trainer.train()
    assert Path(rollout_file(tmp_path / "out/checkpoint-1", 0)).is_file()
    logged = [h for h in trainer.state.log_history if "loss" in h]
    assert all(h["up/nonfinite_skipped_steps"] == 0 for h in logged)
    assert [h["up/unscorable_frac"] for h in logged if "up/unscorable_frac" in h] == [0.0]


def test_each_part_is_safe_where_it_cannot_act():
    """Async GRPO refuses the rollout-batch part; under DeepSpeed the guard is a no-op callback."""
    mro = with_parts(UPAsyncGRPOTrainer).__mro__
    assert mro[1:4] == (RunCardMixin, parts.LeadingIndicatorsMixin, ResumeSettingsMixin)
    assert RolloutCheckpointMixin not in mro

    class Wrong(RolloutCheckpointMixin, UPAsyncGRPOTrainer):
        pass

    with pytest.raises(TypeError, match="needs GRPOTrainer or RLOOTrainer"):
        Wrong(model="unused")
    under_deepspeed = parts.nonfinite_guard(SimpleNamespace(is_deepspeed_enabled=True))
    assert type(under_deepspeed) is TrainerCallback and not isinstance(under_deepspeed, parts.NonFiniteGuardCallback)


def test_off_accepts_any_loss_type_the_parent_builds_with():
    """An unknown loss_type is left to the parent under "off" and refused under UP."""
    check_up_compatible("off", "not_a_loss")  # nothing refused: left to the parent
    with pytest.raises(ValueError, match="Unknown loss_type='not_a_loss'"):
        check_up_compatible("asymmetric", "not_a_loss")


@pytest.mark.parametrize("plain", [False, True], ids=["changed_up_config", "plain_parent_config"])
def test_the_trainer_runs_the_configs_one_check(tmp_path, tiny, prompts_dataset, plain):
    """A UP config changed since it was built, and a plain GRPOConfig, are refused by the trainer."""
    if plain:
        args = GRPOConfig(output_dir=str(tmp_path), loss_type="sapo", use_cpu=True, bf16=False, report_to="none")
    else:
        args = cpu_args(tmp_path, up_mode="off", loss_type="sapo")
        args.up_mode = "asymmetric"
    model, tokenizer = tiny
    with pytest.raises(ValueError, match="loss_type='sapo' is a different objective"):
        UPGRPOTrainer(model=model, reward_funcs=length_reward, args=args, train_dataset=prompts_dataset)
