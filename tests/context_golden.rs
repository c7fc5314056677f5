//! Golden files for the pure context functions: term mining with spoken forms, prompt
//! rendering and post-correction, on fixed inputs. A change of behaviour shows up as a
//! diff of tests/golden/*.json; after checking it, regenerate with
//! `CTXSCRIBE_UPDATE_GOLDEN=1 cargo test --release --test context_golden`.

use std::path::PathBuf;

use ctxscribe::context::prompt::{estimate_tokens, render_prompt};
use ctxscribe::context::{ContextTerms, Dictionary, Message};
use ctxscribe::correction::Corrector;
use serde_json::{Value, json};

/// One request context and transcripts to correct against it.
struct Example {
    name: &'static str,
    messages: &'static [&'static str],
    dictionary: &'static [&'static str],
    transcripts: &'static [&'static str],
}

const EXAMPLES: &[Example] = &[
    Example {
        name: "python_service",
        messages: &[
            "Refactoring order_service.py: fetchOrderById, cancel_order and OrderRepository.",
            "Config lives in settings/base.yaml; run pytest before pushing.",
        ],
        dictionary: &[],
        transcripts: &[
            "Open order underscore service dot pie and look at fetch order by I D.",
            "The cancel order function calls the order repository.",
            "Change base dot yammel in the settings folder.",
            "I ordered a pizza for the team.",
        ],
    },
    Example {
        name: "ops_dictionary",
        dictionary: &["kubectl", "Prometheus", "Loki", "nginx", "JSON", "k8s"],
        messages: &[],
        transcripts: &[
            "Run cube control get pods and check Prometheus.",
            "The logs go to low key and the engine x config is wrong.",
            "Jason said the engine makes too much noise.",
            "Send the Jason payload to the k eight s cluster.",
        ],
    },
    Example {
        name: "frontend_messages",
        messages: &["Stack: SvelteKit, Vitest, pnpm and tRPC; styles in tokens.css."],
        dictionary: &["Storybook"],
        transcripts: &[
            "Write the test in vi test and run it with p n p m.",
            "Add the button to story book.",
            "The tokens dot css file defines the colours.",
        ],
    },
    Example {
        name: "medical_names",
        messages: &["Patient seen by Dr. Okonkwo; started metoprolol, stopped amlodipine."],
        dictionary: &["Okonkwo", "metoprolol", "amlodipine", "Siobhan"],
        transcripts: &[
            "Doctor Okonkwo started the patient on meto prolol.",
            "Shivaun will call the pharmacy tomorrow.",
            "The weather was fine and nobody called.",
        ],
    },
    Example {
        name: "long_unrelated_dictionary",
        messages: &[],
        dictionary: &[
            "aasvogels",
            "ambigu",
            "anaheim",
            "aromas",
            "aynsley",
            "barbare",
            "beefs",
            "bookmen",
            "briarsleigh",
            "burrowers",
            "buswell",
            "cheesemonger's",
            "cholott",
            "czarist",
            "dextrously",
            "dibbs",
            "disembarrass",
            "druff",
            "etheldreda",
            "festooning",
            "flagstaff",
            "fopling",
            "fucus",
            "gustise",
            "hattie",
            "heretic",
            "holls",
            "inerrant",
            "izan",
            "jardins",
            "kildene's",
            "korolevna",
            "majoress",
            "merkle",
            "mertelle",
            "morozov",
            "ohi",
            "oich",
            "overmore",
            "palls",
            "pezara",
            "pfullingen",
            "philoclea",
            "pichot",
            "polychromatic",
            "purslow",
            "rossitur",
            "snodgrass's",
            "sokoto",
            "stumpton",
            "tencin",
            "terrelium",
            "trasimenus",
            "trunella",
            "ululation",
            "viscaya",
            "wusterhausen",
            "zeps",
            "zil",
            "zuroaga",
        ],
        transcripts: &[
            "He had hardly gone before the door opened and the old man came in.",
            "Mr. Quilter is the apostle of the middle classes.",
            "And so my fellow Americans, ask not what your country can do for you.",
        ],
    },
    Example {
        name: "german",
        messages: &[],
        dictionary: &["Kubernetes", "Grafana"],
        transcripts: &["Der Server läuft jetzt auf kubernetes im Rechenzentrum."],
    },
];

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/{name}.json"))
}

fn render(example: &Example) -> Value {
    let messages: Vec<Message> = example.messages.iter().map(|m| Message::user(*m)).collect();
    let dictionary = Dictionary::from_terms(example.dictionary).expect("valid dictionary");
    let terms = ContextTerms::from_context(&messages, &dictionary);
    let corrector = Corrector::new(&terms);
    let language = (example.name == "german")
        .then(|| ctxscribe::Language::from_code("de").expect("known language"));
    let corrections: Vec<Value> = example
        .transcripts
        .iter()
        .map(|text| {
            let corrected = corrector.correct(text, language);
            json!({
                "transcript": text,
                "corrected": corrected.text,
                "replacements": corrected.replacements.iter().map(|r| json!({
                    "original": r.original,
                    "term": r.term,
                    "cost": (f64::from(r.cost) * 1000.0).round() / 1000.0,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "messages": example.messages,
        "dictionary": example.dictionary,
        "terms": terms.terms().iter().map(|t| json!({
            "text": t.text(),
            "origin": t.origin(),
            "kind": t.kind(),
            "spoken": t.spoken_forms().iter().map(|f| f.text()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "prompt": render_prompt(&messages, &terms, &estimate_tokens),
        "corrections": corrections,
    })
}

#[test]
fn context_functions_match_their_golden_files() {
    let update = std::env::var_os("CTXSCRIBE_UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut mismatches = Vec::new();
    for example in EXAMPLES {
        let actual = render(example);
        let path = golden_path(example.name);
        let pretty = serde_json::to_string_pretty(&actual).expect("serialisable") + "\n";
        if update {
            std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
            std::fs::write(&path, &pretty).expect("write golden file");
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; create it with CTXSCRIBE_UPDATE_GOLDEN=1",
                path.display()
            )
        });
        if expected != pretty {
            mismatches.push(format!("{} differs; actual:\n{pretty}", path.display()));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{}\nIf the change is intended, regenerate with CTXSCRIBE_UPDATE_GOLDEN=1.",
        mismatches.join("\n")
    );
}
