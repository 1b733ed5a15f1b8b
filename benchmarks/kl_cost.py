"""What TRL's KL to the reference costs (PRE-REGISTRATION 3 in collapse_settings.py): `up-trl train`, the offline
default (SmolLM2-135M-Instruct, its recipe's data and flags), `--beta 0.05` against `--beta 0`, pairs interleaved in
one run, each run its own process.

    python benchmarks/kl_cost.py --output_dir benchmarks/results/kl_cost       # 3 pairs of 4 steps
    python benchmarks/kl_cost.py --pairs 1 --max_steps 2 --output_dir outputs/kl_cost

Per run: the median wall time per optimizer step (metrics.jsonl's `step_time`, steps 2 onward: the first one also
loads and warms up) and the peak resident memory of the training process (the reference model's weights included,
read from the process's own rusage). The last line printed is one JSON object with the medians and their ratios
(beta 0.05 / beta 0). On a GPU machine, benchmarks/gpu_suite.py runs the same pair (its section 3, "KL cost").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import describe_machine, git_commit

BETAS = (0.0, 0.05)


def one_run(beta: float, max_steps: int, out: Path) -> dict:
    """`up-trl train` with `--beta beta` in a child process: its step times and peak RSS."""
    argv = [sys.executable, "-m", "up_trl", "train", "--max_steps", str(max_steps), "--beta", str(beta),
            "--output_dir", str(out), "--plot", "false", "--save_strategy", "no"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    stderr = child.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{stderr[-3000:]}")
    logs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [h["step_time"] for h in logs if "step_time" in h and h.get("step", 0) >= 2]
    return {
        "beta": beta,
        "step_time_s": statistics.median(steps),
        "steps": len(steps),
        "peak_rss_mib": usage.ru_maxrss / 1024,  # Linux: kibibytes
        "wall_s": round(wall, 1),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--max_steps", type=int, default=4)
    parser.add_argument("--output_dir", default="outputs/kl_cost")
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            order = BETAS if pair % 2 == 0 else BETAS[::-1]  # A B, then B A: neither is always first
            for beta in order:
                run = one_run(beta, args.max_steps, Path(tmp) / f"pair{pair}-beta{beta}")
                runs.append({"pair": pair, **run})
                print(json.dumps(runs[-1]), flush=True)
    medians = {
        beta: {k: statistics.median(r[k] for r in runs if r["beta"] == beta) for k in ("step_time_s", "peak_rss_mib")}
        for beta in BETAS
    }
    result = {
        "command": "python benchmarks/kl_cost.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": describe_machine(1),
        "commit": git_commit(),
        "runs": runs,
        "median": {str(beta): m for beta, m in medians.items()},
        "step_time_ratio": round(medians[0.05]["step_time_s"] / medians[0.0]["step_time_s"], 3),
        "peak_rss_ratio": round(medians[0.05]["peak_rss_mib"] / medians[0.0]["peak_rss_mib"], 3),
        "peak_rss_extra_mib": round(medians[0.05]["peak_rss_mib"] - medians[0.0]["peak_rss_mib"], 1),
    }
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("step_time_ratio", "peak_rss_ratio", "peak_rss_extra_mib")}))
    return result


if __name__ == "__main__":
    main()
