"""What the vLLM tests (`test_vllm.py`) put in place of TRL's own code, and nothing else.

1. The weight transfer. TRL's colocate sync (`trl.generation.vllm_generation.VLLMGeneration.sync_weights`) calls
   `model.load_weights([(name, tensor)])` on vLLM's model, one parameter at a time. vLLM's CPU build has repacked the
   linear weights for its CPU kernels and dropped the originals, so that call fails (`AttributeError: 'Parameter'
   object has no attribute 'weight_loader'`). `reload_sync` feeds the same tensors, from TRL's own
   `_iter_named_params()` (which merges a LoRA adapter and names the weights as vLLM expects), to vLLM's own
   `model_runner.reload_weights(weights_iterator=...)`, which loads them and re-runs the repacking, then resets the
   prefix cache as TRL does. Sleep mode is not covered (TRL wakes the weights first; the CPU build has no sleep).
2. One engine for a test module: TRL builds an `LLM` per trainer (about a minute here); `shared_engine` hands every
   trainer the first one built, with the same arguments (it fails if a trainer asks for different ones). Each
   trainer pushes its own weights before it first generates (TRL syncs when `global_step != _last_loaded_step`,
   which starts at -1), so a trainer never samples from another's weights.
"""

from __future__ import annotations

import contextlib

import pytest


def reload_sync(self) -> None:
    """`VLLMGeneration.sync_weights`, colocate mode, through vLLM's `reload_weights` instead of `load_weights`."""
    assert self.mode == "colocate" and not self.enable_sleep_mode, "the substitute covers colocate without sleep"
    runner = self.llm.llm_engine.model_executor.driver_worker.model_runner
    runner.reload_weights(weights_iterator=self._iter_named_params())
    model = runner.get_model()
    head = getattr(model, "lm_head", None)
    if head is not None and head.weight is model.model.embed_tokens.weight:  # tied: never loaded itself
        head.quant_method.process_weights_after_loading(head)  # re-pack the new embedding for the CPU kernels
    self.llm.reset_prefix_cache()


@contextlib.contextmanager
def shared_engine():
    """Within it, TRL's colocate trainers share one vLLM engine and sync through `reload_sync`; yields the list of
    engines built (one)."""
    import trl.generation.vllm_generation as generation

    build, built, asked = generation.LLM, [], []

    def shared_llm(**kwargs):
        if not built:
            built.append(build(**kwargs))
            asked.append(kwargs)
        assert kwargs == asked[0], f"a trainer asked for another engine: {kwargs} != {asked[0]}"
        return built[0]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(generation, "LLM", shared_llm)
        patch.setattr(generation.VLLMGeneration, "sync_weights", reload_sync)
        yield built
