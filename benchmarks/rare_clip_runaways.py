"""How often did an arm with the rare clip (up_positive_min_prob 0.05) run away, over every committed record?

    python benchmarks/rare_clip_runaways.py benchmarks/results   # prints the count and each event; the docs quote it

Reads every `benchmarks/results/*/results.json` whose runs carry the collapse study's `runaway` flag (final entropy
more than 1 nat above its start: `toy_runs.is_runaway`), keeps the arms with the rare clip ("+ rare clip", "+ guard"
(the first study's name for it), "+ safe" (the rare clip and beta 0.05)), and counts runaways by distinct trajectory:
runs whose entropy and reward are equal at every logged step (the same run recorded in two folders, or an arm that
stayed bit-identical to another) are one event; each event also says whether plain UP of the same seed ran the same
trajectory (the rare clip never changed an update). Study B's p > 0 cells (and its replication's) are left out:
their verifier is wrong on purpose, so they are not the collapse study's setting (study_b_verifier/PREREGISTRATION.md
counts p = 0 only). Then the count per arm (the rare clip alone, "+ rare clip" and the first study's "+ guard"; or
"+ safe", the rare clip with beta 0.05) and per setting (task and updates per rollout batch), each a distinct count.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench import RESULTS_FILE, read_results

RARE_CLIP_ARMS = ("+ rare clip", "+ guard", "+ safe")


def rare_clip_runs(results: Path) -> list[dict]:
    """Every run recorded under `results` (the committed `benchmarks/results`) of an arm with the rare clip that the
    runaway rule was applied to, with its folder."""
    runs = []
    for path in sorted(results.glob(f"*/{RESULTS_FILE}")):
        report = json.loads(path.read_text())
        if not isinstance(report.get("runs"), list) or not any("runaway" in r for r in report["runs"]):
            continue
        report = read_results(path.parent) if "curve_keys" in report else report
        for run in report["runs"]:
            if run.get("noise") not in (None, 0, 0.0):  # a verifier wrong on purpose
                continue
            if "runaway" in run and any(arm in (run.get("config") or "") for arm in RARE_CLIP_ARMS):
                plain = next(  # plain UP of the same family, seed and level, in the same folder
                    (
                        r
                        for r in report["runs"]
                        if r.get("config") == run["config"].split(" + ")[0]
                        and all(r.get(k) == run.get(k) for k in ("seed", "level", "noise"))
                    ),
                    None,
                )
                same = plain is not None and trajectory(plain) == trajectory(run)
                runs.append({**run, "folder": path.parent.name, "same_as_plain_up": same})
    return runs


# The curves every study's records keep (others differ between studies: a rerun logging more is the same run).
TRAJECTORY_CURVES = ("entropy_curve", "reward_curve")


def trajectory(run: dict) -> str:
    """What identifies a run's trajectory: its entropy and reward at every logged step."""
    return json.dumps([run.get(key) for key in TRAJECTORY_CURVES])


def count(runs: list[dict]) -> dict:
    """Runs, distinct trajectories, and the runaway events (distinct trajectories that ran away), each with where."""
    by_trajectory: dict[str, list[dict]] = {}
    for run in runs:
        by_trajectory.setdefault(trajectory(run), []).append(run)
    events = [group for group in by_trajectory.values() if group[0]["runaway"]]
    return {"runs": len(runs), "trajectories": len(by_trajectory), "runaways": len(events), "events": events}


def setting(run: dict) -> tuple[str, str]:
    """(the arm: the rare clip alone or with the KL, the setting: task and updates per rollout batch) of a run."""
    arm = "rare clip + beta 0.05 (+ safe)" if run["config"].endswith("+ safe") else "rare clip alone"
    task = "SmolLM2" if "smollm2" in run["folder"] else "stress" if "stress" in run["folder"] else "toy"
    return arm, f"{task} {run.get('level') or 16}"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the folder of result folders: benchmarks/results")
    result = count(rare_clip_runs(parser.parse_args(argv).folder))
    print(
        f"arms with the rare clip: {result['runs']} committed runs, {result['trajectories']} distinct trajectories, "
        f"{result['runaways']} ran away"
    )
    for group in result["events"]:
        names = "; ".join(f"{r['folder']}: {r['config']}, seed {r['seed']}, level {r.get('level')}" for r in group)
        first = group[0]
        same = "the same trajectory as plain UP" if first["same_as_plain_up"] else "not plain UP's trajectory"
        print(f"- {names}: entropy {first['initial_entropy']:.2f} -> {first['final_entropy']:.2f} nats ({same})")
    runs = rare_clip_runs(parser.parse_args(argv).folder)
    print("\n| arm | setting | distinct runs | ran away |\n|---|---|---|---|")
    for key in sorted({setting(run) for run in runs}):
        part = count([run for run in runs if setting(run) == key])
        print(f"| {key[0]} | {key[1]} | {part['trajectories']} | {part['runaways']} |")
    for arm in sorted({setting(run)[0] for run in runs}):
        part = count([run for run in runs if setting(run)[0] == arm])
        print(f"| {arm} | all | {part['trajectories']} | {part['runaways']} |")
    return result


if __name__ == "__main__":
    main()
