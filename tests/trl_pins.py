"""What the UP trainers rely on in TRL and transformers (`trl_pins.json`): `methods` pinned whole (the SHA-256 of
their AST without docstrings), `behaviours` held by named tests, `signatures` our overrides must accept. When TRL
changes a pinned method: read its diff against the reason, run tests/test_trainer_gradients.py, test_rloo.py,
test_async_grpo.py, test_off_is_parent.py and test_resume.py, then re-pin: `python tests/trl_pins.py --write`."""

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
    """The function named `module.Class.method` (or `module.function`)."""
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
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body:
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
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
    found = inspect.signature(function).parameters.values()
    return [(p.name, p.kind.name, "<empty>" if p.default is p.empty else repr(p.default)) for p in found]


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
