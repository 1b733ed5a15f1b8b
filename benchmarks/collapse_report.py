"""The collapse study's report (benchmarks/collapse.py): the early warning replayed on recorded runs, the table per
config and level with paired differences, the pre-registered goal per guard, and the figure. Pure functions of the
run records; `collapse.py` runs, this module reads.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import bench
from bench import mean_std


def replay_warning(logs: list[dict], beta: float = 0.0) -> list | None:
    """[step, kind] where the early warning's rule (`collapse_warning.CollapseRule`, default settings) fires on these
    logs, or None: what the live callback (on by default) said, reconstructed from the logged metrics."""
    from up_trl.trainers.collapse_warning import CollapseRule

    rule = CollapseRule(beta=beta)  # as the callback: the dead state is watched only with beta = 0
    for log in logs:
        if not any(key.startswith("eval_") for key in log):
            rule.update(log["step"], log)
    return rule.fired and list(rule.fired[:2])


def write_report(out: Path, report: dict, kept_curves: tuple[str, ...] | None = None) -> None:
    """results.json with one record per run, and every curve of every run (or only those named in `kept_curves`) in
    curves.parquet beside it (`bench.write_results`: float32, null where a metric was not logged)."""
    import bench

    def flat(run):
        curves = {
            f"{key}_curve": points
            for key, points in run.get("curves", {}).items()
            if kept_curves is None or key in kept_curves
        }
        return {**{k: v for k, v in run.items() if k != "curves"}, **curves}

    bench.write_results(out, {**report, "runs": [flat(run) for run in report["runs"]]})


def read_report(out: Path) -> dict:
    """What `write_report` wrote, each run with its `curves` back (rounded to the 4 digits `collapse.judge` keeps); a
    results.json that still holds its curves inline reads as it is."""
    import bench

    report = bench.read_results(out)
    runs = []
    for run in report["runs"]:
        curves = {
            key.removesuffix("_curve"): [[s, round(v, 4)] for s, v in points]
            for key, points in run.items()
            if key.endswith("_curve") and points
        }
        record = {k: v for k, v in run.items() if not k.endswith("_curve")}
        runs.append({**record, "curves": curves} if curves else record)
    return {**report, "runs": runs}


def _forecast_entropy_drift(logs: list[dict]) -> int | None:
    """F1 (pre-registered, collapse.py): the first step s >= 20 where the mean entropy of steps s-9..s is more than
    0.5 nat above the initial entropy (steps 1-4)."""
    entropy = [(log["step"], log["entropy"]) for log in logs if "entropy" in log]
    initial = [v for s, v in entropy if s <= 4]
    if not initial:
        return None
    start = statistics.fmean(initial)
    for i, (step, _) in enumerate(entropy):
        window = [v for s, v in entropy[: i + 1] if s > step - 10]
        if step >= 20 and statistics.fmean(window) > start + 0.5:
            return step
    return None


def _forecast_negative_covariance(logs: list[dict]) -> int | None:
    """F2 (pre-registered, collapse.py): the first step s >= 20 where up/logp_adv_cov was below 0 at each of the
    last 20 logged steps."""
    cov = [(log["step"], log["up/logp_adv_cov"]) for log in logs if "up/logp_adv_cov" in log]
    for i in range(19, len(cov)):
        if cov[i][0] >= 20 and all(v < 0 for _, v in cov[i - 19 : i + 1]):
            return cov[i][0]
    return None


FORECASTS = {"entropy drift": _forecast_entropy_drift, "negative covariance": _forecast_negative_covariance}


def forecast_report(runs: list[dict]) -> dict:
    """Each pre-registered forecast (FORECASTS) on recorded runs: on failing runs (collapsed or runaway) whether it
    fired before the event and by how many steps; on healthy runs, its false alarms."""
    out = {}
    for name, forecast in FORECASTS.items():
        leads, missed, alarms, healthy = [], 0, 0, 0
        for run in runs:
            fired = forecast(curve_logs(run))
            if run["collapsed"] or run["runaway"]:
                event = (run["accuracy_fell_at"] if run["collapsed"] else None) or run["entropy_ran_away_at"]
                if fired is None or event is None or fired > event:
                    missed += 1
                else:
                    leads.append(event - fired)
            else:
                healthy += 1
                alarms += fired is not None
        out[name] = {
            "failing_runs": len(leads) + missed,
            "fired_before_event": len(leads),
            "lead_steps_median": statistics.median(leads) if leads else None,
            "healthy_runs": healthy,
            "false_alarms": alarms,
        }
    return out


def distinct_failures(runs: list[dict]) -> list[dict]:
    """The failing runs (collapsed or runaway) grouped into distinct trajectories: arms of one seed, level and family
    whose entropy curves are identical at every logged step (a guard that never changed a gradient follows plain UP
    exactly) are one event, not several. Each group: seed, level, family, its configs, what it was, and whether the
    dead-state rule fired on it (at which step)."""
    from up_trl.trainers.collapse_warning import CollapseRule

    groups: dict[tuple, dict] = {}
    for run in runs:
        if not (run["collapsed"] or run["runaway"]):
            continue
        family = run["config"].split(" + ")[0].removeprefix("UP-")
        entropy = tuple(tuple(point) for point in run["curves"]["entropy"])
        group = groups.setdefault(
            (run["seed"], run["level"], family, entropy),
            {
                "seed": run["seed"],
                "level": run["level"],
                "family": family,
                "configs": [],
                "collapsed": run["collapsed"],
                "runaway": run["runaway"],
                "dead_state_at": None,
            },
        )
        group["configs"].append(run["config"])
        rule = CollapseRule(beta=run.get("beta", 0.0))
        for log in curve_logs(run):
            rule.update(log["step"], log)
        if rule.fired and rule.fired[1] == "dead state":
            group["dead_state_at"] = rule.fired[0]
    return list(groups.values())


def curve_logs(run: dict) -> list[dict]:
    """A recorded run's curves as the log dicts the Trainer passed to its callbacks, step by step (rounded values)."""
    by_step: dict[int, dict] = {}
    for key, points in run["curves"].items():
        for step, value in points:
            by_step.setdefault(step, {"step": step})[key] = value
    return [by_step[step] for step in sorted(by_step)]


