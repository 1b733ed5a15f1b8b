"""`python kill_mid_save.py PIECE STEP ARGS...`: `up-trl train ARGS...`, killed by SIGKILL while it writes PIECE
(model.safetensors, optimizer.pt, rng_state.pth, rollout_buffer_rank0.pt, trainer_state.json, or `mark`: before the
completion mark) of checkpoint-STEP."""

import os
import signal
import sys


def main() -> int:
    import torch
    import transformers.modeling_utils
    from transformers import TrainerState

    from up_trl.cli import main as up_trl
    from up_trl.run import callbacks as run_callbacks

    piece, folder, argv = sys.argv[1], f"checkpoint-{sys.argv[2]}", sys.argv[3:]

    def killing(write, path_at: int):
        """`write`, except that writing PIECE of the checkpoint leaves it half written and kills the process."""

        def wrapper(*args, **kwargs):
            path = str(args[path_at] if len(args) > path_at else kwargs.get("filename", kwargs.get("f", "")))
            result = write(*args, **kwargs)
            if os.path.basename(path) == piece and os.path.basename(os.path.dirname(path)) == folder:
                os.truncate(path, os.path.getsize(path) // 2)
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return wrapper

    torch.save = killing(torch.save, 1)
    transformers.modeling_utils.safe_save_file = killing(transformers.modeling_utils.safe_save_file, 1)
    TrainerState.save_to_json = killing(TrainerState.save_to_json, 1)
    real_mark = run_callbacks.mark_complete

    def mark_complete(path, *args, **kwargs):
        if piece == "mark" and os.path.basename(str(path)) == folder:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_mark(path, *args, **kwargs)

    run_callbacks.mark_complete = mark_complete
    return up_trl(["train", *argv])


if __name__ == "__main__":
    sys.exit(main())
