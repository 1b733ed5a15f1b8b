"""The opt-in shared-prompt saving computes each prompt once and gives TRL's full rows' results."""

import contextlib
import functools

import pytest
import torch
from conftest import make_rloo_trainer, make_trainer, param_snapshots
from transformers import GenerationConfig, Lfm2Config, Lfm2ForCausalLM
from trl.trainer.utils import add_fused_lm_head

from up_trl.models.offline import tiny_model_and_tokenizer
from up_trl.speedups import shared_prompt
from up_trl.speedups.shared_prompt import CACHE_ARGUMENT, SharedPromptForward, has_active_dropout, shareable_cache


@contextlib.contextmanager
def backbone_batches(model):
    """(rows, positions) of every forward of the model's decoder stack while in the block."""
    seen = []
    hook = model.model.register_forward_hook(lambda module, args, out: seen.append(tuple(out[0].shape[:2])))
    try:
        yield seen
    finally:
        hook.remove()


def grpo_rows(vocab: int = 60):
    """Three prompts (one left-padded) taken by 2, 3 and 2 rows in mixed order; two completions end early."""
    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(5, vocab, (3, 5), generator=g)
    prompt_masks = torch.ones(3, 5, dtype=torch.long)
    prompt_masks[1, :2] = 0
    prompts[1, :2] = 0
    order = torch.tensor([0, 1, 2, 1, 0, 2, 1])
    completion = torch.randint(5, vocab, (7, 6), generator=g)
    completion_mask = torch.ones(7, 6, dtype=torch.long)
    completion_mask[5, 4:] = completion_mask[6, 2:] = 0
    input_ids = torch.cat([prompts[order], completion], 1)
    attention_mask = torch.cat([prompt_masks[order], completion_mask], 1)
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    labels[:, :5] = -100
    return input_ids, attention_mask, labels, completion_mask


def test_distinct_prompts_groups_rows_whose_ids_and_mask_are_equal():
    ids = torch.tensor([[3, 4, 5], [0, 4, 5], [3, 4, 5], [0, 4, 5]])
    mask = torch.tensor([[1, 1, 1], [0, 1, 1], [1, 1, 1], [1, 1, 1]])  # row 3: the same ids as row 1, token 0 real
    first, inverse = shared_prompt.distinct_prompts(ids, mask)
    assert sorted(first.tolist()) == [0, 1, 3]
    assert inverse[0] == inverse[2] and len(set(inverse[[0, 1, 3]].tolist())) == 3
    assert first[inverse].tolist() == [0, 1, 0, 3]  # each row points at the first row with its prompt


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("grad", [True, False], ids=["with_grad", "no_grad"])
def test_shared_forward_gives_the_full_rows_log_probs_entropies_and_gradients(tiny, attn, grad):
    model, _ = tiny
    model.config._attn_implementation = attn
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    input_ids, attention_mask, labels, completion_mask = grpo_rows()

    def run(forward):
        model.zero_grad()
        with torch.set_grad_enabled(grad):
            out = forward(input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True)
            logps, entropy = out.log_probs[:, -6:], out.entropy[:, -6:]
            if grad:  # a loss that weighs every completion token differently
                (logps * completion_mask * torch.arange(1.0, 43.0).view(7, 6)).sum().backward()
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        return logps.detach(), entropy.detach(), grads

    full = run(model)
    shared_forward = SharedPromptForward(model, logits_to_keep=6)
    with backbone_batches(model) as batches:
        shared = run(shared_forward)
    assert shared_forward.calls == {"shared": 1, "full": 0}
    assert batches == [(3, 4), (7, 7)]  # the prefill: 3 prompts x 4 tokens; then token 5 and the completion
    torch.testing.assert_close(shared[0] * completion_mask, full[0] * completion_mask, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(shared[1] * completion_mask, full[1] * completion_mask, atol=1e-5, rtol=1e-5)
    assert len(shared[2]) == len(full[2]) == (len(list(model.parameters())) if grad else 0)
    for a, e in zip(shared[2], full[2]):
        torch.testing.assert_close(a, e, atol=1e-5, rtol=1e-4)
    assert not grad or max(g.abs().max().item() for g in full[2]) > 1e-3  # the gradients compared are not zero


def tiny_lfm2():
    """A 2-layer LFM2 with the fused head: a cache layer that rows cannot share by index."""
    torch.manual_seed(0)
    sizes = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
    config = Lfm2Config(**sizes, num_key_value_heads=2, layer_types=["conv", "full_attention"])
    model = Lfm2ForCausalLM(config).eval()
    add_fused_lm_head(model)
    return model


def full_rows_case(name, tiny):
    """(model, inputs, logits_to_keep) for each case where the forward must run the full rows."""
    model, _ = tiny
    add_fused_lm_head(model)
    input_ids, attention_mask, labels, _ = grpo_rows()
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True)
    if name == "no_shared_prompt":  # rows 0, 1, 2 hold the three different prompts
        inputs = {key: value[:3] if torch.is_tensor(value) else value for key, value in inputs.items()}
    if name == "one_token_prompt":
        return model, inputs, input_ids.size(1) - 1
    if name == "other_inputs":
        inputs["position_ids"] = torch.arange(input_ids.size(1)).expand_as(input_ids)
    if name == "active_dropout":
        set_attention_dropout(model, 0.1)
        model.train()
    if name == "linear_attention":
        model = tiny_lfm2()
    return model, inputs, 6


