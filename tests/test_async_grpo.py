"""UP on TRL's async GRPO trainer on CPU, with the tests' stand-ins for vLLM and flash-attention-3: the loss and
every gradient equal a closed form on a packed stale batch, "off" is the parent bit for bit, the tree attention
matches the model's own, end-to-end runs, and the TRL lines this relies on."""

import inspect
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from async_rollout import async_grpo_on_cpu, in_process_rollout  # the tests' CPU stand-ins
from conftest import argv, cpu_args, length_reward
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from tree_attention import TREE_ATTENTION as OUR_TREE_ATTENTION
from tree_attention import register_reference_tree_attention, tree_attention_reference, varlen_causal_attention
from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer
from trl.experimental.async_grpo import async_grpo_trainer as trl_async
from trl.experimental.async_grpo.async_grpo_trainer import DataCollatorForRollout
from trl.experimental.async_grpo.async_rollout_worker import RolloutSample, _AsyncRolloutLoop
from trl.experimental.async_grpo.packing import TREE_ATTENTION, TreeRow, tree_attention

from up_trl import UPAsyncGRPOConfig, UPAsyncGRPOTrainer
from up_trl.run.parts import nonfinite_guard

EPS_LOW, EPS_HIGH, GA = 0.2, 0.28, 2


@pytest.fixture(scope="module")
def prompts():
    return Dataset.from_dict({"prompt": [[{"role": "user", "content": f"{i} + {i} = "}] for i in range(8)]})


def _args(tmp_path, config_cls=UPAsyncGRPOConfig, **overrides):
    # token_budget 0: fixed-count micro-batches (the default asks the vLLM server for its max_model_len)
    settings = dict(per_device_train_batch_size=4, gradient_accumulation_steps=GA, max_steps=3, token_budget=0)
    settings |= dict(epsilon=EPS_LOW, epsilon_high=EPS_HIGH, weight_sync_steps=2)
    return cpu_args(tmp_path, config_cls, **(settings | overrides))


def _trainer(model, dataset, args, parent=False, trainer_class=UPAsyncGRPOTrainer, **rollout_kwargs):
    tokenizer = AutoTokenizer.from_pretrained(model)
    kwargs = dict(reward_funcs=length_reward, args=args, train_dataset=dataset, processing_class=tokenizer)
    rollout = in_process_rollout(model, **kwargs, **rollout_kwargs)
    with async_grpo_on_cpu():
        return (AsyncGRPOTrainer if parent else trainer_class)(model, **kwargs, **rollout)


# --- (a) exactness on a packed, stale batch --------------------------------------------------------------------------
def _samples(vocab, seed=0):
    """Two prompt groups (so the tree shares prefixes), completions of different lengths, mixed-sign advantages."""
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(4, vocab, (n,), generator=g) for n in (5, 3)]
    spec = [(0, 4, 1.2), (0, 6, -0.7), (0, 3, 0.5), (1, 5, -1.5), (1, 2, 0.9)]  # (group, completion length, A)
    samples = []
    for group, length, advantage in spec:
        completion = torch.randint(4, vocab, (length,), generator=g)
        ids = torch.cat([prompts[group], completion])
        mask = torch.cat([torch.zeros_like(prompts[group]), torch.ones_like(completion)])
        samples.append(dict(input_ids=ids, completion_mask=mask, advantage=advantage, group_id=group, metrics={}))
    return samples


def _sampled_logps(model, sample):
    """log pi(y_t | y_<t) of each completion token, with an ordinary (unpacked, sdpa) forward."""
    ids = sample["input_ids"]
    logits = model(input_ids=ids[None]).logits[0, :-1].float()
    logps = torch.log_softmax(logits, -1).gather(-1, ids[1:, None]).squeeze(-1)
    return logps[sample["completion_mask"][1:].bool()]


@pytest.fixture(scope="module")
def stale_batch(tiny_model):
    """The samples with stale old log-probs (current ones + noise), packed by TRL's own collator."""
    model = AutoModelForCausalLM.from_pretrained(tiny_model, attn_implementation="sdpa")
    samples = _samples(model.config.vocab_size)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for sample in samples:
            old = torch.zeros(len(sample["input_ids"]))
            trained = sample["completion_mask"].bool()
            # Stale by up to ~e^1: many ratios leave [1 - eps_low, 1 + eps_high] on both sides.
            old[trained] = _sampled_logps(model, sample) + 0.6 * torch.randn(int(trained.sum()), generator=g)
            sample["old_log_probs"] = old
    row = TreeRow()
    for sample in samples:
        row.add(sample)
    batch = DataCollatorForRollout(pad_token_id=0, num_processes=1)([[row]])
    assert batch["tree_cu_seqlens_q"].numel() - 1 > len(samples) - 1  # a real tree: shared prefixes, branches
    return samples, batch


