"""UP on mixture-of-experts (Qwen3-MoE with its router loss) and vision-language (LLaVA) tiny models built in code:
a few off-policy steps train, and on a stale batch the loss and gradient equal the closed form (TRL's dapo
normalisation), as tests/test_trainer_gradients.py checks on the dense model."""

import math

import numpy as np
import pytest
import torch
import transformers
from conftest import cpu_args, four_completions, length_reward, logged
from datasets import Dataset
from trl import GRPOTrainer

from up_trl import UPGRPOTrainer
from up_trl.models.offline import tiny_tokenizer
from up_trl.objective.paper_losses import up_per_token_loss
from up_trl.trainers.grpo_trainer import UP_METRICS

GA, SPG = 2, 4  # the hand-made batch is one micro-batch of a generation batch split in SPG, accumulated over GA
AUX_COEF = 0.05
IMAGE_SIZE, PATCH_SIZE = 28, 14  # 2 x 2 patches: 4 image tokens per image (CLS dropped)
VL_TEMPLATE = (  # ChatML, with content parts: an image part renders as the processor's <image> placeholder
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# --- tiny models, built in code --------------------------------------------------------------------------------
def tiny_moe(router_aux_loss_coef=AUX_COEF, seed=0):
    """(model, tokenizer): a 2-layer, hidden-32 Qwen3-MoE, 4 experts, top-2, returning its router logits."""
    tokenizer = tiny_tokenizer()
    ids = dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    config = transformers.Qwen3MoeConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, moe_intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_experts=4, num_experts_per_tok=2,
        output_router_logits=True, router_aux_loss_coef=router_aux_loss_coef, max_position_embeddings=256,
        tie_word_embeddings=True, **ids,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = transformers.Qwen3MoeForCausalLM(config)
    model.generation_config.update(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    return model, tokenizer


def tiny_llava(seed=0):
    """(model, processor): a tiny LLaVA (CLIP vision tower, Qwen2 text model) and its offline processor."""
    tokenizer = tiny_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    tokenizer.chat_template = VL_TEMPLATE
    tokenizer.padding_side = "left"
    square = dict(size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    image_processor = transformers.CLIPImageProcessor(**square)
    parts = dict(image_processor=image_processor, tokenizer=tokenizer, chat_template=VL_TEMPLATE)
    # num_additional_image_tokens: CLIP's CLS token, which the "default" strategy drops
    strategy = dict(vision_feature_select_strategy="default")
    processor = transformers.LlavaProcessor(**parts, **strategy, patch_size=PATCH_SIZE, num_additional_image_tokens=1)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, projection_dim=32)
    vision = transformers.CLIPVisionConfig(**vision, image_size=IMAGE_SIZE, patch_size=PATCH_SIZE)
    ids = dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    text = transformers.Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=True, **ids,
    )  # fmt: skip
    image = dict(image_token_index=processor.image_token_id, image_seq_length=(IMAGE_SIZE // PATCH_SIZE) ** 2)
    config = transformers.LlavaConfig(
        vision_config=vision, text_config=text, **image, **strategy, vision_feature_layer=-1, tie_word_embeddings=True
    )
    torch.manual_seed(seed)
    model = transformers.LlavaForConditionalGeneration(config)
    model.generation_config.update(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    return model, processor


def random_images(n, seed=0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)) for _ in range(n)]


# --- helpers ---------------------------------------------------------------------------------------------------
def _train(tmp_path, model, processing_class, dataset, **overrides):
    """UP trains `max_steps=2` optimizer steps on one rollout batch (num_iterations=2: the second is off-policy),
    logging a finite loss and UP's metrics at each."""
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    args = cpu_args(tmp_path, num_iterations=2, max_steps=2, **overrides)
    trainer = UPGRPOTrainer(model, length_reward, args=args, train_dataset=dataset, processing_class=processing_class)
    trainer.train()
    losses = logged(trainer, "loss")
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)
    for key in UP_METRICS:
        assert len(logged(trainer, key)) == 2, key
    assert logged(trainer, "up/would_clip_frac")[-1] > 0  # the second step really is off-policy
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(p.detach(), before[n])}
    return trainer, changed


def _grad_trainer(tmp_path, model, processing_class, dataset):
    args = cpu_args(tmp_path, loss_type="dapo", num_iterations=2)
    trainer = UPGRPOTrainer(model, length_reward, args=args, train_dataset=dataset, processing_class=processing_class)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = GA
    trainer.args.steps_per_generation = SPG
    return trainer