@pytest.mark.parametrize(
    "case", ["no_shared_prompt", "one_token_prompt", "other_inputs", "active_dropout", "linear_attention"]
)
def test_shared_forward_runs_the_full_rows_where_sharing_does_not_apply(tiny, case):
    model, inputs, logits_to_keep = full_rows_case(case, tiny)
    forward = SharedPromptForward(model, logits_to_keep)
    torch.manual_seed(0)
    with torch.no_grad():
        out = forward(**inputs).log_probs
    torch.manual_seed(0)
    with torch.no_grad():
        expected = model(**inputs).log_probs
    assert forward.calls == {"shared": 0, "full": 1}
    assert torch.equal(out, expected)


def test_only_plain_attention_caches_are_shared(tiny):
    model, _ = tiny
    assert shareable_cache(model) is not None
    assert shareable_cache(tiny_lfm2()) is None  # a convolution state per row, not keys and values per position
    model.config.output_router_logits = True  # a MoE config asking for the balancing loss over the whole rows
    assert shareable_cache(model) is None


def set_attention_dropout(model, rate: float) -> None:
    """What `attention_dropout=rate` in the config gives at construction: each attention module's own rate."""
    for module in model.modules():
        if hasattr(module, "attention_dropout"):
            module.attention_dropout = rate


def test_dropout_counts_where_a_module_drops_in_training_mode(tiny):
    model, _ = tiny
    assert not has_active_dropout(model.train())  # attention_dropout 0.0
    model.config.attention_dropout = 0.1  # a config value the built modules never read: no dropout runs
    assert not has_active_dropout(model)
    set_attention_dropout(model, 0.1)
    assert has_active_dropout(model) and not has_active_dropout(model.eval())
    model.train().model.embed_tokens.register_module("drop", torch.nn.Dropout(0.0))  # zeroed, as disable_dropout does
    set_attention_dropout(model, 0.0)
    assert not has_active_dropout(model)
    model.model.embed_tokens.drop.p = 0.1
    assert has_active_dropout(model)


def test_models_that_keep_their_own_state_get_the_full_rows(tiny, monkeypatch):
    """A model that ignores or leaves the cache empty gets the full rows."""
    model, _ = tiny
    monkeypatch.setattr(type(model), "_supports_default_dynamic_cache", lambda self: False)
    assert shareable_cache(model) is None
    monkeypatch.undo()
    add_fused_lm_head(model)
    input_ids, attention_mask, labels, _ = grpo_rows()
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True)
    real_forward = model.forward

    def forgetful(*args, **kwargs):  # a model that never fills the cache it is given
        kwargs.pop(CACHE_ARGUMENT, None)
        return real_forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", forgetful)
    forward = SharedPromptForward(model, logits_to_keep=6)
    with torch.no_grad():
        out = forward(**inputs).log_probs
        assert torch.equal(out, model(**inputs).log_probs)
    assert forward.calls == {"shared": 0, "full": 1}