def closed_form_loss(model, samples, up_mode, min_prob=None):
    """Mean over trained tokens of -A pi/sg(pi) (routed) or the clipped term, over GA; `min_prob`: rare keep it."""
    terms = []
    for sample in samples:
        logp = _sampled_logps(model, sample)
        old = sample["old_log_probs"][sample["completion_mask"].bool()]
        a = sample["advantage"]
        r = torch.exp(logp - old)
        clipped = -torch.minimum(r * a, r.clamp(1 - EPS_LOW, 1 + EPS_HIGH) * a)
        if up_mode == "both" or (up_mode == "asymmetric" and a > 0):
            routed = -a * torch.exp(logp - logp.detach())
            if min_prob is not None:  # tokens rare when sampled keep the clip
                routed = torch.where(old.exp() >= min_prob, routed, clipped)
            terms.append(routed)
        else:
            terms.append(clipped)
    terms = torch.cat(terms)
    return terms.sum() / terms.numel() / GA


def _loss_and_grads(trainer, batch):
    trainer.model.train()
    trainer.model.zero_grad()
    trainer.current_gradient_accumulation_steps = GA
    loss = trainer.compute_loss(trainer.model, batch)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in trainer.model.named_parameters()}


@pytest.fixture(scope="module")
def parent_result(tiny_model, prompts, stale_batch, tmp_path_factory):
    args = _args(tmp_path_factory.mktemp("parent"), config_cls=AsyncGRPOConfig)
    return _loss_and_grads(_trainer(tiny_model, prompts, args, parent=True), stale_batch[1])


@pytest.mark.parametrize("case", ["asymmetric", "both", "off", "rare_guard"])
def test_loss_and_every_gradient_equal_the_closed_form(case, tiny_model, prompts, stale_batch, tmp_path):
    samples, batch = stale_batch
    up_mode, rare = ("asymmetric", True) if case == "rare_guard" else (case, False)
    olds = torch.cat([s["old_log_probs"][s["completion_mask"].bool()] for s in samples if s["advantage"] > 0])
    min_prob = olds.exp().median().item() if rare else None  # half of the positive tokens were "rare" at sampling
    args = _args(tmp_path, up_mode=up_mode, up_positive_min_prob=min_prob)
    loss, grads = _loss_and_grads(_trainer(tiny_model, prompts, args), batch)

    reference = AutoModelForCausalLM.from_pretrained(tiny_model, attn_implementation="sdpa")
    expected = closed_form_loss(reference, samples, up_mode, min_prob=min_prob)
    expected.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-5, atol=1e-6)
    expected_grads = dict(reference.named_parameters())
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected_grads[name].grad, rtol=1e-4, atol=1e-6, msg=name)
    if rare:  # the guard acted on this batch
        assert not torch.allclose(closed_form_loss(reference, samples, up_mode).detach(), expected.detach())


def test_off_is_the_parent_bit_for_bit_and_up_differs(tiny_model, prompts, stale_batch, parent_result, tmp_path):
    parent_loss, parent_grads = parent_result
    off = _trainer(tiny_model, prompts, _args(tmp_path / "off", up_mode="off"))
    off_loss, off_grads = _loss_and_grads(off, stale_batch[1])
    assert torch.equal(off_loss, parent_loss)
    assert all(torch.equal(off_grads[name], grad) for name, grad in parent_grads.items())

    up_loss, up_grads = _loss_and_grads(_trainer(tiny_model, prompts, _args(tmp_path / "up")), stale_batch[1])
    assert not torch.allclose(up_loss, parent_loss)
    assert any(not torch.allclose(up_grads[name], grad) for name, grad in parent_grads.items())


