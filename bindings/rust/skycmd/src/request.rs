//! Typed `/v1/systemone` requests, mirroring the question types of the Jev SDK (PyPI
//! `typesafe-sdk`: `Choice`, `Score`, `Noul`), so that callers need not write JSON by hand.
//!
//! ```no_run
//! use skycmd::{Choice, Noul, Request, Score};
//! let req = Request::new("vy 0 dx 36 up 9 dn 7 nxt 10 alt 32")
//!     .question("action", Choice::new()
//!         .instructions("Which input keeps the drone flying through the next gap?")
//!         .option("thrust", "fire the rotors for an upward impulse")
//!         .option("glide", "let gravity pull the drone down"))
//!     .question("danger", Noul::new("Will the drone crash within the next half second?"))
//!     .question("margin", Score::new(["none", "tight", "comfortable"])
//!         .instructions("How much room is left above and below the drone?"));
//! assert!(req.to_json().unwrap().starts_with(r#"{"state":"vy 0"#));
//! ```
use std::fmt::Write;

use crate::{err, Result};
use skycmd_sys as sys;

/// What a state, an instruction or a description holds: text, or any JSON value given as
/// JSON text (an object or an array, as the SDK's `Content` allows).
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    Text(String),
    /// JSON text of one value; checked when the request is written.
    Json(String),
}

impl Content {
    /// A JSON value given as JSON text, e.g. `Content::json(r#"{"vy": 0, "alt": 32}"#)`.
    pub fn json(raw: impl Into<String>) -> Content {
        Content::Json(raw.into())
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Content {
        Content::Text(s.to_string())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Content {
        Content::Text(s)
    }
}

impl From<&String> for Content {
    fn from(s: &String) -> Content {
        Content::Text(s.clone())
    }
}

/// A question that selects between named alternatives (`"type": "choice"`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Choice {
    pub(crate) instructions: Option<Content>,
    pub(crate) criteria: Vec<(String, Option<Content>)>,
}

impl Choice {
    pub fn new() -> Choice {
        Choice::default()
    }
    /// The question to ask (optional).
    pub fn instructions(mut self, c: impl Into<Content>) -> Choice {
        self.instructions = Some(c.into());
        self
    }
    /// A label and its description.
    pub fn option(mut self, label: impl Into<String>, description: impl Into<Content>) -> Choice {
        self.criteria.push((label.into(), Some(description.into())));
        self
    }
    /// A label without a description (`null` on the wire).
    pub fn undescribed(mut self, label: impl Into<String>) -> Choice {
        self.criteria.push((label.into(), None));
        self
    }
}

/// A question that assigns a score from an ordered rubric, one description per level from
/// zero (`"type": "score"`).
#[derive(Clone, Debug, PartialEq)]
pub struct Score {
    pub(crate) instructions: Option<Content>,
    pub(crate) criteria: Vec<Content>,
}

impl Score {
    pub fn new<C: Into<Content>>(levels: impl IntoIterator<Item = C>) -> Score {
        Score { instructions: None, criteria: levels.into_iter().map(Into::into).collect() }
    }
    /// The question to ask (optional).
    pub fn instructions(mut self, c: impl Into<Content>) -> Score {
        self.instructions = Some(c.into());
        self
    }
}

/// A yes/no question (`"type": "noul"`) with optional descriptions of either outcome.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Noul {
    pub(crate) instructions: Option<Content>,
    pub(crate) when_true: Option<Content>,
    pub(crate) when_false: Option<Content>,
}

impl Noul {
    /// A yes/no question asking `instructions`.
    pub fn new(instructions: impl Into<Content>) -> Noul {
        Noul { instructions: Some(instructions.into()), ..Noul::default() }
    }
    /// A question without instructions; at least one outcome must then be described.
    pub fn described() -> Noul {
        Noul::default()
    }
    /// Describes the yes outcome (criteria "true").
    pub fn when_true(mut self, c: impl Into<Content>) -> Noul {
        self.when_true = Some(c.into());
        self
    }
    /// Describes the no outcome (criteria "false").
    pub fn when_false(mut self, c: impl Into<Content>) -> Noul {
        self.when_false = Some(c.into());
        self
    }
}

