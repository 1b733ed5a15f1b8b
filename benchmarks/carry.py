"""The wheels a GPU machine's image lacks for `gpu_suite.py` (`python benchmarks/gpu_suite.py --carry .whl`), and
nothing else: run it in an environment that stands in for the image (`.ci/gpu_image` builds one from
`.ci/stacks/gpu-image.txt`), so that what pip would install there is what the image lacks.

1. up-trl's own wheel, built from this checkout;
2. `pip install --dry-run --report` of that wheel here: the distributions this environment lacks (trl, datasets,
   math-verify and their small dependencies); it refuses to carry a replacement for the image's own torch,
   transformers, accelerate, tokenizers, safetensors, huggingface_hub or numpy (`KEEP`);
3. each of those downloaded as a wheel for the image's Python (`--python_version`, 3.12 there), and the total held
   under the device tool's 64 MiB a run may carry, beside the working tree (`LIMIT_MIB`).

Then, on the GPU machine (the device tool's way; nothing is fetched there):

    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site python3 benchmarks/gpu_suite.py --output_dir benchmarks/results/gpu_suite
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
KEEP = {"torch", "transformers", "accelerate", "tokenizers", "safetensors", "huggingface-hub", "numpy"}
LIMIT_MIB = 48  # of the 64 MiB a device run carries: the rest is the working tree
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], check=True, capture_output=True, text=True)


def lacking(wheel: Path) -> dict[str, str]:
    """{name: version} of what `pip install wheel` would add to this environment (up-trl itself excluded)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        pip("install", "--dry-run", "--quiet", "--report", str(report), str(wheel))
        installs = json.loads(report.read_text())["install"]
    found = {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in installs}
    found.pop("up-trl", None)
    replaced = sorted(KEEP & set(found))
    if replaced:
        raise SystemExit(
            f"carry: up-trl would replace the image's {', '.join(f'{n} (with {found[n]})' for n in replaced)}: the "
            "GPU suite must run on the image's own versions (is this environment the image's stand-in?)."
        )
    return found


def carry(folder: str, python_version: str) -> list[Path]:
    """Write into `folder` up-trl's wheel and a wheel of each distribution the image lacks; returns their paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    pip("wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT))
    (wheel,) = out.glob("up_trl-*.whl")
    needed = lacking(wheel)
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    if needed:
        pip("download", "--no-deps", "--only-binary=:all:", "--python-version", python_version,
            "--implementation", "cp", *platforms, "--quiet", "-d", str(out),
            *(f"{name}=={version}" for name, version in sorted(needed.items())))  # fmt: skip
    wheels = sorted(out.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels) / 2**20
    if size > LIMIT_MIB:
        raise SystemExit(f"carry: {len(wheels)} wheels take {size:.1f} MiB, over the {LIMIT_MIB} MiB left to carry.")
    names = ", ".join(f"{n} {v}" for n, v in sorted(needed.items()))
    print(f"carry: {len(wheels)} wheels, {size:.1f} MiB, into {out}: up-trl and what the image lacks: {names}")
    return wheels