def test_shared_generate_samples_the_same_tokens_from_one_prefill_per_prompt(tiny):
    """The same tokens and, step by step, the same logits as TRL's generate (each row its own prompt)."""
    model, tokenizer = tiny
    tokenizer.padding_side = "left"
    prompts = tokenizer(
        ["1 + 1 = ", "1 + 1 = ", "12 + 12 = ", "1 + 1 = ", "12 + 12 = "], return_tensors="pt", padding=True
    )
    assert prompts["attention_mask"][0].sum() < prompts["attention_mask"].size(1)  # left padding is in play
    ids = dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    config = GenerationConfig(max_new_tokens=12, do_sample=True, temperature=1.0, top_k=0, output_logits=True,
                              return_dict_in_generate=True, **ids)  # fmt: skip
    out = {}
    shared_generate = functools.partial(shared_prompt.shared_prompt_generate, model.generate, model)
    for name, generate in (("full", model.generate), ("shared", shared_generate)):
        torch.manual_seed(3)
        with torch.no_grad(), backbone_batches(model) as batches:
            out[name] = generate(**prompts, generation_config=config)
        out[name + "_batches"] = batches
    assert torch.equal(out["shared"].sequences, out["full"].sequences)
    full_logits, shared_logits = torch.stack(out["full"].logits), torch.stack(out["shared"].logits)
    torch.testing.assert_close(shared_logits, full_logits, atol=1e-5, rtol=1e-5)
    assert (full_logits[0, 0] - full_logits[0, 2]).abs().max() > 1e-2  # the two prompts' first logits differ
    width = prompts["input_ids"].size(1)
    assert out["full_batches"][0] == (5, width)
    assert out["shared_batches"][:2] == [(2, width - 1), (5, 1)]  # 2 prompts prefilled, then 5 rows decode


CASES = "cache_implementation models_cache_implementation no_cache models_num_return_sequences other_kwargs"


@pytest.mark.parametrize("case", [*CASES.split(), "active_dropout", "beams"])
def test_shared_generate_leaves_other_settings_to_generate(tiny, case):
    model, tokenizer = tiny
    tokenizer.padding_side = "left"
    prompts = tokenizer(["1 + 1 = ", "1 + 1 = ", "12 + 12 = "], return_tensors="pt", padding=True)
    settings = dict(max_new_tokens=4, do_sample=True, top_k=0, pad_token_id=tokenizer.pad_token_id)
    kwargs = {}
    if case == "cache_implementation":
        settings["cache_implementation"] = "static"
    if case == "models_cache_implementation":
        model.generation_config.cache_implementation = "static"
    if case == "no_cache":
        settings["use_cache"] = False
    if case == "models_num_return_sequences":
        model.generation_config.num_return_sequences = 2
    if case == "other_kwargs":
        kwargs["max_new_tokens"] = 3
    if case == "active_dropout":
        set_attention_dropout(model, 0.1)
        model.train()
    if case == "beams":
        settings.update(num_beams=2, do_sample=False)
    out = {}
    shared_generate = functools.partial(shared_prompt.shared_prompt_generate, model.generate, model)
    for name, generate in (("full", model.generate), ("shared", shared_generate)):
        torch.manual_seed(0)
        with torch.no_grad(), backbone_batches(model) as batches:
            out[name] = generate(**prompts, generation_config=GenerationConfig(**settings), **kwargs)
        out[name + "_batches"] = batches
    assert out["shared_batches"][0] == out["full_batches"][0] and out["full_batches"][0][0] >= 3  # every row
    assert torch.equal(out["shared"], out["full"])


