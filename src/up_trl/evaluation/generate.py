"""`up-trl eval`'s generation: k completions per prompt, with batched transformers `generate` (CPU or GPU) or vLLM
(GPU). Each backend is a `generate(prompts, k) -> list of k completions per prompt` made once per model."""

from __future__ import annotations

import torch


def transformers_generator(model_path, args):
    """Batched `model.generate` (model loaded once); returns generate(prompts, k) -> k completions per prompt."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path, padding_side="left")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, args.dtype)).to(device).eval()
    return lambda prompts, k: _generate_transformers(model, tokenizer, prompts, k, args, device)


def _generate_transformers(model, tokenizer, prompts, k, args, device):
    """k samples of each prompt; on CPU with `share_prompt_prefix`, each prompt prefilled once (the same samples)."""
    import copy

    from tqdm.auto import tqdm

    from ..speedups.shared_prompt import shared_prompt_generate

    settings = {"do_sample": args.temperature > 0, "temperature": args.temperature if args.temperature > 0 else None}
    settings |= {"top_p": args.top_p, "top_k": 0, "max_new_tokens": args.max_new_tokens}
    settings["pad_token_id"] = tokenizer.pad_token_id
    beams = model.generation_config.num_beams or 1  # a checkpoint's own beams: generate's num_return_sequences path
    share = device == "cpu" and getattr(args, "share_prompt_prefix", True) and k > 1 and beams == 1
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    outputs: list[list[str]] = []
    for start in tqdm(range(0, len(texts), args.batch_size), desc="generating", unit="batch"):
        batch = tokenizer(
            texts[start : start + args.batch_size], return_tensors="pt", padding=True, add_special_tokens=False
        ).to(device)
        with torch.no_grad():
            if share:  # generate's own config, updated with the settings, as `generate(**settings)` builds it
                config = copy.deepcopy(model.generation_config)
                config.update(**settings, num_return_sequences=1)  # the k copies are rows already
                rows = {key: value.repeat_interleave(k, dim=0) for key, value in batch.items()}
                out = shared_prompt_generate(model.generate, model, **rows, generation_config=config)
            else:
                out = model.generate(**batch, num_return_sequences=k, **settings)
        decoded = tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
        outputs.extend(decoded[i : i + k] for i in range(0, len(decoded), k))
    return outputs


def vllm_generator(model_path, args):
    """vLLM offline generation (GPU); returns generate(prompts, k) -> k completions per prompt."""
    from vllm import LLM, SamplingParams

    llm = LLM(model=model_path, dtype=args.dtype, seed=args.seed)

    def generate(prompts, k):
        params = SamplingParams(
            n=k, temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_new_tokens, seed=args.seed
        )
        return [[o.text for o in r.outputs] for r in llm.chat(list(prompts), params, use_tqdm=True)]

    return generate
