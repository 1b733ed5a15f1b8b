"""What the UP trainers rely on in TRL and transformers, checked three ways (`trl_pins.json`, data next to this file):

- `methods`: whole-method pins of the TRL methods UP's objective depends on. Each is reduced to its normalised
  source: the AST of its definition without docstrings, so comments, docstrings, blank lines and formatting do not
  count, while any changed, added or removed statement does. Its SHA-256 and the reason we rely on it are kept;
  `test_trl_pins.py` compares them. They hold for trl's pinned minor release only (`pyproject.toml` caps trl).
- `behaviours`: every other TRL or transformers method a UP trainer overrides or relies on, held by the named
  behavioural tests (resume bit for bit, the weights' file mode, ...), which run on every stack CI tests: a
  release that changes such a method without changing the behaviour breaks nothing.
- `signatures`: a public method UP replaces whole, never running TRL's body: TRL's callers must still be able to
  call our override, so its parameters (names, kinds, defaults) must be TRL's (`parameters` below). There is
  nothing to re-pin: a failure means the override's signature must follow TRL's.

When TRL changes a pinned method:

1. read the method's diff between the pinned TRL version and the new one, against the reason in `trl_pins.json`;
2. re-verify the objective: `pytest tests/test_trainer_gradients.py tests/test_rloo.py tests/test_async_grpo.py
   tests/test_off_is_parent.py tests/test_resume.py` (closed-form gradients, `up_mode="off"` == the parent, resume);
3. when they pass and the diff needs no change in up_trl, re-pin: `python tests/trl_pins.py --write`.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import inspect
import json
import textwrap
from pathlib import Path

PINS_FILE = Path(__file__).with_name("trl_pins.json")


def resolve(qualified: str):
    """The function named `module.Class.method` (or `module.function`), e.g.
    `trl.trainer.grpo_trainer.GRPOTrainer._compute_loss`."""
    parts = qualified.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            obj = inspect.getattr_static(obj, name)
        return obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    raise ImportError(f"cannot import {qualified}")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def normalised_source(function) -> str:
    """The AST dump of `function`'s definition, docstrings removed (no line numbers, no comments)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    return ast.dump(_strip_docstrings(tree), include_attributes=False)


def fingerprint(function) -> str:
    return hashlib.sha256(normalised_source(function).encode()).hexdigest()


def parameters(function) -> list[tuple[str, str, str]]:
    """(name, kind, default) of each parameter of `function`; annotations do not count.

    >>> parameters(lambda self, *, tags=None: None)
    [('self', 'POSITIONAL_OR_KEYWORD', '<empty>'), ('tags', 'KEYWORD_ONLY', 'None')]
    """
    return [
        (p.name, p.kind.name, "<empty>" if p.default is p.empty else repr(p.default))
        for p in inspect.signature(function).parameters.values()
    ]


def load_pins() -> dict:
    return json.loads(PINS_FILE.read_text())


def write_pins() -> None:
    """Re-pin every method listed in `trl_pins.json` at the installed TRL version."""
    import trl

    pins = load_pins()
    pins["versions"] = {"trl": trl.__version__}
    for name, pin in pins["methods"].items():
        pin["sha256"] = fingerprint(resolve(name))
    PINS_FILE.write_text(json.dumps(pins, indent=1) + "\n")
    print(f"re-pinned {len(pins['methods'])} methods at trl {trl.__version__}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="re-pin after re-verifying (see above)")
    if parser.parse_args().write:
        write_pins()
    else:
        pins = load_pins()
        for name, pin in pins["methods"].items():
            print(("ok      " if fingerprint(resolve(name)) == pin["sha256"] else "CHANGED ") + name)
        for name, check in pins.get("signatures", {}).items():
            same = parameters(resolve(check["override"])) == parameters(resolve(name))
            print(("ok      " if same else "CHANGED ") + f"{name} (signature of {check['override']})")
