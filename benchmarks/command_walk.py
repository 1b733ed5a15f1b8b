"""The walk of one command line through `up-trl train`: which of the package's files its own control flow passes
through, in order, and how often it comes back to a file it had left (issue 56's measure of the run layer).

    python benchmarks/command_walk.py [--depth 4]   # a 2-step run of a tiny model built here, offline, ~1 min on CPU

The walk is the sequence of files of the innermost up_trl frame that up_trl code called from `cli.main` without a
library in between: what a reader follows from the command line down. A call into transformers or TRL pauses it
(the walk stays in the caller's file), and what those libraries call back (callbacks, the trainer's overrides during
`train()`) is not part of it; imports are not either (the import machinery stands between). Consecutive frames of
one file are one stop. `--depth D` follows the walk D calls deep from `cli.main` (the path a reader takes: the
command, the job, the steps it delegates, their helpers); 0 follows every call. Printed: the files, the stops, and
the returns (stops in a file already left).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path


def walk(argv: list[str], depth: int = 0) -> list[str]:
    """The files (relative to the package) that `up-trl train argv` passes through, one entry per stop, following
    calls at most `depth` deep in the package's own chain from `cli.main` (0: all)."""
    import up_trl
    from up_trl import cli

    package = str(Path(up_trl.__file__).resolve().parent) + "/"
    stops: list[str] = []
    chain: list[int] = []  # per live frame: its depth in up_trl's own chain from cli.main, 0 if outside it
    files: list[str] = []
    limit = depth or 10**9

    def visit(file: str):
        if not stops or stops[-1] != file:
            stops.append(file)

    def profile(frame, event, arg):
        if event == "call":
            file = frame.f_code.co_filename
            if not chain:
                level = 1 if frame.f_code is cli.main.__code__ else 0
            else:
                level = chain[-1] + 1 if chain[-1] and file.startswith(package) else 0
            chain.append(level)
            files.append(file)
            if 0 < level <= limit:
                visit(file[len(package) :])
        elif event == "return" and chain:
            chain.pop()
            files.pop()
            if chain and 0 < chain[-1] <= limit:
                visit(files[-1][len(package) :])

    sys.setprofile(profile)
    try:
        code = cli.main(["train", *argv])
    finally:
        sys.setprofile(None)
    assert code == 0, f"up-trl train exited {code}"
    return stops


def main():
    import argparse

    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=4, help="calls deep from cli.main (0: every call)")
    parser.add_argument("--list", action="store_true", help="print the stops in order, then the counts")
    args = parser.parse_args()

    torch.set_num_threads(1)
    from up_trl.models.offline import save_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        model = save_tiny_model(Path(tmp) / "model", seed=0)
        argv = ["--model_name_or_path", model, "--output_dir", str(Path(tmp) / "out"), "--dataset_limit", "16",
                "--max_steps", "2", "--per_device_train_batch_size", "8", "--num_generations", "4",
                "--max_completion_length", "4", "--use_cpu", "true", "--bf16", "false", "--save_steps", "1",
                "--report_to", "none"]  # fmt: skip
        stops = walk(argv, args.depth)
    if args.list:
        print("\n".join(f"{i:3d}  {f}" for i, f in enumerate(stops, 1)))
    files = len(set(stops))
    result = {"depth": args.depth, "files": files, "stops": len(stops), "returns": len(stops) - files}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
