"""The examples run as a user would run them: the quickstart script and the notebook, top to bottom."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quickstart_script(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "reward" in out.stdout and "s/step" in out.stdout
    # its own folder, never the main job's outputs/quickstart
    assert (tmp_path / "outputs" / "quickstart-example" / "model.safetensors").exists()
    assert not (tmp_path / "outputs" / "quickstart").exists()


def test_lora_example_trains_only_the_adapters(tmp_path):
    import json

    from safetensors.torch import load_file

    run = [sys.executable, str(ROOT / "examples" / "lora.py"), "--max_steps", "4"]
    out = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ,
                         "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert 0 < result["trainable_share"] < 0.5 and len(result["rewards"]) == 2
    adapter = load_file(tmp_path / "outputs" / "lora-example" / "adapter_model.safetensors")
    assert adapter and all("lora_" in name for name in adapter)  # the adapter alone was saved
    assert not (tmp_path / "outputs" / "lora-example" / "model.safetensors").exists()


@pytest.mark.slow
def test_notebook_runs_top_to_bottom(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4)
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "asymmetric: reward" in printed and "off: reward" in printed
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the plot was drawn
