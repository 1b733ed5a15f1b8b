"""Every TRL method the trainers override or rely on is pinned, held by named tests, or signature-checked."""

import ast
import hashlib
import importlib
import inspect
import textwrap

import pytest
import trl
from conftest import ROOT, make_rloo_trainer, make_trainer
from trl import GRPOTrainer
from trl_pins import _strip_docstrings, fingerprint, load_pins, normalised_source, parameters, resolve

import up_trl

PINS = load_pins()


@pytest.mark.parametrize("name", list(PINS["methods"]))
def test_pinned_method_is_unchanged(name):
    pin = PINS["methods"][name]
    assert fingerprint(resolve(name)) == pin["sha256"], (
        f"{name} changed since it was pinned (trl {PINS['versions']['trl']}; installed: trl {trl.__version__}). UP "
        f"relies on it: {pin['why']} Read the method's diff against that, re-verify "
        "with `pytest tests/test_trainer_gradients.py tests/test_rloo.py tests/test_async_grpo.py "
        "tests/test_off_is_parent.py tests/test_resume.py`, then re-pin with `python tests/trl_pins.py --write`."
    )


def _overridden(up_class):
    """(name, the parent-side function it overrides) for every function our classes define over a TRL/HF one."""
    ours = [c for c in up_class.__mro__ if c.__module__.startswith("up_trl")]
    theirs = [c for c in up_class.__mro__ if c.__module__.startswith(("trl.", "transformers."))]
    names = {n for c in ours for n, v in vars(c).items() if inspect.isfunction(v)}
    for name in sorted(names):
        owner = next((c for c in theirs if name in vars(c)), None)
        if owner is not None:
            yield name, f"{owner.__module__}.{owner.__qualname__}.{name}"


@pytest.mark.parametrize("name", list(PINS["signatures"]))
def test_a_replaced_public_method_keeps_trls_signature(name):
    check = PINS["signatures"][name]
    ours, theirs = parameters(resolve(check["override"])), parameters(resolve(name))
    assert ours == theirs, (
        f"{check['override']} no longer takes the parameters of {name} (installed: trl {trl.__version__}): ours "
        f"{ours}, TRL's {theirs}. UP relies on it: {check['why']} Make the override's signature TRL's (and read what "
        "TRL's callers now pass)."
    )


@pytest.mark.parametrize("name", list(PINS["behaviours"]))
def test_a_relied_on_method_names_behavioural_tests_that_exist(name):
    check = PINS["behaviours"][name]
    assert check["tests"] and check["why"] and check["feature"], name
    resolve(name)  # still there
    for test in check["tests"]:
        path, _, function = test.partition("::")
        tree = ast.parse((ROOT / path).read_text())
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert function in defined, f"{name}: {test} is not a test of {path}"


# The constructors UP wraps without replacing anything in them: each forwards every argument to the parent's, and UP
# reads these attributes the parent's sets (test below); a wrapper of a 400-line constructor is not pinned whole.
CONSTRUCTOR_ATTRIBUTES = {
    "UPGRPOTrainer": ("loss_type", "importance_sampling_level", "off_policy_mask_threshold", "epsilon_low",
                      "epsilon_high", "num_iterations", "beta", "_metrics"),
    "UPRLOOTrainer": ("epsilon_low", "epsilon_high", "num_iterations", "beta", "_metrics"),
    "UPAsyncGRPOTrainer": ("epsilon_low", "epsilon_high", "accelerator", "_metrics"),
}  # fmt: skip


@pytest.mark.parametrize("trainer", ["UPGRPOTrainer", "UPRLOOTrainer", "UPAsyncGRPOTrainer"])
def test_every_override_is_pinned_or_signature_checked(trainer):
    checked = {**PINS["methods"], **PINS["behaviours"], **PINS["signatures"]}
    forwarded = {f"{c.__module__}.{c.__qualname__}.__init__" for c in getattr(up_trl, trainer).__mro__
                 if trainer in CONSTRUCTOR_ATTRIBUTES and c.__module__.startswith("trl.")}  # fmt: skip
    missing = [p for _, p in _overridden(getattr(up_trl, trainer)) if p not in checked and p not in forwarded]
    assert not missing, f"{trainer} overrides methods that tests/trl_pins.json neither pins nor tests: {missing}"
    for name, check in PINS["signatures"].items():  # each signature check names the override it checks
        module, _, attr = check["override"].rpartition(".")
        owner = resolve(module)
        assert name.rsplit(".", 1)[1] == attr and attr in vars(owner), check["override"]