def test_up_metrics_count_the_positive_tokens(tiny_model, prompts, stale_batch, tmp_path):
    from up_trl.run.parts import LeadingIndicatorsMixin

    samples, batch = stale_batch
    with_indicators = type("UPAsyncGRPOTrainer", (LeadingIndicatorsMixin, UPAsyncGRPOTrainer), {})
    trainer = _trainer(tiny_model, prompts, _args(tmp_path), trainer_class=with_indicators)
    _loss_and_grads(trainer, batch)
    n_tokens = [int(s["completion_mask"].sum()) for s in samples]
    n_positive = sum(n for n, s in zip(n_tokens, samples) if s["advantage"] > 0)
    assert trainer._metrics["train"]["up/positive_token_frac"] == [(n_positive, sum(n_tokens))]
    # |log r| on positive tokens: the noise added to the old log-probs, read back through the packed forward
    (total, count) = trainer._metrics["train"]["up/positive_abs_log_ratio_mean"][0]
    assert count == n_positive and total > 0
    # The leading indicators (the opt-in part, `objective.indicators`), per trained token: the counts of each sign.
    n_negative = sum(n for n, s in zip(n_tokens, samples) if s["advantage"] < 0)
    assert trainer._metrics["train"]["up/positive_tokens"] == [(n_positive, 1.0)]
    assert trainer._metrics["train"]["up/negative_tokens"] == [(n_negative, 1.0)]


# --- (b) the tree attention reference --------------------------------------------------------------------------------
def test_tree_attention_matches_the_models_own_attention_on_unpacked_sequences(tiny_model):
    register_reference_tree_attention()
    plain = AutoModelForCausalLM.from_pretrained(tiny_model, attn_implementation="sdpa").eval()
    tree = AutoModelForCausalLM.from_pretrained(tiny_model, attn_implementation=OUR_TREE_ATTENTION).eval()
    samples = _samples(plain.config.vocab_size, seed=3)
    for sample in samples:
        sample["completion_mask"] = torch.ones_like(sample["input_ids"])  # score every position
        sample["old_log_probs"] = torch.zeros(len(sample["input_ids"]))
    row = TreeRow()
    for sample in samples:
        row.add(sample)
    packed = row.pack()
    with torch.no_grad():
        tree_kwargs = {k: packed[k] for k in ("tree_kv_index", "tree_cu_seqlens_q", "tree_cu_seqlens_k")}
        tree_kwargs |= dict(
            tree_max_seqlen_q=int(packed["tree_max_seqlens"][0]), tree_max_seqlen_k=int(packed["tree_max_seqlens"][1])
        )
        logits = tree(input_ids=packed["input_ids"][None], position_ids=packed["position_ids"][None], **tree_kwargs)
        logits = logits.logits[0]
        for i, sample in enumerate(samples):
            expected = plain(input_ids=sample["input_ids"][None]).logits[0, :-1]
            got = logits[packed["token_index"][packed["segment_id"] == i]]
            torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


