"""What the vLLM tests put in place of TRL's code: `reload_sync` feeds TRL's `_iter_named_params()` to vLLM's
`reload_weights` (the CPU build cannot `load_weights`), and `shared_engine` hands every trainer of a module one
engine (each pushes its own weights before it first generates)."""

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
    """TRL's colocate trainers share one vLLM engine and sync through `reload_sync`; yields [the engine]."""
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
