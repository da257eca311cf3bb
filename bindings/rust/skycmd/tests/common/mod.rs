// Shared helpers of the integration tests (a module, not a test target).
#![allow(dead_code)]
use std::path::PathBuf;
use std::sync::OnceLock;

use skycmd::{Answer, AnswerType, Options, Response, Status};

pub struct Fixture {
    pub dir: PathBuf,
    pub model: Result<PathBuf, skycmd::Error>,
}

pub fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("skycmd-rust-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let model = match std::env::var("SKYCMD_TEST_MODEL") {
            Ok(p) if !p.is_empty() => Ok(PathBuf::from(p)),
            _ => {
                let p = dir.join("s1-pico.gguf");
                skycmd::random_model("s1-pico", &p, &Options::new()).map(|_| p)
            }
        };
        Fixture { dir, model }
    })
}

/// The model path, or None (test skipped) if the library cannot make models yet and
/// SKYCMD_REQUIRE_MODEL is not 1.
pub fn model() -> Option<PathBuf> {
    match &fixture().model {
        Ok(p) => Some(p.clone()),
        Err(e) if e.status == Status::UNSUPPORTED && std::env::var("SKYCMD_REQUIRE_MODEL").as_deref() != Ok("1") => {
            eprintln!("SKIPPED: no random model yet: {e}");
            None
        }
        Err(e) => panic!("random s1-pico: {e}"),
    }
}

pub fn request() -> String {
    let p = std::env::var("SKYCMD_EXAMPLE_REQUEST")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../examples/flappy-drone.json"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The cross-check form of run-tests.sh: every double as the hex digits of its bits.
pub fn dump(r: &Response) -> String {
    let mut s = format!("input_tokens {}\n", r.input_tokens);
    for a in r.answers.values() {
        let kind = match a.kind {
            AnswerType::Choice => "choice",
            AnswerType::Score => "score",
            AnswerType::Noul => "noul",
        };
        // An absent value (a noul answer's confidence) is "none".
        let confidence = a.confidence.map_or("none".to_string(), |c| format!("{:016x}", c.to_bits()));
        s += &format!("answer {} {} choice={} value={:016x} confidence={confidence}\n", a.id, kind, a.choice.as_deref().unwrap_or(""), a.value.to_bits());
        for p in &a.probabilities {
            s += &format!("option {} {:016x}\n", p.key, p.p.to_bits());
        }
    }
    s
}

pub fn check_answers(r: &Response) {
    assert_eq!(r.answers.len(), 3, "{}", r.json);
    assert!(r.input_tokens > 0);
    // Keyed by question id, in request order.
    let shape: Vec<(&str, AnswerType)> = r.answers.iter().map(|(id, a)| (id, a.kind)).collect();
    assert_eq!(shape, vec![("action", AnswerType::Choice), ("danger", AnswerType::Noul), ("margin", AnswerType::Score)]);
    for (id, a) in &r.answers {
        assert_eq!(id, a.id);
        let sum: f64 = a.probabilities.iter().map(|p| p.p).sum();
        assert!((sum - 1.0).abs() < 1e-6, "{} sums to {sum}", a.id);
        assert!(a.probabilities.iter().all(|p| (0.0..=1.0).contains(&p.p)));
    }
    let act: &Answer = r.answer("action").unwrap();
    assert_eq!(act.probabilities.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(), ["thrust", "glide"]);
    let best = if act.probabilities[0].p >= act.probabilities[1].p { &act.probabilities[0] } else { &act.probabilities[1] };
    assert_eq!(act.choice.as_deref(), Some(best.key.as_str()));
    assert_eq!(act.value, best.p);
    assert!(act.confidence.map_or(false, |c| (0.0..=1.0).contains(&c)));
    let dn = r.answer("danger").unwrap();
    assert_eq!(dn.probabilities.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(), ["false", "true"]);
    assert_eq!(dn.value, dn.probabilities[1].p);
    assert_eq!(dn.confidence, None);
    assert_eq!(dn.choice, None);
    assert!(act.probabilities.iter().chain(&dn.probabilities).all(|p| p.legend.is_none()));
    let mg = r.answer("margin").unwrap();
    assert!(mg.confidence.is_some());
    let legends: Vec<Option<&str>> = mg.probabilities.iter().map(|p| p.legend.as_deref()).collect();
    assert_eq!(legends, [Some("none"), Some("tight"), Some("comfortable")]);
    assert!(!r.model.is_empty() && r.json.contains(&format!("\"model\":\"{}\"", r.model)), "{} vs {}", r.model, r.json);
    assert_eq!(mg.probabilities.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(), ["0", "1", "2"]);
    let exp: f64 = mg.probabilities.iter().enumerate().map(|(i, p)| i as f64 * p.p).sum();
    assert!((exp - mg.value).abs() < 1e-9);
    assert!(r.json.contains("\"answers\"") && r.json.contains(&format!("\"{}\"", best.key)));
}
