"""The recipes (`--config`) and accelerate configs (`--accelerate_config`, as TRL ships its own) in the package, by
name: a value naming an existing file is that file, else a packaged name (with or without `.yaml`). The accelerate
configs live once, in `configs/accelerate/` (docs/maintaining.md, "Where the configs live").

    >>> Path(recipe_path("up_dapo")).name, Path(accelerate_config_path("zero3")).name
    ('up_dapo.yaml', 'zero3.yaml')
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

OFFLINE_DEFAULT_RECIPE = "quickstart"  # what `up-trl train` runs with no --config
PACKAGE = Path(str(resources.files("up_trl")))  # `recipes/` and `accelerate_configs/` are in it


class CatalogError(ValueError):
    """A name that is neither an existing file nor a packaged recipe or accelerate config."""


def _names(kind: str) -> list[str]:
    return sorted(path.stem for path in (PACKAGE / kind).glob("*.yaml"))


def recipe_names() -> list[str]:
    """The packaged recipes, by name (`up_dapo`, `dapo`, `quickstart`, ...)."""
    return _names("recipes")


def accelerate_config_names() -> list[str]:
    """The packaged accelerate configs, by name (`single_gpu`, `multi_gpu`, `zero3`, ...)."""
    return _names("accelerate_configs")


def _resolve(value: str, kind: str, what: str) -> str:
    if Path(value).expanduser().is_file():
        return str(Path(value).expanduser())
    name = Path(value).name.removesuffix(".yaml")
    packaged = PACKAGE / kind / f"{name}.yaml"
    if Path(value).name == value and packaged.is_file():  # a name (with or without .yaml), not a missing path
        return str(packaged)
    raise CatalogError(f"{value}: no such file, and no packaged {what} of that name ({', '.join(_names(kind))}).")


def recipe_path(value: str) -> str:
    """The recipe file `value` names: an existing file, else the packaged recipe of that name."""
    return _resolve(value, "recipes", "recipe")


def describe_recipe(name: str) -> str:
    """One line saying what a packaged recipe trains: objective, model, data, trainer (and its baseline twin).

    >>> describe_recipe("up_gspo")
    'UP-GSPO: Qwen/Qwen3-30B-A3B-Base on dapo-math-17k (twin: gspo)'
    """
    import yaml

    from ..trainers.names import objective_name, with_up

    recipe = yaml.safe_load(Path(recipe_path(name)).read_text())
    up_mode = "off" if recipe.get("up_mode") is False else recipe.get("up_mode", "asymmetric")
    if (trainer := recipe.get("trainer", "grpo")) == "grpo":
        level = recipe.get("importance_sampling_level", "token")
        objective = objective_name(recipe.get("loss_type", "dapo"), level, up_mode)
    else:
        objective = with_up({"rloo": "RLOO", "async_grpo": "GRPO (async)"}.get(trainer, trainer), up_mode)
    model = recipe.get("model_name_or_path") or "SmolLM2-135M-Instruct (offline)"
    line = f"{objective}: {model} on {recipe.get('dataset_name', 'arithmetic')}"
    twin = name.removeprefix("up_") if name.startswith("up_") else f"up_{name}"
    if twin in recipe_names():
        line += f" (twin: {twin})"
    return line + (", CPU" if recipe.get("use_cpu") else "")


def accelerate_config_path(value: str) -> str:
    """The accelerate config `value` names: an existing file, else the packaged config of that name, else TRL's
    (`zero1`, `fsdp1`: what `trl grpo --accelerate_config` finds there)."""
    try:
        return _resolve(value, "accelerate_configs", "accelerate config")
    except CatalogError as error:
        theirs = Path(str(resources.files("trl"))) / "accelerate_configs" / f"{value.removesuffix('.yaml')}.yaml"
        if Path(value).name == value and theirs.is_file():
            return str(theirs)
        names = sorted(path.stem for path in theirs.parent.glob("*.yaml"))
        raise CatalogError(f"{str(error).removesuffix('.')}; TRL's: {', '.join(names)}.") from None
