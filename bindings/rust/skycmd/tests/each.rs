// The streaming batch (Session::decide_each, Model::decide_each: one result per request, in
// order, read lazily in groups of DECIDE_EACH_GROUP) and the Answers container (keyed by
// question id, in request order).
mod common;

use std::cell::Cell;

use common::*;
use skycmd::{AnswerType, Choice, Model, Noul, Options, Request, Response, Status, DECIDE_EACH_GROUP};

const MALFORMED: &str = "{\"state\": 1";
const INVALID: &str = r#"{"state":"s","questions":{"a":{"type":"choice","instructions":"?"}}}"#;

fn small(i: usize) -> String {
    Request::new(format!("vy {i} dx 36 up 9 dn 7 nxt 10 alt {}", 40 - i % 30))
        .question("go", Choice::new().instructions("Which input?").option("thrust", "fire").option("glide", "fall"))
        .to_json()
        .unwrap()
}

#[test]
fn decide_each_answers_each_request_on_its_own_account() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    // 70 requests: more than two groups, with bad ones in the first and the last group.
    let mut input: Vec<String> = (0..70).map(small).collect();
    input[1] = MALFORMED.to_string();
    input[33] = request();
    input[40] = INVALID.to_string();
    input[69] = MALFORMED.to_string();
    let mut s = m.session().unwrap();
    let out: Vec<_> = s.decide_each(&input).collect();
    assert_eq!(out.len(), input.len());
    for (i, r) in out.iter().enumerate() {
        match i {
            1 | 69 => {
                let e = r.as_ref().unwrap_err();
                assert_eq!((e.status, e.code()), (Status::JSON, "SKYCMD_E_JSON"), "{i}: {e}");
            }
            40 => {
                let e = r.as_ref().unwrap_err();
                assert_eq!(e.status, Status::REQUEST, "{e}");
                assert!(e.message.contains("criteria"), "{e}");
            }
            _ => {
                // Exactly what decide gives for the request alone (bit for bit).
                let alone = m.decide(&input[i]).unwrap();
                assert_eq!(r.as_ref().unwrap(), &alone, "request {i}");
            }
        }
    }
    check_answers(out[33].as_ref().unwrap());
    // The session is usable afterwards, and an empty stream yields nothing.
    assert_eq!(s.decide(&input[0]).unwrap(), *out[0].as_ref().unwrap());
    assert!(s.decide_each(Vec::<String>::new()).next().is_none());
}

#[test]
fn decide_each_takes_typed_requests_and_reports_builder_errors() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let good = Request::new("vy 0 dx 36").question("d", Noul::new("Crash?"));
    let no_questions = Request::new("vy 0 dx 36");
    let out: Vec<_> = m.decide_each([good.clone(), no_questions, good.clone()]).unwrap().collect();
    assert_eq!(out.len(), 3);
    let alone = m.decide_request(&good).unwrap();
    assert_eq!(out[0].as_ref().unwrap(), &alone);
    assert_eq!(out[2].as_ref().unwrap(), &alone);
    assert_eq!(out[1].as_ref().unwrap_err().status, Status::REQUEST);
    // &str items and a Model-level stream after the pooled session went back.
    let texts = [request(), MALFORMED.to_string()];
    let out: Vec<Result<Response, skycmd::Error>> = m.decide_each(texts.iter().map(String::as_str)).unwrap().collect();
    assert_eq!(out[0].as_ref().unwrap(), &m.decide(&texts[0]).unwrap());
    assert_eq!(out[1].as_ref().unwrap_err().status, Status::JSON);
}

#[test]
fn decide_each_reads_one_group_at_a_time() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let pulled = Cell::new(0usize);
    let source = (0..2 * DECIDE_EACH_GROUP + 5).map(|i| {
        pulled.set(pulled.get() + 1);
        small(i)
    });
    let mut s = m.session().unwrap();
    let mut it = s.decide_each(source);
    assert_eq!(pulled.get(), 0, "nothing is read before the first item is asked for");
    assert!(it.next().unwrap().is_ok());
    assert_eq!(pulled.get(), DECIDE_EACH_GROUP);
    for _ in 1..DECIDE_EACH_GROUP {
        assert!(it.next().unwrap().is_ok());
    }
    assert_eq!(pulled.get(), DECIDE_EACH_GROUP, "the next group is read only when the first is handed out");
    assert!(it.next().unwrap().is_ok());
    assert_eq!(pulled.get(), 2 * DECIDE_EACH_GROUP);
    assert_eq!(it.count(), DECIDE_EACH_GROUP + 4);
    assert_eq!(pulled.get(), 2 * DECIDE_EACH_GROUP + 5);
}

#[test]
fn answers_are_keyed_by_question_id_in_request_order() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let r = m.decide(&request()).unwrap();
    let a = &r.answers;
    assert_eq!(a.len(), 3);
    assert!(!a.is_empty());
    assert_eq!(a.keys().collect::<Vec<_>>(), ["action", "danger", "margin"]);
    let pairs: Vec<(&str, AnswerType)> = a.iter().map(|(id, x)| (id, x.kind)).collect();
    assert_eq!(pairs, [("action", AnswerType::Choice), ("danger", AnswerType::Noul), ("margin", AnswerType::Score)]);
    assert_eq!(a.iter().rev().next().unwrap().0, "margin");
    assert_eq!(a["danger"].kind, AnswerType::Noul);
    assert_eq!(a.get("margin").unwrap().id, "margin");
    assert!(std::ptr::eq(&a[2], a.get("margin").unwrap()));
    assert!(a.get("nope").is_none() && !a.contains_key("nope") && a.contains_key("action"));
    assert!(std::panic::catch_unwind(|| a["nope"].value).is_err(), "a missing key panics as a map's Index does");
    assert_eq!(r.answer("action"), a.get("action"));
    assert_eq!(a.values().map(|x| x.id.as_str()).collect::<Vec<_>>(), ["action", "danger", "margin"]);
    let owned: Vec<(String, AnswerType)> = a.clone().into_iter().map(|(id, x)| (id, x.kind)).collect();
    assert_eq!(owned[1], ("danger".to_string(), AnswerType::Noul));
    assert_eq!(a.as_slice().len(), 3);
    assert_eq!(a.clone().into_vec()[0].id, "action");
    // Request order, not alphabetical: a request that asks "z" before "a".
    let za = Request::new("vy 0")
        .question("z", Noul::new("Crash?"))
        .question("a", Choice::new().instructions("Which?").option("x", "one").option("y", "two"));
    let r = m.decide_request(&za).unwrap();
    assert_eq!(r.answers.keys().collect::<Vec<_>>(), ["z", "a"]);
}
