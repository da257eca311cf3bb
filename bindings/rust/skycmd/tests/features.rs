// The parts of the C ABI beyond open/decide: typed requests, batches, models from memory,
// the tokenizer, progress and cancellation of quantize.
mod common;

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::*;
use skycmd::{Choice, Content, Model, Noul, Options, Request, Score, Special, Status, Tokenizer, Type};

/// examples/flappy-drone.json, built with the typed builders.
fn typed_example() -> Request {
    Request::new("vy 0 dx 36 up 9 dn 7 nxt 10 alt 32")
        .question(
            "action",
            Choice::new()
                .instructions("Which input keeps the drone flying through the next gap?")
                .option("thrust", "fire the rotors for an upward impulse")
                .option("glide", "let gravity pull the drone down"),
        )
        .question("danger", Noul::new("Will the drone crash within the next half second if it keeps gliding?"))
        .question(
            "margin",
            Score::new(["none", "tight", "comfortable"]).instructions("How much room is left above and below the drone?"),
        )
}

#[test]
fn typed_request_answers_like_the_json_example() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let from_json = m.decide(&request()).unwrap();
    let typed = m.decide_request(&typed_example()).unwrap();
    check_answers(&typed);
    // Same answers, and PartialEq holds for identical answers (no NaN confidence).
    assert_eq!(typed.answers, from_json.answers);
    assert_eq!(typed.answers[1].confidence, None);
    assert_eq!(typed, m.decide_request(&typed_example()).unwrap());
}