/// One question of a request.
#[derive(Clone, Debug, PartialEq)]
pub enum Question {
    Choice(Choice),
    Score(Score),
    Noul(Noul),
}

impl From<Choice> for Question {
    fn from(q: Choice) -> Question {
        Question::Choice(q)
    }
}

impl From<Score> for Question {
    fn from(q: Score) -> Question {
        Question::Score(q)
    }
}

impl From<Noul> for Question {
    fn from(q: Noul) -> Question {
        Question::Noul(q)
    }
}

/// A `/v1/systemone` request: a state and named questions (answered in this order).
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub(crate) state: Content,
    pub(crate) model: Option<String>,
    pub(crate) questions: Vec<(String, Question)>,
}

impl Request {
    pub fn new(state: impl Into<Content>) -> Request {
        Request { state: state.into(), model: None, questions: Vec::new() }
    }
    /// The model the request names (the wire's "model"; the library answers with its own).
    pub fn model(mut self, name: impl Into<String>) -> Request {
        self.model = Some(name.into());
        self
    }
    /// Adds question `name`; its answer carries the same id.
    pub fn question(mut self, name: impl Into<String>, q: impl Into<Question>) -> Request {
        self.questions.push((name.into(), q.into()));
        self
    }

    /// The request's JSON. Fails with [`crate::Status::REQUEST`] (like the SDK's
    /// `TypeSafeError`) for no questions, a repeated name, a choice or score without
    /// criteria, a noul with neither instructions nor a described outcome, a repeated
    /// choice label, or [`Content::Json`] that is not one JSON value.
    pub fn to_json(&self) -> Result<String> {
        let bad = |m: String| err("request", sys::SKYCMD_E_REQUEST, m);
        if self.questions.is_empty() {
            return Err(bad("at least one question is required".into()));
        }
        let mut out = String::from("{\"state\":");
        put_content(&mut out, &self.state).map_err(|e| bad(format!("state: {e}")))?;
        if let Some(m) = &self.model {
            out.push_str(",\"model\":");
            put_str(&mut out, m);
        }
        out.push_str(",\"questions\":{");
        for (i, (name, q)) in self.questions.iter().enumerate() {
            if self.questions[..i].iter().any(|(n, _)| n == name) {
                return Err(bad(format!("question \"{name}\" appears twice")));
            }
            if i > 0 {
                out.push(',');
            }
            put_str(&mut out, name);
            out.push(':');
            put_question(&mut out, q).map_err(|e| bad(format!("question \"{name}\": {e}")))?;
        }
        out.push_str("}}");
        Ok(out)
    }
}

fn put_question(out: &mut String, q: &Question) -> std::result::Result<(), String> {
    let (kind, instructions) = match q {
        Question::Choice(c) => ("choice", &c.instructions),
        Question::Score(s) => ("score", &s.instructions),
        Question::Noul(n) => ("noul", &n.instructions),
    };
    write!(out, "{{\"type\":\"{kind}\"").unwrap();
    if let Some(ins) = instructions {
        out.push_str(",\"instructions\":");
        put_content(out, ins)?;
    }
    match q {
        Question::Choice(c) => {
            if c.criteria.is_empty() {
                return Err("a choice needs at least one option".into());
            }
            out.push_str(",\"criteria\":{");
            for (i, (label, d)) in c.criteria.iter().enumerate() {
                if c.criteria[..i].iter().any(|(l, _)| l == label) {
                    return Err(format!("option \"{label}\" appears twice"));
                }
                if i > 0 {
                    out.push(',');
                }
                put_str(out, label);
                out.push(':');
                match d {
                    Some(d) => put_content(out, d)?,
                    None => out.push_str("null"),
                }
            }
            out.push('}');
        }
        Question::Score(s) => {
            if s.criteria.is_empty() {
                return Err("a score needs at least one level".into());
            }
            out.push_str(",\"criteria\":[");
            for (i, level) in s.criteria.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                put_content(out, level)?;
            }
            out.push(']');
        }
        Question::Noul(n) => {
            if n.instructions.is_none() && n.when_true.is_none() && n.when_false.is_none() {
                return Err("a noul needs instructions or a described outcome".into());
            }
            if n.when_true.is_some() || n.when_false.is_some() {
                out.push_str(",\"criteria\":{");
                let mut first = true;
                for (key, c) in [("true", &n.when_true), ("false", &n.when_false)] {
                    if let Some(c) = c {
                        if !first {
                            out.push(',');
                        }
                        first = false;
                        write!(out, "\"{key}\":").unwrap();
                        put_content(out, c)?;
                    }
                }
                out.push('}');
            }
        }
    }
    out.push('}');
    Ok(())
}

