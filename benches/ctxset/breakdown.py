#!/usr/bin/env python3
"""Where a context set's errors are: term recall and WER per kind of voice, and the WER
of the words outside the terms (what no term edit can fix).

  breakdown.py CASES.jsonl LABEL=HYPS.jsonl [LABEL=HYPS.jsonl ...]

Scored with ../shared/eval/score.py's own normaliser and term test (its directory is
$CTXSCRIBE_SHARED/eval, default ../shared/eval beside the checkout). Each reference
word is aligned to the hypothesis (Levenshtein, as score.py counts WER); an error
"touches a term" when it substitutes or deletes one of a term's words in the reference,
or inserts next to one. "outside" is the WER of the errors that touch no term: a
transcript with every term right still has at least that WER. "union" counts a term
found when any of the hypotheses finds it. p50 / p90 are nearest-rank quantiles of
the hypotheses' `secs` (latency), when they have it. "extra" counts the context's
terms (said ones, dictionary and distractors) written more often than the reference
writes them: a term written where it was not said, which score.py's false insertions
(distractors only) do not see when the term is said elsewhere in the same file. "case"
counts the terms with a capital that a hypothesis writes only in another case
("przemysław" for `Przemysław`). Standard library only.
"""
import json
import math
import os
import re
import sys
from pathlib import Path

SHARED = Path(os.environ.get("CTXSCRIBE_SHARED", Path(__file__).resolve().parents[3] / "shared"))
sys.path.insert(0, str(SHARED / "eval"))
from score import has_term, load_hyps, norm_words  # noqa: E402


def load_secs(path):
    secs = {}
    for line in open(path, encoding="utf-8"):
        if line.strip():
            row = json.loads(line)
            if isinstance(row.get("secs"), (int, float)):
                secs[row["id"]] = float(row["secs"])
    return secs


def quantile(values, q):
    """Nearest rank, as the speed bench computes it; "-" without values."""
    if not values:
        return "-"
    values = sorted(values)
    return f"{values[min(len(values), max(1, math.ceil(q * len(values)))) - 1]:.2f}"


def alignment(ref, hyp):
    """(operation, reference index) for each edit of the Levenshtein alignment."""
    n, m = len(ref), len(hyp)
    d = [[i + j if i == 0 or j == 0 else 0 for j in range(m + 1)] for i in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]))
    ops, i, j = [], n, m
    while i > 0 or j > 0:
        if i > 0 and j > 0 and d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            if ref[i - 1] != hyp[j - 1]:
                ops.append(("sub", i - 1))
            i, j = i - 1, j - 1
        elif i > 0 and d[i][j] == d[i - 1][j] + 1:
            ops.append(("del", i - 1))
            i -= 1
        else:
            ops.append(("ins", i))  # before reference word i
            j -= 1
    return ops


def term_word_positions(ref, terms):
    positions = set()
    for term in terms:
        words = norm_words(term)
        for k in range(len(ref) - len(words) + 1):
            if words and ref[k : k + len(words)] == words:
                positions.update(range(k, k + len(words)))
    return positions


def errors(case, hyp):
    """(all errors, errors touching no term word, reference words)."""
    ref = norm_words(case["reference"])
    terms = term_word_positions(ref, case["terms"])
    total = outside = 0
    for op, i in alignment(ref, norm_words(hyp)):
        total += 1
        touches = i in terms if op != "ins" else (i in terms or i - 1 in terms)
        outside += not touches
    return total, outside, len(ref)


def occurrences(text, term):
    """How often `term` stands in `text`, not glued to word characters (score.py's test)."""
    return len(re.findall(r"(?<![\w])" + re.escape(term) + r"(?![\w])", text))


def extra_terms(case, hyp):
    """Occurrences of the case's terms in `hyp` beyond the reference's."""
    terms = set(case["terms"]) | set(case.get("dictionary", [])) | set(case.get("distractors", []))
    return sum(max(0, occurrences(hyp, t) - occurrences(case["reference"], t)) for t in terms)


def miscased_terms(case, hyp):
    """The case's terms with a capital that `hyp` writes only in another case."""
    return sum(
        1
        for t in case["terms"]
        if t != t.lower() and not has_term(hyp, t) and has_term(hyp.lower(), t.lower())
    )


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        sys.exit(__doc__)
    cases = [json.loads(line) for line in open(argv[1], encoding="utf-8") if line.strip()]
    runs = []
    for arg in argv[2:]:
        label, path = arg.split("=", 1)
        runs.append((label, load_hyps(path), load_secs(path)))
    groups = {}
    for case in cases:
        kind = case.get("voice", "?").split(":")[0]
        for key in (kind, "all"):
            groups.setdefault(key, []).append(case)
    header = f"{'voices':8} {'cases':>5} {'terms':>5}"
    for label, _, _ in runs:
        header += f"  {label + ' recall':>16} {'wer':>6} {'outside':>7} {'extra':>5} {'case':>4}"
        header += f" {'p50':>5} {'p90':>5}"
    if len(runs) > 1:
        header += f"  {'union recall':>12}"
    print(header)
    for kind, members in sorted(groups.items(), key=lambda kv: kv[0] == "all"):
        n_terms = sum(len(c["terms"]) for c in members)
        row = f"{kind:8} {len(members):5} {n_terms:5}"
        union = set()
        for _, hyps, secs in runs:
            found = errs = outside = words = extra = miscased = 0
            for c in members:
                hyp = hyps.get(c["id"], "")
                extra += extra_terms(c, hyp)
                miscased += miscased_terms(c, hyp)
                for k, term in enumerate(c["terms"]):
                    if has_term(hyp, term):
                        found += 1
                        union.add((c["id"], k))
                e, o, w = errors(c, hyp)
                errs, outside, words = errs + e, outside + o, words + w
            recall = found / max(1, n_terms)
            row += f"  {recall:16.3f} {errs / max(1, words):6.3f} {outside / max(1, words):7.3f}"
            row += f" {extra:5} {miscased:4}"
            times = [secs[c["id"]] for c in members if c["id"] in secs]
            row += f" {quantile(times, 0.5):>5} {quantile(times, 0.9):>5}"
        if len(runs) > 1:
            row += f"  {len(union) / max(1, n_terms):12.3f}"
        print(row)


if __name__ == "__main__":
    main(sys.argv)