def _per_query_attention(q, k, v, cu_q, cu_k, scale, window, softcap):
    """The FA3 causal varlen contract, one query at a time (bottom-right aligned mask)."""
    out = torch.zeros_like(q)
    group = q.shape[1] // k.shape[1]
    for s in range(len(cu_q) - 1):
        lq, lk = int(cu_q[s + 1] - cu_q[s]), int(cu_k[s + 1] - cu_k[s])
        for i in range(lq):
            last = i + lk - lq
            first = max(0, last - window) if window >= 0 else 0
            if last < 0:
                continue
            keys = slice(int(cu_k[s]) + first, int(cu_k[s]) + last + 1)
            for h in range(q.shape[1]):
                scores = k[keys, h // group] @ q[int(cu_q[s]) + i, h] * scale
                if softcap:
                    scores = softcap * torch.tanh(scores / softcap)
                out[int(cu_q[s]) + i, h] = torch.softmax(scores, 0) @ v[keys, h // group]
    return out


@pytest.mark.parametrize(
    "window,softcap", [(-1, 0.0), (2, 0.0), (-1, 5.0)], ids=["causal", "sliding_window", "softcap"]
)
def test_varlen_reference_matches_a_per_query_loop(window, softcap):
    g = torch.Generator().manual_seed(0)
    cu_q, cu_k = torch.tensor([0, 4, 5, 7]), torch.tensor([0, 4, 9, 13])  # a root, then branches with longer paths
    q = torch.randn(7, 4, 8, generator=g)
    k, v = torch.randn(13, 2, 8, generator=g), torch.randn(13, 2, 8, generator=g)  # GQA: 4 query heads, 2 kv heads
    got = varlen_causal_attention(q, k, v, cu_q, cu_k, softmax_scale=0.3, window_size=(window, 0), softcap=softcap)
    expected = _per_query_attention(q, k, v, cu_q, cu_k, 0.3, window, softcap)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


# --- (c) end to end with the in-process rollout worker ---------------------------------------------------------------
def _train(model, prompts, args, parent=False, **rollout_kwargs):
    trainer = _trainer(model, prompts, args, parent=parent, **rollout_kwargs)
    trainer.train()
    return trainer, [p.detach().clone() for p in trainer.model.parameters()]


def test_end_to_end_up_trains_differs_from_its_parent_and_off_is_the_parent(tiny_model, prompts, tmp_path):
    overrides = dict(max_steps=4, weight_sync_steps=1, max_staleness=4)
    fill = dict(groups_per_fill=4)  # 16 samples a fill, 8 a step: every second step trains one-version-old samples
    parent_args = _args(tmp_path / "p", config_cls=AsyncGRPOConfig, **overrides)
    parent, parent_params = _train(tiny_model, prompts, parent_args, parent=True, **fill)
    off, off_params = _train(tiny_model, prompts, _args(tmp_path / "o", up_mode="off", **overrides), **fill)
    up, up_params = _train(tiny_model, prompts, _args(tmp_path / "u", **overrides), **fill)

    assert up.state.global_step == 4
    initial = AutoModelForCausalLM.from_pretrained(tiny_model).parameters()
    assert any(not torch.equal(p, q) for p, q in zip(up_params, initial))  # it trained
    assert all(torch.equal(p, q) for p, q in zip(off_params, parent_params))  # "off" is the parent, bit for bit
    assert max((p - q).abs().max().item() for p, q in zip(up_params, parent_params)) > 1e-6  # UP is not

    logs = [record for record in up.state.log_history if "loss" in record]
    assert max(record["sample/staleness_max"] for record in logs) >= 1  # samples trained a policy version late
    assert any(abs(record["ratio"] - 1) > 1e-3 for record in logs)  # pi_theta != pi_old: off-policy for real
    for name in ("up/positive_token_frac", "up/capacity_up_mean", "up/would_clip_frac"):
        assert all(math.isfinite(record[name]) for record in logs), name


def test_trls_log_reports_each_up_metric_as_its_mean_nan_skipped(tiny_model, prompts, tmp_path):
    """UP appends its rates to `_metrics` (NaN: nothing to count) and leaves the reduction to the parent's `log`."""
    trainer = _trainer(tiny_model, prompts, _args(tmp_path))
    trainer.model.train()  # the parent logs `_metrics["train"]` in training mode
    trainer._metrics["train"].clear()
    trainer._metrics["train"]["up/capacity_up_mean"] += [0.25, float("nan"), 0.75]
    nonfinite_guard(trainer).record(3)  # the part's count, through the same `_metrics`
    trainer.log({})
    logged = trainer.state.log_history[-1]
    assert logged["up/capacity_up_mean"] == pytest.approx(0.5) and logged["up/nonfinite_skipped_steps"] == 3
    assert not trainer._metrics["train"]


def test_worker_samples_carry_the_samplers_log_probs(tiny_model, prompts, tmp_path):
    """old_log_probs are the sampler copy's log-probabilities of the sampled tokens, tagged with its version."""
    args = _args(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    kwargs = dict(train_dataset=prompts, reward_funcs=length_reward, processing_class=tokenizer, args=args)
    worker = in_process_rollout(tiny_model, **kwargs)["rollout_worker"]
    worker.update_model_version(3)
    samples = worker.generate_group(0, prompts[0])
    assert len(samples) == args.num_generations and all(isinstance(s, RolloutSample) for s in samples)
    advantages = torch.tensor([s.advantage for s in samples])
    rewards = torch.tensor([s.metrics["reward"] for s in samples])
    torch.testing.assert_close(advantages, (rewards - rewards.mean()) / (rewards.std(unbiased=False) + 1e-8))
    for sample in samples:
        assert sample.model_version == 3
        ids, mask = torch.tensor(sample.input_ids), torch.tensor(sample.completion_mask)
        logits = worker.sampler(input_ids=ids[None]).logits[0, :-1]
        logps = torch.log_softmax(logits / args.temperature, -1).gather(-1, ids[1:, None]).squeeze(-1)
        trained = mask[1:].bool()
        torch.testing.assert_close(torch.tensor(sample.old_log_probs)[1:][trained], logps[trained], rtol=0, atol=1e-5)


# --- (d) what this relies on inside TRL ------------------------------------------------------------------------------
COMPUTE_LOSS = inspect.getsource(AsyncGRPOTrainer.compute_loss)
RELIED_ON = [
    # the parent reads the advantages UP zeroes from the batch it is handed, with this selection
    'selected = inputs["token_index"] >= 0',
    'advantages = inputs["advantages"][selected]',
    'token_index = inputs["token_index"][selected]',
    # pi_old copied out of the batch before the forward: why this trainer cannot anchor it to pi_theta
    'old_log_probs = inputs["old_log_probs"][selected]',
    # one forward through the model (the hook records it) and the log-probs UP reads the same way
    "outputs = model(",
    "log_probs = outputs.log_probs.flatten()[token_index]",
    # the clipped term the closed form mirrors
    "coef_1 = torch.exp(log_ratio)",
    "coef_2 = torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)",
    "per_token_loss = -torch.min(per_token_loss1, per_token_loss2)",
    # the normalisation UP's term repeats (UPAsyncGRPOTrainer.compute_loss)
    "loss = per_token_loss.sum()",
    'global_n_tokens = inputs["global_n_tokens"][0]',
    "tokens_per_rank = (global_n_tokens / world_size).clamp(min=1.0)",
    "loss = loss / tokens_per_rank.to(torch.float32)",
    "loss = loss / self.current_gradient_accumulation_steps",
]


@pytest.mark.parametrize("line", RELIED_ON)
def test_async_compute_loss_still_has(line):
    assert line in COMPUTE_LOSS, f"TRL's AsyncGRPOTrainer.compute_loss no longer contains: {line}"


def test_the_tests_cpu_stand_ins_still_fit_trl():
    # async_grpo_on_cpu swaps these two names the constructor calls (if TRL changes them, only the stand-ins break)
    init = inspect.getsource(AsyncGRPOTrainer.__init__)
    assert "register_tree_attention()" in init and "get_peak_flops_per_device(self.accelerator, dtype)" in init
    assert callable(trl_async.register_tree_attention) and callable(trl_async.get_peak_flops_per_device)
    # the reference has the kernel wrapper's exact call contract, under its name
    assert OUR_TREE_ATTENTION == TREE_ATTENTION
    assert inspect.signature(tree_attention_reference) == inspect.signature(tree_attention)
    # the in-process worker scores through TRL's _score_group with a shim holding exactly what it reads
    used = set(re.findall(r"self\.(\w+)", inspect.getsource(_AsyncRolloutLoop._score_group)))
    assert used == {"reward_funcs", "reward_func_names", "_env_reward_types", "_provides_rollout_reward"}
    assert AsyncGRPOTrainer.loss_is_scaled_for_ga is True


def test_on_policy_only_without_staleness_and_with_a_sync_every_step(tiny_model, prompts, tmp_path):
    on = _trainer(tiny_model, prompts, _args(tmp_path / "a", max_staleness=0, weight_sync_steps=1))
    assert not on.up_is_off_policy
    assert _trainer(tiny_model, prompts, _args(tmp_path / "b", max_staleness=0, weight_sync_steps=2)).up_is_off_policy
    assert _trainer(tiny_model, prompts, _args(tmp_path / "c", max_staleness=1, weight_sync_steps=1)).up_is_off_policy


def test_config_refusals(tmp_path):
    with pytest.raises(ValueError, match="up_mode"):
        _args(tmp_path, up_mode="clipped")
    with pytest.raises(ValueError, match=r"up_positive_min_prob=1.5 must be in \(0, 1\)"):
        _args(tmp_path, up_positive_min_prob=1.5)
    assert _args(tmp_path, up_mode=False).up_mode == "off"  # YAML's unquoted `off`


def test_the_example_says_in_one_line_what_it_needs_on_a_cpu(tmp_path):
    script = Path(__file__).resolve().parents[1] / "examples" / "async_grpo.py"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    cmd = [sys.executable, str(script), *argv("--steps 2")]
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 1 and not out.stdout
    assert out.stderr.strip().splitlines()[-1].startswith("examples/async_grpo.py needs a CUDA GPU and a vLLM server")
    assert "Traceback" not in out.stderr and not list(tmp_path.iterdir())  # nothing trained, nothing written