def _forward(trainer, batch, **kwargs):
    """TRL's own forward (not UP's hook) on the batch's prompt + completion, with its multimodal fields."""
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    multimodal = {k: batch[k] for k in ("pixel_values", "num_images") if k in batch}
    return GRPOTrainer._get_per_token_logps_and_entropies(
        trainer, trainer.model, ids, attn, batch["completion_ids"].size(1), **multimodal, **kwargs
    )


def _make_stale(trainer, batch, seed):
    """Stale pi_old, by up to ~e^1 from the current policy: ratios leave the clip band on both sides."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        logps, _, _ = _forward(trainer, batch)
    batch["old_per_token_logps"] = logps + 0.6 * torch.randn(logps.shape, generator=g)
    return batch


def _closed_form(trainer, batch, level, up_mode="asymmetric"):
    """UP's dapo loss written out: `up_per_token_loss` on TRL's forward, with TRL's dapo normaliser."""
    logps, _, _ = _forward(trainer, batch)
    mask = batch["completion_mask"].float()
    clip = dict(epsilon_low=trainer.epsilon_low, epsilon_high=trainer.epsilon_high)
    old, adv = batch["old_per_token_logps"], batch["advantages"]
    per_token = up_per_token_loss(logps, old, adv, mask, **clip, importance_sampling_level=level, up_mode=up_mode)
    return (per_token * mask).sum() / (batch["num_items_in_batch"] * GA / SPG)


def _configure(trainer, level, up_mode="asymmetric"):
    trainer.loss_type = trainer.args.loss_type = "dapo"
    trainer.importance_sampling_level = level
    trainer.up_mode = up_mode


def _grads(model, loss):
    model.zero_grad()
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    return grads


def _assert_equals_closed_form(trainer, batch, level, extra=None):
    """The trainer's loss and gradient against the closed form (plus `extra(trainer)`, a term TRL adds)."""
    _configure(trainer, level)
    actual_loss = trainer.compute_loss(trainer.model, batch)
    actual = _grads(trainer.model, actual_loss)
    expected_loss = _closed_form(trainer, batch, level)
    if extra is not None:
        expected_loss = expected_loss + extra(trainer)
    expected = _grads(trainer.model, expected_loss)
    torch.testing.assert_close(actual_loss.detach(), expected_loss.detach(), rtol=1e-5, atol=1e-7)
    assert actual.keys() == expected.keys()
    for name in expected:
        torch.testing.assert_close(actual[name], expected[name], rtol=1e-4, atol=1e-7, msg=name)
    return actual


def _assert_up_differs_from_off(trainer, batch, level, up_grads):
    _configure(trainer, level, up_mode="off")
    off_loss = trainer.compute_loss(trainer.model, batch)
    off = _grads(trainer.model, off_loss)
    _configure(trainer, level)
    assert max((up_grads[n] - off[n]).abs().max().item() for n in off) > 1e-4
    # and the closed form tells them apart too: it follows up_mode
    torch.testing.assert_close(off_loss.detach(), _closed_form(trainer, batch, level, "off").detach())


# --- mixture of experts ----------------------------------------------------------------------------------------
MOE_517 = (
    "transformers 5.17's Qwen3-MoE cannot generate with its router loss on: load_balancing_loss_func weights a "
    "decoding step's router logits by the whole attention mask (a RuntimeError in TRL's generate; 5.18 on work)"
)


@pytest.mark.xfail(transformers.__version__.startswith("5.17."), reason=MOE_517, raises=RuntimeError, strict=True)
def test_moe_trains_off_policy_with_the_router_loss(tmp_path, prompts_dataset):
    trainer, changed = _train(tmp_path, *tiny_moe(), prompts_dataset)
    assert trainer.aux_loss_enabled and trainer.router_aux_loss_coef == AUX_COEF
    names = {n for n, _ in trainer.model.named_parameters()}
    assert changed == names  # every parameter, the routers' and every layer's experts' included
    assert any(".mlp.gate." in n for n in changed) and any(".mlp.experts." in n for n in changed)
    aux = logged(trainer, "aux_loss")
    assert len(aux) == 2 and all(math.isfinite(x) and x > 0 for x in aux)


def _moe_batch(trainer, tokenizer):
    return _make_stale(trainer, four_completions(len(tokenizer), torch.Generator().manual_seed(0)), seed=1)


def _moe_setup(tmp_path_factory, coef):
    model, tokenizer = tiny_moe(router_aux_loss_coef=coef)
    ds = Dataset.from_dict({"prompt": ["1 + 1 = "] * 8})
    trainer = _grad_trainer(tmp_path_factory.mktemp("moe"), model, tokenizer, ds)
    assert trainer.aux_loss_enabled == (coef > 0)
    return trainer, _moe_batch(trainer, tokenizer)


@pytest.fixture(scope="module")
def moe_setup(tmp_path_factory):
    """The closed-form setup without the router loss (coefficient 0: the policy loss alone)."""
    return _moe_setup(tmp_path_factory, 0.0)


