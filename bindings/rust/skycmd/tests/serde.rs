// Feature `serde`: a Response serializes in the shape of the library's wire JSON, and the
// typed requests serialize to and deserialize from the /v1/systemone body.
#![cfg(feature = "serde")]
mod common;

use common::*;
use serde_json::{json, Value};
use skycmd::{Choice, Content, Model, Noul, Options, Request, Score, Status};

#[test]
fn response_serializes_as_the_wire_json() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let r = m.decide(&request()).unwrap();
    let wire: Value = serde_json::from_str(&r.json).unwrap();
    // The same keys, order and doubles as the library's own JSON (parsed, so that number
    // formatting does not matter: every double reads back bit for bit).
    assert_eq!(serde_json::to_value(&r).unwrap(), wire);
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.starts_with(r#"{"model":""#) && text.contains(r#""answers":{"action":{"type":"choice","choice":"#), "{text}");
    let order: Vec<&str> = ["\"action\"", "\"danger\"", "\"margin\"", "\"usage\""].iter().map(|k| {
        assert!(text.contains(k), "{k}");
        *k
    }).collect();
    let pos: Vec<usize> = order.iter().map(|k| text.find(k).unwrap()).collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "request order: {text}");
    // An answer alone is the wire's answer object; Answers is the wire's "answers".
    assert_eq!(serde_json::to_value(r.answer("danger").unwrap()).unwrap(), wire["answers"]["danger"]);
    assert_eq!(serde_json::to_value(&r.answers).unwrap(), wire["answers"]);
    let dn = &r.answers["danger"];
    assert_eq!(serde_json::to_value(dn).unwrap(), json!({"type": "noul", "noul": dn.value}));
    assert_eq!(serde_json::to_value(&r.answers["margin"].probabilities[0]).unwrap()["legend"], "none");
}

#[test]
fn errors_and_statuses_serialize_with_their_names() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let e = m.decide("{\"state\": 1").unwrap_err();
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!((v["code"].as_str(), v["status"].as_i64(), v["op"].as_str()), (Some("SKYCMD_E_JSON"), Some(8), Some("decide")));
    assert_eq!(v["message"], e.message.as_str());
    assert_eq!(v["os_error"], Value::Null);
    assert_eq!(serde_json::to_value(Status::REQUEST).unwrap(), "SKYCMD_E_REQUEST");
}

#[test]
fn the_example_request_deserializes_and_answers_like_its_json() {
    let Some(p) = model() else { return };
    let m = Model::open(&p, &Options::new()).unwrap();
    let text = request();
    let typed: Request = serde_json::from_str(&text).unwrap();
    assert_eq!(m.decide_request(&typed).unwrap(), m.decide(&text).unwrap());
    // Serialized again it is the same body, and to_json writes the same text.
    let back: Value = serde_json::to_value(&typed).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(&text).unwrap());
    assert_eq!(serde_json::to_string(&typed).unwrap(), typed.to_json().unwrap());
}

#[test]
fn request_serde_keeps_order_json_content_and_refuses_what_it_cannot_keep() {
    let built = Request::new(Content::json(r#"{ "vy": 0, "alt": 32, "gaps": [1, 2.5, -3e-2, null, true] }"#))
        .model("s1-pico")
        .question("z", Noul::described().when_true("it crashes").when_false(Content::json(r#"{"safe": true}"#)))
        .question("a", Choice::new().instructions("Which?").option("x", "\"quoted\"\n\u{1}é").undescribed("y"))
        .question("m", Score::new(["none", "some"]).instructions(Content::json("[\"how\", \"much\"]")));
    let text = serde_json::to_string(&built).unwrap();
    assert_eq!(
        text,
        r#"{"state":{"vy":0,"alt":32,"gaps":[1,2.5,-0.03,null,true]},"model":"s1-pico","questions":{"z":{"type":"noul","criteria":{"true":"it crashes","false":{"safe":true}}},"a":{"type":"choice","instructions":"Which?","criteria":{"x":"\"quoted\"\n\u0001é","y":null}},"m":{"type":"score","instructions":["how","much"],"criteria":["none","some"]}}}"#
    );
    let back: Request = serde_json::from_str(&text).unwrap();
    // Round trip: the same request (JSON content compacted, keys in their order).
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
    assert_eq!(back.to_json().unwrap(), text);
    assert_eq!(serde_json::to_string(&back).unwrap(), serde_json::to_string(&built).unwrap());
    // The question types alone.
    let c: Choice = serde_json::from_str(r#"{"criteria": {"b": "B", "a": null}, "type": "choice"}"#).unwrap();
    assert_eq!(c, Choice::new().option("b", "B").undescribed("a"));
    let s: Score = serde_json::from_str(r#"{"type": "score", "criteria": ["lo", {"level": 1}]}"#).unwrap();
    assert_eq!(s, Score::new([Content::from("lo"), Content::json(r#"{"level":1}"#)]));
    assert!(serde_json::from_str::<Score>(r#"{"type": "noul", "instructions": "?"}"#).is_err());
    // Refused: fields the builders cannot hold (a request's budgets), unknown types, bad shapes.
    for (bad, says) in [
        (r#"{"state": "s", "max_len": 75, "questions": {}}"#, "max_len"),
        (r#"{"questions": {}}"#, "state"),
        (r#"{"state": "s", "questions": {"q": {"type": "vote", "criteria": []}}}"#, "vote"),
        (r#"{"state": "s", "questions": {"q": {"type": "choice", "criteria": ["a"]}}}"#, "criteria"),
        (r#"{"state": "s", "questions": {"q": {"type": "noul", "criteria": {"maybe": "?"}}}}"#, "maybe"),
        (r#"{"state": "s", "questions": {"q": {"criteria": {}}}}"#, "type"),
    ] {
        let e = serde_json::from_str::<Request>(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
    // Builder rules still apply when it is written: no questions is a REQUEST error.
    let empty: Request = serde_json::from_str(r#"{"state": "s", "questions": {}}"#).unwrap();
    assert_eq!(empty.to_json().unwrap_err().status, Status::REQUEST);
    // Invalid raw JSON content fails to serialize instead of writing a broken body.
    assert!(serde_json::to_string(&Request::new(Content::json("{")).question("d", Noul::new("?"))).is_err());
}