@pytest.mark.parametrize("trainer", list(CONSTRUCTOR_ATTRIBUTES))
def test_a_wrapped_constructor_forwards_everything_and_sets_what_up_reads(trainer, tmp_path, tiny, prompts_dataset):
    params = list(inspect.signature(getattr(up_trl, trainer).__init__).parameters.values())
    assert [p.kind for p in params[-2:]] == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]
    if trainer == "UPAsyncGRPOTrainer":  # through the tests' CPU stand-ins
        from test_async_grpo import _args, _trainer

        from up_trl.models.offline import save_tiny_model

        made = _trainer(save_tiny_model(tmp_path / "tiny"), prompts_dataset, _args(tmp_path))
    else:
        made = (make_trainer if trainer == "UPGRPOTrainer" else make_rloo_trainer)(tmp_path, tiny, prompts_dataset)
    missing = [name for name in CONSTRUCTOR_ATTRIBUTES[trainer] if not hasattr(made, name)]
    assert not missing, f"TRL's {trainer[2:]}.__init__ no longer sets {missing}, which UP reads"
    high = made.args.epsilon if made.args.epsilon_high is None else made.args.epsilon_high  # TRL: defaults to epsilon
    assert (made.epsilon_low, made.epsilon_high) == (made.args.epsilon, high)


def _fingerprint_of(source: str) -> str:
    dump = ast.dump(_strip_docstrings(ast.parse(textwrap.dedent(source))), include_attributes=False)
    return hashlib.sha256(dump.encode()).hexdigest()


def test_an_added_line_changes_the_pin_and_a_comment_does_not():
    """The pin catches an added statement, and ignores a comment."""
    source = textwrap.dedent(inspect.getsource(GRPOTrainer._compute_loss))
    assert _fingerprint_of(source) == fingerprint(GRPOTrainer._compute_loss)
    anchor = "    if entropy_mask is not None:\n"
    assert anchor in source
    added = source.replace(anchor, "    per_token_loss = per_token_loss * 0.5\n" + anchor, 1)
    assert _fingerprint_of(added) != fingerprint(GRPOTrainer._compute_loss)
    commented = source.replace(anchor, "    # a new comment\n\n" + anchor, 1)
    assert _fingerprint_of(commented) == fingerprint(GRPOTrainer._compute_loss)
    documented = textwrap.dedent(inspect.getsource(GRPOTrainer.get_high_entropy_mask))
    docstring = inspect.getdoc(GRPOTrainer.get_high_entropy_mask).splitlines()[0]
    assert docstring in documented and docstring not in normalised_source(GRPOTrainer.get_high_entropy_mask)
    reworded = documented.replace(docstring, "Reworded.", 1)
    assert _fingerprint_of(reworded) == fingerprint(GRPOTrainer.get_high_entropy_mask)


# Where each feature that relies on TRL internals is defined; its docstring names the feature's pins or behaviours.
FEATURE_HOMES = {
    "objective": [f"up_trl.trainers.{name}_trainer" for name in ("grpo", "rloo", "async_grpo")],
    "rollout checkpoint": ["up_trl.run.checkpoints"],
    "off-policy notice": ["up_trl.trainers.shared"],
    "logs and card": ["up_trl.trainers.shared"],
    "run card": ["up_trl.run.parts"],
}


def test_every_pin_names_its_feature_and_the_feature_says_so_where_it_is_defined():
    checks = (*PINS["methods"].values(), *PINS["behaviours"].values(), *PINS["signatures"].values())
    features = {check.get("feature") for check in checks}
    assert features == set(FEATURE_HOMES), f"pins with an unknown or missing feature: {features - set(FEATURE_HOMES)}"
    for feature, modules in FEATURE_HOMES.items():
        for module in modules:
            doc = " ".join(importlib.import_module(module).__doc__.split())
            assert "trl_pins.json" in doc and f"({feature!r} " in doc, (module, feature)


def test_the_whole_method_pins_are_the_objectives_only(capsys):
    """Pinned whole: only what UP's loss and gradient depend on, at most 8 methods over ~700 lines."""
    lines = {name: len(inspect.getsource(resolve(name)).splitlines()) for name in PINS["methods"]}
    with capsys.disabled():
        print(f"\nwhole-method pins: {len(lines)} methods, {sum(lines.values())} lines of TRL source")
    assert {PINS["methods"][name]["feature"] for name in lines} == {"objective"}
    assert len(lines) <= 8 and sum(lines.values()) <= 700, lines
    assert all(name.startswith("trl.") for name in lines)  # transformers is held by behaviours across its range