def warning_report(runs: list[dict], **rule_settings) -> dict:
    """The early warning's rule replayed on recorded runs: on each collapsed or runaway run, whether and at which
    step it fires against the step where accuracy fell for good / entropy passed initial + 1 nat for good; on the
    healthy runs (neither), how many false alarms. `rule_settings` go to `collapse_warning.CollapseRule`."""
    from up_trl.trainers.collapse_warning import CollapseRule

    rows, alarms, healthy = [], [], 0
    for run in runs:
        rule = CollapseRule(**{"beta": run.get("beta", 0.0), **rule_settings})
        for log in curve_logs(run):
            rule.update(log["step"], log)
        fired = rule.fired and rule.fired[0]
        if run["collapsed"] or run["runaway"]:
            event = run["accuracy_fell_at"] if run["collapsed"] and run["accuracy_fell_at"] else None
            event = event or run["entropy_ran_away_at"]
            rows.append(
                {
                    "config": run["config"],
                    "seed": run["seed"],
                    "level": run["level"],
                    "collapsed": run["collapsed"],
                    "runaway": run["runaway"],
                    "warned_at": fired,
                    "event_at": event,
                    "accuracy_fell_at": run["accuracy_fell_at"],
                    "entropy_ran_away_at": run["entropy_ran_away_at"],
                }
            )
        else:
            healthy += 1
            if fired:
                alarms.append(
                    {
                        "config": run["config"],
                        "seed": run["seed"],
                        "level": run["level"],
                        "warned_at": fired,
                        "final_entropy": run["final_entropy"],
                        "initial_entropy": run["initial_entropy"],
                    }
                )
    return {
        "rule": rule_settings or "defaults",
        "failing_runs": len(rows),
        "warned": sum(r["warned_at"] is not None for r in rows),
        "warned_before_or_at_event": sum(
            r["warned_at"] is not None and r["event_at"] is not None and r["warned_at"] <= r["event_at"] for r in rows
        ),
        "healthy_runs": healthy,
        "false_alarms": len(alarms),
        "per_failing_run": rows,
        "false_alarm_runs": alarms,
    }


