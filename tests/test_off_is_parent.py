"""`up_mode="off"` is the parent bit for bit on stale rollouts; "asymmetric" ends elsewhere."""

import dataclasses

import pytest
import torch
from conftest import length_reward
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer

from up_trl import UPGRPOConfig, UPGRPOTrainer, UPRLOOConfig, UPRLOOTrainer
from up_trl.models.offline import tiny_model_and_tokenizer

# Two ways a rollout batch goes stale: more mini-batches than one optimizer step takes, and more passes over it.
STALE = {
    "spg2": dict(steps_per_generation=2, gradient_accumulation_steps=1, num_iterations=1),
    "iter2": dict(steps_per_generation=1, gradient_accumulation_steps=1, num_iterations=2),
    "spg2_iter2": dict(steps_per_generation=2, gradient_accumulation_steps=1, num_iterations=2),
}
SETTINGS = dict(use_cpu=True, bf16=False, report_to="none", save_strategy="no", per_device_train_batch_size=8,
                num_generations=4, max_completion_length=8, max_steps=8, learning_rate=1e-2, seed=0,
                logging_steps=1)  # fmt: skip
PAIRS = {  # name: (parent trainer, parent config, UP trainer, UP config, settings of the objective)
    "grpo": (GRPOTrainer, GRPOConfig, UPGRPOTrainer, UPGRPOConfig, dict(loss_type="grpo")),
    "dapo": (GRPOTrainer, GRPOConfig, UPGRPOTrainer, UPGRPOConfig, dict(loss_type="dapo", epsilon_high=0.28)),
    "dr_grpo": (GRPOTrainer, GRPOConfig, UPGRPOTrainer, UPGRPOConfig, dict(loss_type="dr_grpo")),
    "bnpo": (GRPOTrainer, GRPOConfig, UPGRPOTrainer, UPGRPOConfig, dict(loss_type="bnpo")),
    "luspo": (GRPOTrainer, GRPOConfig, UPGRPOTrainer, UPGRPOConfig, dict(loss_type="luspo")),
    "gspo": (GRPOTrainer, GRPOConfig, UPGRPOTrainer, UPGRPOConfig,
             dict(loss_type="grpo", importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4)),
    "rloo": (RLOOTrainer, RLOOConfig, UPRLOOTrainer, UPRLOOConfig, dict(beta=0.0)),  # no reference model to load
}  # fmt: skip


def train(trainer_class, config_class, folder, **settings):
    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"{i} + {i} = "}] for i in range(16)]})
    args = config_class(output_dir=str(folder), **settings)
    trainer = trainer_class(model, length_reward, args=args, train_dataset=dataset, processing_class=tokenizer)
    initial = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    return initial, [p.detach().clone() for p in trainer.model.parameters()], trainer


# The quick tier (`make test-fast`) trains one token-level and one RLOO pair; the slow tier (CI) every pair and layout.
QUICK = {("dapo", "spg2_iter2"), ("rloo", "iter2")}
CASES = [
    pytest.param(name, layout, id=f"{name}-{layout}", marks=() if (name, layout) in QUICK else pytest.mark.slow)
    for name in PAIRS
    for layout in STALE
]


@pytest.mark.parametrize(("name", "layout"), CASES)
def test_off_is_the_parent_bit_for_bit_and_asymmetric_is_not(tmp_path, name, layout):
    parent_class, parent_config, up_class, up_config, objective = PAIRS[name]
    settings = {**SETTINGS, **STALE[layout], **objective}
    initial, parent, parent_trainer = train(parent_class, parent_config, tmp_path / "parent", **settings)
    _, off, off_trainer = train(up_class, up_config, tmp_path / "off", up_mode="off", **settings)
    _, up, up_trainer = train(up_class, up_config, tmp_path / "up", up_mode="asymmetric", **settings)
    assert up_trainer.up_is_off_policy and parent_trainer.state.global_step == 8
    assert any(not torch.equal(a, b) for a, b in zip(initial, parent))  # it trained
    assert all(torch.equal(a, b) for a, b in zip(parent, off))  # "off" is the parent
    assert any(not torch.equal(a, b) for a, b in zip(parent, up))  # UP is not
    # The parent's own logged values are the same too (UP adds its up/* metrics and policy_loss beside them).
    logs = parent_trainer.state.log_history
    theirs = [{k: v for k, v in h.items() if not k.startswith(("step_time", "train_"))} for h in logs]
    ours = [{k: h[k] for k in t} for t, h in zip(theirs, off_trainer.state.log_history)]
    assert ours == theirs


def test_off_config_defaults_are_the_parents():
    """Every field the parent config has keeps the parent's default in the UP config (the float path included)."""
    for parent, ours in ((GRPOConfig, UPGRPOConfig), (RLOOConfig, UPRLOOConfig)):
        theirs, mine = parent(output_dir="x", use_cpu=True), ours(output_dir="x", use_cpu=True, up_mode="off")
        fields = [f.name for f in dataclasses.fields(parent)]
        assert {k: getattr(mine, k) for k in fields} == {k: getattr(theirs, k) for k in fields}
        assert mine.activation_checkpointing is True  # TRL's default (on), under transformers 5's name
    assert not hasattr(UPGRPOConfig(output_dir="x", use_cpu=True), "share_prompt_prefix")  # not a UP setting
