"""The README's Python API section runs as written, offline."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_block(heading: str) -> str:
    """The first ```python block under the README heading `heading`."""
    text = (ROOT / "README.md").read_text()
    section = text.split(f"\n{heading}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


@pytest.mark.slow
def test_python_api_section_runs_as_written(tmp_path):
    code = readme_block("## Python API, offline")
    assert "smollm2_path()" in code and "load_math_dataset" in code and "get_reward_funcs" in code
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    rewards = eval(out.stdout.strip().splitlines()[-1])  # the snippet's last line prints the logged rewards
    assert len(rewards) == 1 and 0.0 <= rewards[0] <= 1.0  # 2 steps, 1 rollout batch: the reward is logged once
    card = (tmp_path / "outputs" / "python-api" / "README.md").read_text()
    assert "fine-tuned with **UP-DAPO** on the bundled `arithmetic` task" in card
    assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in card
