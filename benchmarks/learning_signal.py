"""How much learning signal a task gives a model before training: the share of prompt groups whose rewards are
not all equal (GRPO learns nothing from the others), the accuracy and the completion lengths.

    python benchmarks/learning_signal.py                       # the offline default: SmolLM2-135M, arithmetic
    python benchmarks/learning_signal.py --system_prompt none --max_completion_length 64
    python benchmarks/learning_signal.py --ops add --few_shot 2 --split dev --seed 42 --num_prompts 48  # dev

Sampling follows the training defaults (temperature 1.0, top_k 0). Prints one JSON line last.
"""

import argparse
import json
import platform
import time

import torch


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_name_or_path", default=None, help="default: SmolLM2-135M-Instruct (offline)")
    parser.add_argument("--dataset_name", default="arithmetic")
    parser.add_argument("--num_prompts", type=int, default=16)
    parser.add_argument("--num_generations", type=int, default=8)
    parser.add_argument("--max_completion_length", type=int, default=96)
    parser.add_argument("--system_prompt", default=None, help="default: the training default; 'none' for none")
    parser.add_argument("--reward", default="math_accuracy")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top_k", type=int, default=0)
    parser.add_argument("--ops", nargs="+", default=["mul"], help="arithmetic only: mul1, mul, add, sub")
    parser.add_argument("--few_shot", type=int, default=0, help="arithmetic only: worked examples before each problem")
    parser.add_argument("--split", default="train", help="arithmetic only: train, dev or test")
    parser.add_argument(
        "--seed",
        type=int,
        default=42,
        help="sampling, and which problems (for dev and test: the ones `up-trl eval --seed` scores first)",
    )
    parser.add_argument("--output", default=None, help="also write the JSON line to this file")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from up_trl.data import load_math_dataset, system_prompt_from_flag
    from up_trl.models.offline import smollm2_path
    from up_trl.rewards import get_reward_funcs

    system_prompt = system_prompt_from_flag(args.system_prompt)
    arithmetic = {"ops": args.ops, "few_shot": args.few_shot} if args.dataset_name == "arithmetic" else {}
    if args.split != "train":  # recorded only when set: earlier results read as they did
        arithmetic["split"] = args.split
    data = load_math_dataset(
        args.dataset_name,
        limit=args.num_prompts,
        seed=args.seed,
        shuffle=True,
        system_prompt=system_prompt,
        **arithmetic,
    )
    path = args.model_name_or_path or smollm2_path()
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    (reward,) = get_reward_funcs([args.reward])

    torch.manual_seed(args.seed)
    start = time.perf_counter()
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in data["prompt"]]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(
            **batch,
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            max_new_tokens=args.max_completion_length,
            num_return_sequences=args.num_generations,
            pad_token_id=tokenizer.pad_token_id,
        )
    completions_ids = out[:, batch["input_ids"].shape[1] :]
    lengths = (completions_ids != tokenizer.pad_token_id).sum(1).tolist()
    completions = tokenizer.batch_decode(completions_ids, skip_special_tokens=True)
    solutions = [s for s in data["solution"] for _ in range(args.num_generations)]
    rewards = reward([[{"role": "assistant", "content": c}] for c in completions], solution=solutions)
    seconds = time.perf_counter() - start

    groups = [rewards[i : i + args.num_generations] for i in range(0, len(rewards), args.num_generations)]
    valid = [[r for r in g if r is not None] for g in groups]
    mixed = sum(len(set(g)) > 1 for g in valid)
    scored = [r for g in valid for r in g]
    result = {
        "model": str(path).rstrip("/").split("/")[-1],
        "dataset": args.dataset_name,
        **arithmetic,
        "system_prompt": system_prompt,
        "num_prompts": len(groups),
        "num_generations": args.num_generations,
        "max_completion_length": args.max_completion_length,
        "temperature": args.temperature,
        "top_k": args.top_k,
        "groups_with_reward_spread": round(mixed / len(groups), 3),
        "accuracy": round(sum(scored) / len(scored), 3) if scored else None,  # None: nothing could be scored
        "unscored": len(rewards) - len(scored),  # gold unparseable or timed out: left out of accuracy, not "wrong"
        "mean_length": round(sum(lengths) / len(lengths), 1),
        "truncated_frac": round(sum(n >= args.max_completion_length for n in lengths) / len(lengths), 3),
        "seconds": round(seconds, 1),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads",
        "example": completions[0][:300],
    }
    print(json.dumps(result))
    if args.output:
        with open(args.output, "w") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
