#!/usr/bin/env python3
"""Writes context sets over the real clips of ../shared/eval/real, laid out like
../shared/eval/context (cases.jsonl + audio/ID.wav), for `cargo bench --bench eval --
context` with CTXSCRIBE_EVAL_CONTEXT_DIR=OUT/<set>:

  fbai             the rows of librispeech_fbai_subset.tsv: dictionary = the row's
                   100-word biasing list (its rare words and distractors, Le et al. 2021);
                   terms = the rare words; distractors = the rest of the list; scored
                   in lower case.
  irrelevant       every clip; dictionary = another row's list minus this clip's
                   reference words, and unrelated messages: no term is spoken.
  irrelevant-1000  every clip; 1000 unrelated terms (every fbai list, topped up from
                   benches/ctxset/unrelated_terms.txt) minus the reference words.

score.py matches terms case-sensitively: the irrelevant sets list each distractor as
given and capitalised. Usage: make_sets.py CLIPS_DIR OUT_DIR.
"""
import csv
import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("CTXSCRIBE_SHARED", os.path.join(ROOT, "..", "shared"))
MESSAGES = [
    {"role": "system", "content": "The user dictates notes about the code they are editing."},
    {
        "role": "user",
        "content": "Editing billing_worker.py and invoice_export.ts; see docker-compose.yml. "
        "Functions: computeLateFees, syncLedgerBatch. Stack: Kubernetes, Grafana, "
        "PagerDuty, PostgreSQL, Redis.",
    },
]
MESSAGE_TERMS = [
    "billing_worker.py", "invoice_export.ts", "docker-compose.yml", "computeLateFees",
    "syncLedgerBatch", "Kubernetes", "Grafana", "PagerDuty", "PostgreSQL", "Redis",
]


def words(text):
    return {w.lower() for w in re.findall(r"[\w']+", text)}


def variants(terms):
    out = []
    for term in terms:
        for form in (term, term[:1].upper() + term[1:]):
            if form not in out:
                out.append(form)
    return out


def write_set(out_dir, name, cases, clips_dir):
    set_dir = os.path.join(out_dir, name)
    os.makedirs(os.path.join(set_dir, "audio"), exist_ok=True)
    with open(os.path.join(set_dir, "cases.jsonl"), "w", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps(case) + "\n")
            link = os.path.join(set_dir, "audio", case["id"] + ".wav")
            if not os.path.lexists(link):
                os.symlink(os.path.abspath(os.path.join(clips_dir, case["id"] + ".wav")), link)
    print(f"make_sets: {name}: {len(cases)} cases in {set_dir}")


def main(clips_dir, out_dir):
    real = os.path.join(SHARED, "eval", "real")
    manifest = list(csv.DictReader(open(os.path.join(real, "manifest.tsv"), encoding="utf-8"),
                                   delimiter="\t"))
    references = {row["id"]: row["reference"] for row in manifest}
    fbai = list(csv.DictReader(open(os.path.join(real, "librispeech_fbai_subset.tsv"),
                                    encoding="utf-8"), delimiter="\t"))
    lists = [json.loads(row["biasing_list_100"]) for row in fbai]

    # Half of these references are in capitals: the set is scored in lower case
    # (run.sh lowercases the hypotheses), like the rare-word lists themselves.
    cases = []
    for row, terms in zip(fbai, lists):
        reference = references[row["clip_id"]].lower()
        spoken = words(reference)
        cases.append({"id": row["clip_id"], "reference": reference,
                      "terms": json.loads(row["rare_words"]), "dictionary": terms,
                      "distractors": [t for t in terms if t.lower() not in spoken]})
    write_set(out_dir, "fbai", cases, clips_dir)

    unrelated = [line.strip() for line in open(
        os.path.join(ROOT, "benches", "ctxset", "unrelated_terms.txt"), encoding="utf-8")
        if line.strip()]
    pool = []
    for term in [t for terms in lists for t in terms] + unrelated:
        if term not in pool:
            pool.append(term)
    for name, pick in (("irrelevant", lambda i: lists[(i + 1) % len(lists)]),
                       ("irrelevant-1000", lambda i: pool)):
        cases = []
        for index, row in enumerate(manifest):
            spoken = words(row["reference"])
            terms = [t for t in pick(index) if t.lower() not in spoken][:1000]
            cases.append({"id": row["id"], "reference": row["reference"], "terms": [],
                          "messages": MESSAGES, "dictionary": terms,
                          "distractors": variants(terms + MESSAGE_TERMS)})
        write_set(out_dir, name, cases, clips_dir)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