fn put_content(out: &mut String, c: &Content) -> std::result::Result<(), String> {
    match c {
        Content::Text(s) => put_str(out, s),
        Content::Json(j) => {
            let t = j.trim();
            let mut p = JsonCheck { s: t.as_bytes(), i: 0, depth: 0 };
            let invalid = |at: usize| format!("invalid JSON at byte {at}: {t}");
            p.value().map_err(invalid)?;
            if p.i != t.len() {
                return Err(invalid(p.i));
            }
            out.push_str(t);
        }
    }
    Ok(())
}

/// A JSON string literal of `s`.
pub(crate) fn put_str(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Checks that raw JSON text is exactly one value (RFC 8259 grammar), so that a
/// [`Content::Json`] cannot change the structure around it.
struct JsonCheck<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl JsonCheck<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, b: u8) -> std::result::Result<(), usize> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.i)
        }
    }
    fn value(&mut self) -> std::result::Result<(), usize> {
        self.ws();
        self.depth += 1;
        if self.depth > 128 {
            return Err(self.i);
        }
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                self.ws();
                if self.peek() != Some(b'}') {
                    loop {
                        self.ws();
                        self.string()?;
                        self.ws();
                        self.eat(b':')?;
                        self.value()?;
                        self.ws();
                        if self.peek() == Some(b',') {
                            self.i += 1;
                        } else {
                            break;
                        }
                    }
                }
                self.eat(b'}')?;
            }
            Some(b'[') => {
                self.i += 1;
                self.ws();
                if self.peek() != Some(b']') {
                    loop {
                        self.value()?;
                        self.ws();
                        if self.peek() == Some(b',') {
                            self.i += 1;
                        } else {
                            break;
                        }
                    }
                }
                self.eat(b']')?;
            }
            Some(b'"') => self.string()?,
            Some(b't') => self.word(b"true")?,
            Some(b'f') => self.word(b"false")?,
            Some(b'n') => self.word(b"null")?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            _ => return Err(self.i),
        }
        self.depth -= 1;
        self.ws();
        Ok(())
    }
    fn word(&mut self, w: &[u8]) -> std::result::Result<(), usize> {
        if self.s[self.i..].starts_with(w) {
            self.i += w.len();
            Ok(())
        } else {
            Err(self.i)
        }
    }
    fn digits(&mut self) -> std::result::Result<(), usize> {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        if self.i == start {
            Err(self.i)
        } else {
            Ok(())
        }
    }
    fn number(&mut self) -> std::result::Result<(), usize> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        if self.peek() == Some(b'0') {
            self.i += 1;
        } else {
            self.digits()?;
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.digits()?;
        }
        Ok(())
    }
    fn string(&mut self) -> std::result::Result<(), usize> {
        self.eat(b'"')?;
        loop {
            match self.peek() {
                None => return Err(self.i),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
                        Some(b'u') => {
                            self.i += 1;
                            for _ in 0..4 {
                                if !self.peek().map_or(false, |b| b.is_ascii_hexdigit()) {
                                    return Err(self.i);
                                }
                                self.i += 1;
                            }
                        }
                        _ => return Err(self.i),
                    }
                }
                Some(b) if b < 0x20 => return Err(self.i),
                Some(_) => self.i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        let mut s = String::new();
        put_str(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, r#""a\"b\\c\nd\u0001é""#);
    }

    #[test]
    fn raw_json_must_be_one_value() {
        for ok in [r#"{"a": [1, -2.5e3, true, null, "x\u00e9"]}"#, "[]", " 3 ", r#""s""#] {
            put_content(&mut String::new(), &Content::json(ok)).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [r#"{"a": 1}, "b": {"#, "{", "[1,]", "01", "tru", r#"{"a" 1}"#, "1 2", ""] {
            assert!(put_content(&mut String::new(), &Content::json(bad)).is_err(), "{bad} accepted");
        }
    }
}