#[test]
fn typed_request_validation_and_json_content() {
    let no_questions = Request::new("s").to_json().unwrap_err();
    assert_eq!(no_questions.status, Status::REQUEST);
    let empty_choice = Request::new("s").question("a", Choice::new()).to_json().unwrap_err();
    assert!(empty_choice.message.contains("\"a\""), "{empty_choice}");
    assert!(Request::new("s").question("a", Score::new(Vec::<&str>::new())).to_json().is_err());
    assert!(Request::new("s").question("a", Noul::described()).to_json().is_err());
    assert!(Request::new("s").question("a", Noul::new("?")).question("a", Noul::new("?")).to_json().is_err());
    assert!(Request::new(Content::json("{\"x\": 1}, \"questions\": {}")).question("a", Noul::new("?")).to_json().is_err());
    let j = Request::new(Content::json(r#"{"vy": 0, "alt": 32}"#))
        .model("s1-pico")
        .question("d", Noul::new("Crash?").when_true("it crashes").when_false(Content::json(r#"{"safe": true}"#)))
        .question("c", Choice::new().instructions("Which?").option("x", "\"quoted\"\n").undescribed("y"))
        .to_json()
        .unwrap();
    assert_eq!(
        j,
        r#"{"state":{"vy": 0, "alt": 32},"model":"s1-pico","questions":{"d":{"type":"noul","instructions":"Crash?","criteria":{"true":"it crashes","false":{"safe": true}}},"c":{"type":"choice","instructions":"Which?","criteria":{"x":"\"quoted\"\n","y":null}}}}"#
    );
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    // The SDK allows a noul without instructions when an outcome is described; the library
    // answers it as Jev does, with empty instructions (docs/compat.md).
    let bare = m.decide_request(&Request::new("s").question("d", Noul::described().when_true("x"))).unwrap();
    assert_eq!(bare.answers.len(), 1);
    let v = bare.answers[0].value;
    assert!((0.0..=1.0).contains(&v), "{v}");
    // Score levels given as JSON come back as their compact JSON legend.
    let levels = vec![Content::json(r#"{ "level": 0, "say": "none" }"#), Content::from("some")];
    let sc = m.decide_request(&Request::new("s").question("s", Score::new(levels).instructions("How much?"))).unwrap();
    let legends: Vec<Option<&str>> = sc.answers[0].probabilities.iter().map(|p| p.legend.as_deref()).collect();
    assert_eq!(legends, [Some(r#"{"level":0,"say":"none"}"#), Some("some")]);
    let r = m.decide(&j).unwrap();
    assert_eq!(r.answers.len(), 2);
    assert_eq!(r.answer("c").unwrap().probabilities.len(), 2);
}

#[test]
fn batch_equals_single_decides_and_names_the_bad_request() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let a = request();
    let b = Request::new("vy 3 dx 10 up 2 dn 20 nxt 4 alt 8")
        .question("only", Score::new(["low", "mid", "high"]).instructions("How high?"))
        .to_json()
        .unwrap();
    let batch = m.decide_batch(&[a.as_str(), b.as_str(), a.as_str()]).unwrap();
    assert_eq!(batch.len(), 3);
    assert_eq!(batch[0], m.decide(&a).unwrap());
    assert_eq!(batch[1], m.decide(&b).unwrap());
    assert_eq!(dump(&batch[2]), dump(&batch[0]));
    assert!(m.decide_batch::<&str>(&[]).unwrap().is_empty());
    let e = m.decide_batch(&[a.as_str(), "{\"state\": 1"]).unwrap_err();
    assert_eq!(e.status, Status::JSON);
    assert!(e.message.starts_with("request 1: "), "{e}");
    let mut s = m.session().unwrap();
    assert_eq!(s.decide_batch(&[&b]).unwrap()[0], batch[1]);
}

#[test]
fn model_from_memory_owns_its_buffer() {
    let Some(p) = model() else { return };
    let want = dump(&Model::open(&p, &Options::new()).unwrap().decide(&request()).unwrap());
    let bytes = std::fs::read(&p).unwrap();
    let m = Model::open_buffer(bytes.clone(), &Options::new()).unwrap();
    assert_eq!(dump(&m.decide(&request()).unwrap()), want);
    // Shared between threads, the buffer moved into the model.
    let m = Arc::new(m);
    let req = request();
    std::thread::scope(|sc| {
        for _ in 0..3 {
            let (m, req, want) = (&m, &req, &want);
            sc.spawn(move || assert_eq!(&dump(&m.decide(req).unwrap()), want));
        }
    });
    Arc::try_unwrap(m).ok().unwrap().close().unwrap();
    // An Arc<[u8]> works too; the bytes outlive the model only if the caller keeps a clone.
    let shared: Arc<[u8]> = bytes.into();
    let m = Model::open_buffer(Arc::clone(&shared), &Options::new()).unwrap();
    assert_eq!(dump(&m.decide(&request()).unwrap()), want);
    drop(m);
    assert_eq!(Arc::strong_count(&shared), 1);
    let e = Model::open_buffer(vec![0u8; 64], &Options::new()).err().unwrap();
    assert_eq!(e.status, Status::FORMAT, "{e}");
}

#[test]
fn tokenizer_encode_decode_count_specials() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let t = m.tokenizer();
    let text = "Which input keeps the drone flying? Ünïcödé 123";
    let ids = t.encode(text).unwrap();
    assert!(!ids.is_empty());
    assert_eq!(t.count(text).unwrap(), ids.len());
    assert_eq!(t.decode(&ids).unwrap(), text);
    assert!(t.vocab_size() > 0);
    assert!(ids.iter().all(|&i| (i as usize) < t.vocab_size()));
    assert!(t.token(ids[0]).is_some());
    assert_eq!(t.token(-1), None);
    assert_eq!(t.token(t.vocab_size() as i32), None);
    for s in [Special::Cls, Special::Sep, Special::Mask, Special::Pad] {
        let id = t.special_id(s).unwrap_or_else(|| panic!("{s:?} missing"));
        assert!((id as usize) < t.vocab_size());
    }
    assert_eq!(t.encode("").unwrap(), Vec::<i32>::new());
    assert!(t.decode(&[-5]).is_err());
    assert_eq!(Tokenizer::open_json("/nonexistent/tokenizer.json").err().unwrap().status, Status::IO);
}

#[test]
fn quantize_reports_progress_and_cancels() {
    let Some(p) = model() else { return };
    let dir = &fixture().dir;
    let calls = Arc::new(AtomicU64::new(0));
    let last = Arc::new(AtomicU64::new(0));
    let (c, l) = (Arc::clone(&calls), Arc::clone(&last));
    let out = dir.join("progress-q8.gguf");
    let opts = Options::new().tensor_type(Type::Q8_0).progress(move |done, total| {
        assert!(done <= total);
        c.fetch_add(1, Ordering::Relaxed);
        l.store(done * 1000 / total.max(1), Ordering::Relaxed);
        ControlFlow::Continue(())
    });
    skycmd::quantize(&p, &out, &opts).unwrap();
    assert!(calls.load(Ordering::Relaxed) > 1);
    assert_eq!(last.load(Ordering::Relaxed), 1000, "the last report is done == total");
    assert!(out.exists());

    let cancelled = dir.join("cancelled-q8.gguf");
    let opts = Options::new().tensor_type(Type::Q8_0).progress(|done, _| if done > 0 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) });
    let e = skycmd::quantize(&p, &cancelled, &opts).unwrap_err();
    assert_eq!(e.status, Status::CANCELLED, "{e}");
    assert!(!cancelled.exists(), "a cancelled quantize leaves no output");

    // A panic in the closure does not unwind into C: the call is cancelled, then the panic
    // resumes here.
    let panicking = dir.join("panicked-q8.gguf");
    let opts = Options::new().tensor_type(Type::Q8_0).progress(|_, _| panic!("progress closure panicked"));
    let r = std::panic::catch_unwind(|| skycmd::quantize(&p, &panicking, &opts));
    let payload = r.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"progress closure panicked"));
    assert!(!panicking.exists());
}
