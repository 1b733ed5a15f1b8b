"""The pre-registered measures of a real-model study (benchmarks/results/real_model_powered/PREREGISTRATION.md) from
what benchmarks/real_model.py wrote: the paired difference in held-out avg@k with its 2-SE interval and won / lost,
pass@4 the same way, the optimizer steps UP needs to reach its parent's final training reward (censored at the last
step), final entropy, failures by the collapse rules, the sentence the README carries, and a plot of the paired
differences per seed.

    python benchmarks/real_model_report.py benchmarks/results/real_model_powered

Writes report.json, report.md and paired.png beside the results; prints report.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from bench import read_results, save_png
from real_model_runs import config_name

# How a README sentence names the arithmetic task trained on (benchmarks/real_model.py --arithmetic_ops).
TASK_WORDS = {"add": "sums", "sub": "differences", "mul": "1-digit x 2-digit products", "mul1": "the times table"}

REACH_WINDOW = 4  # an arm reaches a reward at the first step where the mean of its last 4 logged rewards is >= it


def paired(values: list[float]) -> dict:
    """Mean, SD, SE, the 2-SE interval and won / lost / tied of paired differences."""
    n = len(values)
    mean = statistics.fmean(values) if n else None
    sd = statistics.stdev(values) if n > 1 else None
    se = sd / n**0.5 if sd is not None else None
    return {
        "n": n,
        "mean": mean,
        "sd": sd,
        "two_se": None if se is None else 2 * se,
        "won": sum(v > 0 for v in values),
        "lost": sum(v < 0 for v in values),
        "tied": sum(v == 0 for v in values),
    }


def reached_at(curve: list[list[float]], target: float, window: int = REACH_WINDOW) -> int | None:
    """The first logged step where the mean of the last `window` logged values is at least `target` (to 1e-6:
    the curves are stored in float32, the final reward in float64)."""
    for i in range(len(curve)):
        last = [v for _, v in curve[max(0, i - window + 1) : i + 1]]
        if statistics.fmean(last) >= target - 1e-6:
            return curve[i][0]
    return None


def sentence(pair: str, primary: dict, k: int, problems: int, seeds: int, settings: dict | None = None) -> str:
    """The README's sentence for the outcome (PREREGISTRATION.md, "What the README will say"); `settings` (the
    results' own) name the task, the reuse and UP's config (default: the powered study's sums, 8 updates, UP-pair)."""
    s = settings or {}
    d, two_se = primary["mean"], primary["two_se"]
    task = " and ".join(TASK_WORDS.get(op, op) for op in s.get("arithmetic_ops", ["add"]))
    updates = s.get("steps_per_generation", 4) * s.get("num_iterations", 2)
    up = config_name(pair, "asymmetric", s)
    where = f"On SmolLM2-135M-Instruct ({task}, {seeds} paired seeds, {updates} updates per rollout batch)"
    numbers = f"avg@{k} {d:+.3f} (2 SE ±{two_se:.3f})"
    if d - two_se > 0:
        said = (
            f"{where}, {up} scored higher than {pair} on {problems} held-out problems: {numbers}, higher on "
            f"{primary['won']} of {seeds} seeds."
        )
    elif d + two_se < 0:
        said = (
            f"{where}, {up} scored lower than {pair} on {problems} held-out problems: {numbers}, lower on "
            f"{primary['lost']} of {seeds} seeds."
        )
    else:
        said = (
            f"{where}, no difference between {up} and {pair} was detected on {problems} held-out problems: "
            f"{numbers}, higher on {primary['won']} of {seeds} seeds; these seeds could detect a difference of "
            f"about {two_se:.3f}."
        )
    return (
        said
        + " One tiny model, an easy task, CPU scale: this does not say what UP does on larger models or "
        + ("harder tasks.")
    )


def study(results: dict) -> dict:
    s = results["settings"]
    k, pass_k = s["k"], s.get("pass_k") or s["k"]
    avg, pas = f"avg@{k}", f"pass@{pass_k}"
    runs = {(r["config"], r["seed"]): r for r in results["runs"]}
    out = {"settings": {key: s[key] for key in ("benchmark_limit", "k", "max_steps", "seeds")}, "pairs": {}}
    before = results.get("before") or {}
    for pair in results["pairs"]:
        up_config = config_name(pair, "asymmetric", s)
        seeds = sorted(seed for (c, seed) in runs if c == pair and (up_config, seed) in runs)
        per_seed, ratios = [], []
        for seed in seeds:
            parent, up = runs[(pair, seed)], runs[(up_config, seed)]
            target = parent["final_reward"]
            steps = {arm: reached_at(r["reward_curve"], target) for arm, r in (("parent", parent), ("up", up))}
            ratio = None if steps["up"] is None or not steps["parent"] else steps["up"] / steps["parent"]
            ratios.append(ratio)
            per_seed.append(
                {
                    "seed": seed,
                    avg: {"parent": parent["after"][avg], "up": up["after"][avg]},
                    pas: {"parent": parent["after"][pas], "up": up["after"][pas]},
                    "parent_final_reward": target,
                    "steps_to_parent_final_reward": steps,
                    "steps_ratio": ratio,
                    "final_entropy": {"parent": parent["final_entropy"], "up": up["final_entropy"]},
                }
            )
        finite = sorted(r for r in ratios if r is not None)
        failures = {
            arm: {kind: sum(bool(runs[(c, seed)][kind]) for seed in seeds) for kind in ("collapsed", "runaway")}
            for arm, c in (("parent", pair), ("up", up_config))
        }
        # Each arm against the base model (scored once, on the same problems and sampling seed): mean gain, 2 SE.
        vs_base = {
            arm: paired([r[avg][arm] - before[avg] for r in per_seed]) if avg in before else None
            for arm in ("parent", "up")
        }
        primary = paired([r[avg]["up"] - r[avg]["parent"] for r in per_seed])
        out["pairs"][pair] = {
            "up_config": up_config,
            "seeds": seeds,
            "primary": {"measure": avg, **primary},
            "secondary": {
                pas: paired([r[pas]["up"] - r[pas]["parent"] for r in per_seed]),
                "steps_ratio": {
                    "median_of_reached": statistics.median(finite) if finite else None,
                    "reached": len(finite),
                    "censored": len(ratios) - len(finite),
                    "note": f"UP's steps / the parent's to reach the parent's final training reward "
                    f"(mean of {REACH_WINDOW} logged rewards); censored: never within "
                    f"{s['max_steps']} steps",
                },
                "final_entropy": {
                    arm: statistics.fmean(r["final_entropy"][arm] for r in per_seed) for arm in ("parent", "up")
                },
                "failures": failures,
                "vs_base": {"base": before.get(avg), **vs_base},
            },
            "per_seed": per_seed,
            "readme": sentence(pair, primary, k, before.get("problems", s["benchmark_limit"]), len(seeds), s),
        }
    return out


def markdown(report: dict, results: dict) -> str:
    lines = [
        f"Commit(s): {', '.join(sorted({str(r.get('commit')) for r in results['runs']}))}; machine: "
        f"{results['machine']}; wall {results['wall_minutes']} min.",
        "",
    ]
    for pair, row in report["pairs"].items():
        p, avg, up = row["primary"], row["primary"]["measure"], row.get("up_config", f"UP-{pair}")
        pas = next(key for key in row["secondary"] if key.startswith("pass@"))
        q, steps = row["secondary"][pas], row["secondary"]["steps_ratio"]
        lines += [
            f"### {pair} vs {up}",
            "",
            f"| seed | {pair} {avg} | {up} {avg} | UP - parent | {pair} {pas} | {up} {pas} | steps UP / parent |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in row["per_seed"]:
            ratio = "censored" if r["steps_ratio"] is None else f"{r['steps_ratio']:.2f}"
            d = r[avg]["up"] - r[avg]["parent"]
            lines.append(
                f"| {r['seed']} | {r[avg]['parent']:.3f} | {r[avg]['up']:.3f} | {d:+.3f} "
                f"| {r[pas]['parent']:.3f} | {r[pas]['up']:.3f} | {ratio} |"
            )
        failures = row["secondary"]["failures"]
        lines += [
            "",
            f"Primary, {avg}: UP - {pair} = {p['mean']:+.3f} ± {p['two_se']:.3f} (2 SE; SD {p['sd']:.3f}, "
            f"{p['n']} seeds), won {p['won']}, lost {p['lost']}, tied {p['tied']}.",
            f"Secondary: {pas} {q['mean']:+.3f} ± {q['two_se']:.3f} (won {q['won']}, lost {q['lost']}); steps to the "
            f"parent's final training reward, UP / parent: median {steps['median_of_reached']} over "
            f"{steps['reached']} seeds, {steps['censored']} censored; final entropy "
            f"{row['secondary']['final_entropy']['parent']:.3f} ({pair}) and "
            f"{row['secondary']['final_entropy']['up']:.3f} ({up}); failures {failures}.",
            *vs_base_line(row["secondary"].get("vs_base"), pair, up, avg),
            "",
            f"README: {row['readme']}",
            "",
        ]
    return "\n".join(lines)


def vs_base_line(vs_base: dict | None, pair: str, up: str, avg: str) -> list[str]:
    """Each arm's mean gain over the base model, as a line of report.md (none where the base was not scored)."""
    if not vs_base or vs_base.get("parent") is None:
        return []
    gains = [
        f"{name} {vs_base[arm]['mean']:+.3f} ± {vs_base[arm]['two_se']:.3f}"
        for arm, name in (("parent", pair), ("up", up))
        if vs_base[arm]["two_se"] is not None
    ]
    return [f"Against the base model ({avg} {vs_base['base']:.3f}), mean gain ± 2 SE: {', '.join(gains)}."]


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = list(report["pairs"])
    fig, axes = plt.subplots(1, len(pairs), figsize=(5.5 * len(pairs), 3.6), squeeze=False)
    for ax, pair in zip(axes[0], pairs):
        row = report["pairs"][pair]
        avg = row["primary"]["measure"]
        seeds = [r["seed"] for r in row["per_seed"]]
        diffs = [r[avg]["up"] - r[avg]["parent"] for r in row["per_seed"]]
        ax.bar([str(s) for s in seeds], diffs, color=["tab:red" if d > 0 else "tab:blue" for d in diffs])
        mean, two_se = row["primary"]["mean"], row["primary"]["two_se"]
        ax.axhline(0, color="black", lw=0.8)
        ax.axhspan(mean - two_se, mean + two_se, color="grey", alpha=0.25, label=f"mean ± 2 SE ({mean:+.3f})")
        ax.set_title(f"{row.get('up_config', f'UP-{pair}')} minus {pair}, held-out {avg}, per seed")
        ax.set_xlabel("paired seed")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="a benchmarks/real_model.py --output_dir")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    results = read_results(folder)
    report = study(results)
    report["command"] = "python benchmarks/real_model_report.py " + " ".join(sys.argv[1:] if argv is None else argv)
    (folder / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    text = markdown(report, results)
    (folder / "report.md").write_text(text + "\n")
    plot(report, folder / "paired.png")
    print(text)
    return report


if __name__ == "__main__":
    main()