def summarise(runs: list[dict], order: list[str]) -> list[dict]:
    """Per (level, config): runs, collapsed, runaway, final accuracy and entropy mean ± std; against its parent and
    UP (same family, same seeds): the paired mean difference in final accuracy ± 2 standard errors, won/lost.
    Configs come in the order of `order` (collapse.py's config table)."""
    rows = []
    for level in sorted({r["level"] for r in runs}):
        for name in [c for c in order if any(r["config"] == c and r["level"] == level for r in runs)]:
            mine = {r["seed"]: r for r in runs if r["config"] == name and r["level"] == level}
            acc, ent = (
                mean_std([r["final_accuracy"] for r in mine.values()]),
                mean_std([r["final_entropy"] for r in mine.values()]),
            )
            row = {
                "config": name,
                "level": level,
                "runs": len(mine),
                "collapsed": sum(r["collapsed"] for r in mine.values()),
                "runaway": sum(r["runaway"] for r in mine.values()),
                "warned_live": sum(bool(r.get("warning")) for r in mine.values()),
                "warned": sum(replay_warning(curve_logs(r), r.get("beta", 0.0)) is not None for r in mine.values()),
                "final_accuracy_mean": acc[0],
                "final_accuracy_std": acc[1],
                "final_entropy_mean": ent[0],
                "final_entropy_std": ent[1],
            }
            family = name.split(" + ")[0].removeprefix("UP-")
            for role, other in (("vs_parent", family), ("vs_up", f"UP-{family}")):
                theirs = {r["seed"]: r for r in runs if r["config"] == other and r["level"] == level}
                paired = sorted(set(mine) & set(theirs))
                if other == name or not paired:
                    continue
                diffs = [mine[s]["final_accuracy"] - theirs[s]["final_accuracy"] for s in paired]
                mean, std = mean_std(diffs)
                row[role] = {
                    "seeds": len(paired),
                    "mean": mean,
                    "two_se": 2 * std / len(paired) ** 0.5,
                    "won": sum(d > 0 for d in diffs),
                    "lost": sum(d < 0 for d in diffs),
                }
            rows.append(row)
    return rows


# A guard that also changes a TRL setting is held to the parent with that setting too (PRE-REGISTRATION 2).
PARENT_TWINS = {"safe": "beta 0.05"}
KINDS = ("collapsed", "runaway")  # the failures the goal counts


def goal(rows: list[dict], wins: list[tuple[str, int]], runs: list[dict], twins: dict | None = None) -> dict:
    """The pre-registered goal, per guard: at every level and family measured, collapsed <= the parent's and runaway
    <= the parent's, counted on the seeds both ran (an arm run on fewer seeds is not held to a parent's extra ones);
    at the `wins` (family, level) where UP beat its parent, the paired difference guard - UP not below -2 standard
    errors. Returns, per guard, whether it met the goal and where it failed. `twins`: the parent twin a guard that
    sets a TRL setting is held to as well (default `PARENT_TWINS`)."""
    twins = PARENT_TWINS if twins is None else twins
    by = {(r["config"], r["level"]): r for r in rows}
    guards = sorted(
        {r["config"].split(" + ", 1)[1] for r in rows if " + " in r["config"] and r["config"].startswith("UP-")}
    )
    out = {}
    for guard in guards:
        failures = []
        for (config, level), row in by.items():
            if not config.endswith(f" + {guard}") or not config.startswith("UP-"):  # the guards of UP, not a parent's
                continue
            family = config.split(" + ")[0].removeprefix("UP-")
            others = [family] + ([f"{family} + {twins[guard]}"] if guard in twins else [])
            for other in others:  # the parent, and the parent with the TRL setting the guard changes
                if (other, level) not in by:
                    continue
                seeds, counts = paired_failures(runs, config, other, level)
                if not seeds:  # nothing to compare is not a pass
                    failures.append(f"{config} @ {level}: no seed in common with {other}: not measured")
                for key, (mine, theirs) in counts.items():
                    if mine > theirs:
                        failures.append(
                            f"{config} @ {level}: {key} {mine} > {other}'s {theirs} ({seeds} paired seeds)"
                        )
            up_row = by.get((f"UP-{family}", level))
            if (family, level) in wins and "vs_up" in row and up_row is not None:
                if row["vs_up"]["mean"] < -row["vs_up"]["two_se"]:
                    failures.append(
                        f"{config} @ {level}: accuracy {row['vs_up']['mean']:+.3f} vs UP "
                        f"(2 SE {row['vs_up']['two_se']:.3f}): UP's win not kept"
                    )
        out[guard] = {"met": not failures, "failures": failures}
    return out