@pytest.fixture(scope="module")
def moe_aux_setup(tmp_path_factory):
    return _moe_setup(tmp_path_factory, AUX_COEF)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_moe_gradient_equals_closed_form(moe_setup, level):
    trainer, batch = moe_setup
    up_grads = _assert_equals_closed_form(trainer, batch, level)
    _assert_up_differs_from_off(trainer, batch, level, up_grads)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_moe_router_loss_is_the_parents_term_added_to_ups(moe_aux_setup, level):
    # With the router loss on, TRL adds coef * aux / GA to the policy loss; UP leaves that term as the parent's.
    trainer, batch = moe_aux_setup

    def router_term(trainer):
        _, _, aux = _forward(trainer, batch, compute_aux_loss=True)
        return AUX_COEF * aux / GA

    grads = _assert_equals_closed_form(trainer, batch, level, extra=router_term)
    assert any(".mlp.gate." in n and g.abs().max() > 0 for n, g in grads.items())


# --- vision-language -------------------------------------------------------------------------------------------
@pytest.fixture
def image_prompts():
    return Dataset.from_dict(
        {"image": random_images(16), "prompt": [[{"role": "user", "content": f"What is {i}?"}] for i in range(16)]}
    )


def test_vision_language_trains_on_images(tmp_path, image_prompts, monkeypatch):
    model, processor = tiny_llava()
    seen = []
    real_loss = UPGRPOTrainer._compute_loss

    def recording_loss(self, model, inputs):
        seen.append(inputs)
        return real_loss(self, model, inputs)

    monkeypatch.setattr(UPGRPOTrainer, "_compute_loss", recording_loss)
    trainer, changed = _train(tmp_path, model, processor, image_prompts)
    assert trainer._is_vlm
    # TRL's rollout batch carries the images: 4 image tokens in every prompt, one 28 x 28 image per completion
    assert len(seen) == 2
    for inputs in seen:
        n = inputs["prompt_ids"].size(0)
        assert inputs["pixel_values"].shape == (n, 3, IMAGE_SIZE, IMAGE_SIZE) and inputs["num_images"] == [1] * n
        assert ((inputs["prompt_ids"] == processor.image_token_id).sum(1) == 4).all()
    # and the gradient reaches the vision tower (CLIP's post-layernorm, off LLaVA's path, aside) and the projector
    vision = {n for n, _ in trainer.model.named_parameters() if "vision_tower" in n and "post_layernorm" not in n}
    assert vision and vision <= changed
    assert any("multi_modal_projector" in n for n in changed) and any("language_model" in n for n in changed)


def _vl_batch(trainer, processor):
    """A stale LLaVA batch: left-padded prompts with image tokens, pixel_values, mixed-sign advantages."""
    images = random_images(4, seed=1)
    questions = ("What is 1?", "Hi", "Which colour?", "2+2")
    chats = [[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": q}]}] for q in questions]
    texts = [processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False) for chat in chats]
    prompt = processor(images=images, text=texts, padding=True, return_tensors="pt")
    batch = four_completions(processor.image_token_id, torch.Generator().manual_seed(0))  # no image token drawn
    batch |= dict(prompt_ids=prompt["input_ids"], prompt_mask=prompt["attention_mask"], num_images=[1] * 4)
    batch["pixel_values"] = prompt["pixel_values"]
    assert (batch["prompt_mask"] == 0).any()
    assert ((batch["prompt_ids"] == processor.image_token_id).sum(1) == 4).all()
    return _make_stale(trainer, batch, seed=1)


@pytest.fixture(scope="module")
def vl_setup(tmp_path_factory):
    model, processor = tiny_llava()
    ds = Dataset.from_dict({"image": random_images(4), "prompt": [[{"role": "user", "content": "hi"}]] * 4})
    trainer = _grad_trainer(tmp_path_factory.mktemp("vl"), model, processor, ds)
    return trainer, _vl_batch(trainer, processor)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_vision_language_gradient_equals_closed_form(vl_setup, level):
    trainer, batch = vl_setup
    up_grads = _assert_equals_closed_form(trainer, batch, level)
    _assert_up_differs_from_off(trainer, batch, level, up_grads)
    # The images matter: the completion log-probs depend on pixel_values, and the vision tower gets UP's gradient
    with torch.no_grad():
        logps, _, _ = _forward(trainer, batch)
        other, _, _ = _forward(trainer, {**batch, "pixel_values": torch.randn_like(batch["pixel_values"])})
    assert (logps - other).abs().max() > 1e-4
    assert any("vision_tower" in n and g.abs().max() > 0 for n, g in up_grads.items())
