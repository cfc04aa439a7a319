"""How far each shipped support judge holds on claims over corpora it was not tuned on: the cross-corpus table.

For each judge, `ragsweep.judging.calibration.calibrate.cross_corpus` on the two shipped claims sets: the sotu
claims (State of the Union speeches) and the chroma_general claims (finance, pubmed and wikitexts
passages, resolved from ../shared/data/chroma_general/corpora). Every fitted choice (threshold, the
ensemble's weights) is fitted on one set and measured on the other, both ways; the lower held-out AUC is
the figure a judge's YAML keeps as `auc`. In-sample figures are printed apart. The trained judge (and the
ensemble's trained member) learns from both sets' passages, never their labels. `nli` is left out: no NLI
model installs here.

`--smallest` (what `make test` runs): the lexical judge on the first 8 claims of each set (--judges lexical
--limit 8, unless given); the chroma_general claims still read their passages from ../shared/data.

Usage: python benchmarks/judges.py [--judges lexical,embedding,...] [--limit N] [--out FILE.json] [--smallest]
       [judge.key=value ...]   (overrides apply to every judge listed)

Run it alone on the machine: the llm and likelihood judges run llama.cpp, whose threads spin.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import ragsweep  # noqa: F401  (offline defaults)

ROOT = Path(__file__).resolve().parents[1]
JUDGES = ("lexical", "embedding", "likelihood", "trained", "trained_mpnet", "llm", "ensemble")
MODEL = {"llm": ["judge/generator=llama_cpp"]}  # as its `auc` was measured (its default model is transformers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judges", default=None, help="comma-separated options of conf/judge/ (default: all)")
    parser.add_argument("--limit", type=int, default=None, help="judge only the first N claims of each set")
    parser.add_argument("--smallest", action="store_true", help="--judges lexical --limit 8 (make test runs it)")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data", help="paths.data")
    parser.add_argument("--out", type=Path, default=None, help="write every figure as JSON here")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    if args.smallest:
        args.judges, args.limit = args.judges or "lexical", args.limit or 8
    args.judges = args.judges or ",".join(JUDGES)

    from ragsweep.judging.calibration.calibrate import cross_corpus
    from ragsweep.judging.calibration.labelled_claims import (HELDOUT_DOCUMENTS, default_claims, heldout_claims,
                                                              load_claims)
    from ragsweep.runner.standalone_judges import build_judge

    sets = [("sotu", load_claims(default_claims())),
            ("chroma_general", load_claims(heldout_claims(), args.data / HELDOUT_DOCUMENTS))]
    print(f"claims: sotu {len(sets[0][1])}, chroma_general {len(sets[1][1])}"
          + (f" (first {args.limit} of each)" if args.limit else ""))
    rows = []
    for name in args.judges.split(","):
        started = time.perf_counter()
        overrides = [*MODEL.get(name, []), *args.overrides]
        judge, config = build_judge(ROOT / "conf", name, overrides, [c for _, claims in sets for c in claims])
        chosen = [(label, claims[: args.limit]) for label, claims in sets]
        result = cross_corpus(judge, chosen, name, config)
        first, second = result.held_out
        rows.append({"judge": name, "heldout_auc": result.auc,
                     "sotu_to_chroma": {"auc": first.auc, "balanced_accuracy": first.balanced_accuracy,
                                        "threshold": first.threshold},
                     "chroma_to_sotu": {"auc": second.auc, "balanced_accuracy": second.balanced_accuracy,
                                        "threshold": second.threshold},
                     "in_sample": {label: {"auc": c.auc, "balanced_accuracy": c.balanced_accuracy,
                                           "threshold": c.threshold, "failures": c.failures,
                                           "seconds_per_claim": c.seconds_per_claim}
                                   for (label, _), c in zip(chosen, result.in_sample, strict=True)},
                     "minutes": (time.perf_counter() - started) / 60})
        print(_row(rows[-1]), flush=True)
    print("\n| judge | AUC sotu→chroma | bal. acc. | AUC chroma→sotu | bal. acc. | held-out AUC (lower) | "
          "in-sample AUC sotu / chroma | s/claim | minutes |\n|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(_row(row))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


def _row(row: dict) -> str:
    a, b, inside = row["sotu_to_chroma"], row["chroma_to_sotu"], row["in_sample"]
    return (f"| {row['judge']} | {a['auc']:.3f} | {a['balanced_accuracy']:.3f} | {b['auc']:.3f} | "
            f"{b['balanced_accuracy']:.3f} | **{row['heldout_auc']:.3f}** | {inside['sotu']['auc']:.3f} / "
            f"{inside['chroma_general']['auc']:.3f} | {inside['chroma_general']['seconds_per_claim']:.3g} | "
            f"{row['minutes']:.1f} |")


if __name__ == "__main__":
    main()