def paired_failures(runs: list[dict], config: str, other: str, level: int) -> tuple[int, dict]:
    """(number of seeds both ran, {"collapsed": (config's, other's), "runaway": (...)}) over those seeds."""
    mine = {r["seed"]: r for r in runs if r["config"] == config and r["level"] == level}
    theirs = {r["seed"]: r for r in runs if r["config"] == other and r["level"] == level}
    seeds = sorted(set(mine) & set(theirs))
    counts = {key: (sum(mine[s][key] for s in seeds), sum(theirs[s][key] for s in seeds)) for key in KINDS}
    return len(seeds), counts


def measured_wins(rows: list[dict]) -> list[tuple[str, int]]:
    """(family, level) where UP beat its parent: paired mean difference above 2 standard errors."""
    return [
        (r["config"].removeprefix("UP-"), r["level"])
        for r in rows
        if r["config"].startswith("UP-")
        and " + " not in r["config"]
        and "vs_parent" in r
        and r["vs_parent"]["mean"] > r["vs_parent"]["two_se"]
    ]


def markdown(rows: list[dict], header: str) -> str:
    def pm(mean, std, digits=3):
        return "n/a" if mean is None else f"{mean:.{digits}f} ± {std:.{digits}f}"

    def paired(d):
        return "" if d is None else f"{d['mean']:+.3f} ± {d['two_se']:.3f} ({d['won']}/{d['lost']})"

    lines = [
        header,
        "",
        "| config | updates per rollout | runs | collapsed | entropy runaway | warned (live) "
        "| warned "
        "| final accuracy | final entropy | vs parent: paired diff ± 2 SE (won/lost) "
        "| vs UP: paired diff ± 2 SE (won/lost) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['level']} | {r['runs']} | {r['collapsed']} | {r['runaway']} | {r['warned_live']} | "
            f"{r['warned']} | "
            f"{pm(r['final_accuracy_mean'], r['final_accuracy_std'])} | "
            f"{pm(r['final_entropy_mean'], r['final_entropy_std'], 2)} | {paired(r.get('vs_parent'))} | "
            f"{paired(r.get('vs_up'))} |"
        )
    return "\n".join(lines) + "\n"


def plot(runs: list[dict], path: Path, title: str, order: list[str]) -> None:
    """Per level and family: mean entropy curve of each config (top) and final accuracy per seed (bottom)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(r["level"], r["config"].split(" + ")[0].removeprefix("UP-")) for r in runs})
    fig, axes = plt.subplots(2, len(panels), figsize=(4.6 * len(panels), 7), squeeze=False)
    for col, (level, family) in enumerate(panels):
        names = [
            c
            for c in order
            if c.split(" + ")[0].removeprefix("UP-") == family
            and any(r["config"] == c and r["level"] == level for r in runs)
        ]
        for k, name in enumerate(names):
            mine = [r for r in runs if r["config"] == name and r["level"] == level]
            curves = [dict(map(tuple, r["curves"]["entropy"])) for r in mine]
            steps = sorted(set.intersection(*(set(c) for c in curves)))
            axes[0][col].plot(steps, [statistics.fmean(c[s] for c in curves) for s in steps], lw=1, label=name)
            finals = [r["final_accuracy"] for r in mine]
            axes[1][col].scatter([k] * len(finals), finals, s=10, alpha=0.6)
            axes[1][col].hlines(statistics.fmean(finals), k - 0.3, k + 0.3, color="black")
            crashed = [r["final_accuracy"] for r in mine if r["collapsed"]]
            axes[1][col].scatter([k] * len(crashed), crashed, s=40, facecolors="none", edgecolors="red")
        axes[0][col].set_title(f"{family}, {level} updates per rollout")
        axes[0][col].set_ylabel("entropy (mean over seeds)")
        axes[0][col].set_xlabel("optimizer step")
        axes[0][col].legend(fontsize=6)
        axes[1][col].set_xticks(
            range(len(names)), [n.replace(f"UP-{family}", "UP") for n in names], rotation=30, ha="right", fontsize=7
        )
        axes[1][col].set_ylabel("final true accuracy (red ring: collapsed)")
        for ax in axes[:, col]:
            ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    bench.save_png(fig, path, dpi=90)
    plt.close(fig)
