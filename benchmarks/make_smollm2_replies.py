"""Sample real SmolLM2-135M-Instruct replies to the offline default's arithmetic prompts (the raw material of
`benchmarks/data/smollm2_arithmetic_replies.jsonl`, which holds them hand-labelled).

The offline default trains SmolLM2 on "What is A x B?" and its replies rarely hold \\boxed{} or "the answer is":
the reward leans on the last-number fallback. The labels are written by hand (field `label`, `note`) by the rules of
`make_scorer_cases.py`; this script only writes `completion` and `gold` (seeded, CPU, ~2-3 min on 2 cores).

    python benchmarks/make_smollm2_replies.py --output /tmp/replies.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from up_trl.data import load_math_dataset
from up_trl.models.offline import smollm2_path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--n", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max_new_tokens", type=int, default=64)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    path = smollm2_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    dataset = load_math_dataset("arithmetic", limit=args.n, system_prompt=None)
    rows = []
    for start in range(0, len(dataset), 16):
        batch = dataset[start : start + 16]
        texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in batch["prompt"]]
        inputs = tokenizer(texts, return_tensors="pt", padding=True)
        with torch.no_grad():
            out = model.generate(
                **inputs,
                do_sample=True,
                temperature=1.0,
                top_k=0,
                max_new_tokens=args.max_new_tokens,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        replies = tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        for prompt, gold, reply in zip(batch["prompt"], batch["solution"], replies):
            rows.append({"prompt": prompt[-1]["content"], "completion": reply, "gold": gold})
    args.output.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(json.dumps({"replies": len(rows), "output": str(args.output)}))


if __name__ == "__main__":
    main()