def run_training(tmp_path, tiny, dataset, share, make=make_trainer, **settings):
    """Parameters after each step, logged losses and the decoder stack's batches of an off-policy run."""
    snapshots = param_snapshots()
    settings |= dict(callbacks=[snapshots], shared_prompt=share, activation_checkpointing=False)
    trainer = make(tmp_path / str(share), tiny, dataset, **settings)
    with backbone_batches(trainer.model) as batches:
        trainer.train()
    losses = [r["loss"] for r in trainer.state.log_history if "loss" in r]
    return snapshots.params, losses, batches


def assert_trains_the_same(tmp_path, tiny, dataset, make=make_trainer, **settings):
    model, _ = tiny
    state = {k: v.clone() for k, v in model.state_dict().items()}
    full = run_training(tmp_path, tiny, dataset, False, make, **settings)
    model.load_state_dict(state)
    shared = run_training(tmp_path, tiny, dataset, True, make, **settings)
    assert shared[1] == pytest.approx(full[1], abs=1e-5)
    for step, params in full[0].items():  # Adam at lr 1e-2 moves each weight ~1e-2 a step: rounding stays << that
        for a, e in zip(shared[0][step], params):
            torch.testing.assert_close(a, e, atol=1e-4, rtol=1e-3)
    # Without sharing every scoring forward is full width; with it, prefills of at most 4 prompts, then continuations
    # of at most the completion + 1. Generation keeps TRL's path (every row prefilled) in both.
    assert full[2][0][0] >= 8 and shared[2][0][0] >= 8
    width = max(length for _, length in full[2])
    scoring = [(rows, length) for rows, length in shared[2] if length != 1]  # generation decodes one token a call
    assert min(rows for rows, length in full[2] if length > 1) >= 8
    assert max(length for rows, length in scoring if rows <= 4 or length <= 9) < width
    assert 0 < len([1 for rows, length in scoring if rows <= 4])
    positions = sum(rows * length for rows, length in full[2]), sum(rows * length for rows, length in shared[2])
    assert positions[1] < 0.8 * positions[0]
    return full, shared


@pytest.mark.parametrize("rloo", [False, True], ids=["grpo", "rloo"])
def test_trains_the_same_with_each_prompt_computed_once(tmp_path, tiny, prompts_dataset, rloo):
    settings = dict(num_iterations=2) if rloo else dict(steps_per_generation=2, num_iterations=2, max_steps=4)
    assert_trains_the_same(tmp_path, tiny, prompts_dataset, make_rloo_trainer if rloo else make_trainer, **settings)


def test_sharing_is_opt_in_and_applies_on_one_cpu_process_without_checkpointing(tmp_path, tiny, prompts_dataset):
    trainer = make_trainer(tmp_path / "a", tiny, prompts_dataset)  # the UP trainer itself never shares
    assert shared_prompt.SharedPromptTrainerMixin not in type(trainer).__mro__
    assert not hasattr(trainer, "shares_prompts")
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, shared_prompt=True, activation_checkpointing=False)
    assert trainer.shares_prompts(trainer.model, torch.device("cpu"))
    assert not trainer.shares_prompts(trainer.model, torch.device("cuda"))  # not measured there yet
    trainer.is_fsdp_enabled = True  # a wrapped model expects one forward per backward
    assert not trainer.shares_prompts(trainer.model, torch.device("cpu"))


def test_gradient_checkpointing_gets_the_full_rows(tmp_path, tiny, prompts_dataset, monkeypatch):
    """Checkpointed layers drop the cache (transformers), so the prompt would be lost: the full rows instead."""
    calls = []
    real_call = SharedPromptForward.__call__
    monkeypatch.setattr(SharedPromptForward, "__call__", lambda self, **kw: calls.append(1) or real_call(self, **kw))
    # steps_per_generation=1: no old-log-prob pass, where TRL turns checkpointing off (and sharing would apply)
    settings = dict(max_steps=1, shared_prompt=True)
    make_trainer(tmp_path, tiny, prompts_dataset, activation_checkpointing=True, **settings).train()
    assert len(calls) == 0
    fresh = tiny_model_and_tokenizer(seed=0)  # the first trainer turned checkpointing on in `tiny`'s model
    make_trainer(tmp_path / "b", fresh, prompts_dataset, activation_checkpointing=False, **settings).train()
    assert len(calls) > 0
