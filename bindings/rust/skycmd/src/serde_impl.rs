//! Feature `serde`: `Serialize` for what a decide call returns, `Serialize + Deserialize` for
//! the typed requests.
//!
//! - [`Response`] serializes in the shape of the library's wire JSON (`Response::json`):
//!   `{"model", "answers": {id: answer, ...} (request order), "usage": {"input_tokens",
//!   "output_tokens": 0}}`; an [`Answer`] as the wire's answer object (`"type"`, then
//!   `"choice"` + `"probabilities"` + `"confidence"`, `"noul"` (P(true) only), or `"score"` +
//!   `"legend"` + `"probabilities"` + `"confidence"`), without its id, which is its key in
//!   [`Answers`]. Differences from the wire: a score level described by a JSON value other
//!   than a string has its `legend` as that value's compact JSON text (the response keeps
//!   legends as text), and numbers are written by the serializer (serde_json: the shortest
//!   text that reads back as the same double; the library prints up to 17 digits).
//! - [`Request`], [`Question`], [`Choice`], [`Score`], [`Noul`] and [`Content`] are the
//!   `/v1/systemone` body: `{"model"?, "state", "questions": {name: {"type", "instructions"?,
//!   "criteria"}}}`, questions and labels kept in order. A [`Content`] is a string, or any
//!   other JSON value (kept as [`Content::Json`] text, key order preserved). Deserializing
//!   accepts what [`Request::to_json`] writes and refuses fields it cannot keep (e.g. the
//!   request's budgets), so a deserialized request asks exactly what its JSON asked.
//! - [`Status`] serializes as its name ("SKYCMD_E_JSON"), [`Error`] as `{"op", "code",
//!   "status" (number), "message", "os_error"}`, [`AnswerType`] as "choice" / "score" /
//!   "noul", [`Probability`] as `{"key", "p", "legend"?}`.
//!
//! No serde_json: a [`Content::Json`] is read and written through a small JSON tree, so any
//! serde format works.
use std::fmt::{self, Write};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Error as _, SerializeMap, SerializeSeq, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use crate::request::{Choice, Content, Noul, Question, Request, Score};
use crate::{Answer, AnswerType, Answers, Error, Probability, Response, Status};

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Serialize for Error {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Error", 5)?;
        st.serialize_field("op", self.op)?;
        st.serialize_field("code", self.code())?;
        st.serialize_field("status", &self.status.0)?;
        st.serialize_field("message", &self.message)?;
        st.serialize_field("os_error", &self.os_error)?;
        st.end()
    }
}

impl Serialize for AnswerType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            AnswerType::Choice => "choice",
            AnswerType::Score => "score",
            AnswerType::Noul => "noul",
        })
    }
}

impl Serialize for Probability {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(if self.legend.is_some() { 3 } else { 2 }))?;
        m.serialize_entry("key", &self.key)?;
        m.serialize_entry("p", &self.p)?;
        if let Some(l) = &self.legend {
            m.serialize_entry("legend", l)?;
        }
        m.end()
    }
}

/// `{key: value}` of an answer's options (probabilities or legends), in order.
struct OptionMap<'a, F>(&'a [Probability], F);

impl<T: Serialize, F: Fn(&Probability) -> T> Serialize for OptionMap<'_, F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for p in self.0 {
            m.serialize_entry(&p.key, &(self.1)(p))?;
        }
        m.end()
    }
}

impl Serialize for Answer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let probs = OptionMap(&self.probabilities, |p: &Probability| p.p);
        match self.kind {
            AnswerType::Choice => {
                let mut m = s.serialize_map(Some(4))?;
                m.serialize_entry("type", &self.kind)?;
                m.serialize_entry("choice", &self.choice)?;
                m.serialize_entry("probabilities", &probs)?;
                m.serialize_entry("confidence", &self.confidence)?;
                m.end()
            }
            AnswerType::Noul => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("type", &self.kind)?;
                m.serialize_entry("noul", &self.value)?;
                m.end()
            }
            AnswerType::Score => {
                let mut m = s.serialize_map(Some(5))?;
                m.serialize_entry("type", &self.kind)?;
                m.serialize_entry("score", &self.value)?;
                m.serialize_entry("legend", &OptionMap(&self.probabilities, |p: &Probability| p.legend.clone().unwrap_or_default()))?;
                m.serialize_entry("probabilities", &probs)?;
                m.serialize_entry("confidence", &self.confidence)?;
                m.end()
            }
        }
    }
}

impl Serialize for Answers {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.len()))?;
        for (id, a) in self {
            m.serialize_entry(id, a)?;
        }
        m.end()
    }
}

struct Usage(i64);

impl Serialize for Usage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("input_tokens", &self.0)?;
        m.serialize_entry("output_tokens", &0)?;
        m.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("model", &self.model)?;
        m.serialize_entry("answers", &self.answers)?;
        m.serialize_entry("usage", &Usage(self.input_tokens))?;
        m.end()
    }
}

// ---------------------------------------------------------------- JSON values of Content

/// One JSON value, objects in their order: what a [`Content::Json`] holds, read from any
/// serde format and written to any.
#[derive(Debug)]
enum Tree {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Arr(Vec<Tree>),
    Obj(Vec<(String, Tree)>),
}

impl Tree {
    /// Compact JSON text.
    fn write(&self, out: &mut String) {
        match self {
            Tree::Null => out.push_str("null"),
            Tree::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Tree::Int(n) => write!(out, "{n}").unwrap(),
            Tree::Uint(n) => write!(out, "{n}").unwrap(),
            // Finite only (checked where a Tree is made); Debug prints the shortest text that
            // reads back as the same double, with a fraction or exponent.
            Tree::Float(x) => write!(out, "{x:?}").unwrap(),
            Tree::Str(s) => crate::request::put_str(out, s),
            Tree::Arr(v) => {
                out.push('[');
                for (i, t) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    t.write(out);
                }
                out.push(']');
            }
            Tree::Obj(v) => {
                out.push('{');
                for (i, (k, t)) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    crate::request::put_str(out, k);
                    out.push(':');
                    t.write(out);
                }
                out.push('}');
            }
        }
    }

    /// Parses JSON text of exactly one value (RFC 8259).
    fn parse(text: &str) -> Result<Tree, String> {
        let mut p = TreeParser { s: text.as_bytes(), i: 0, depth: 0 };
        let t = p.value()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("invalid JSON at byte {}", p.i));
        }
        Ok(t)
    }
}

impl Serialize for Tree {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Tree::Null => s.serialize_unit(),
            Tree::Bool(b) => s.serialize_bool(*b),
            Tree::Int(n) => s.serialize_i64(*n),
            Tree::Uint(n) => s.serialize_u64(*n),
            Tree::Float(x) => s.serialize_f64(*x),
            Tree::Str(v) => s.serialize_str(v),
            Tree::Arr(v) => {
                let mut seq = s.serialize_seq(Some(v.len()))?;
                for t in v {
                    seq.serialize_element(t)?;
                }
                seq.end()
            }
            Tree::Obj(v) => {
                let mut m = s.serialize_map(Some(v.len()))?;
                for (k, t) in v {
                    m.serialize_entry(k, t)?;
                }
                m.end()
            }
        }
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Tree;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Tree, E> {
        Ok(Tree::Null)
    }
    fn visit_none<E>(self) -> Result<Tree, E> {
        Ok(Tree::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Tree, D::Error> {
        d.deserialize_any(TreeVisitor)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Tree, E> {
        Ok(Tree::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Tree, E> {
        Ok(Tree::Int(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Tree, E> {
        Ok(Tree::Uint(n))
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Tree, E> {
        if x.is_finite() {
            Ok(Tree::Float(x))
        } else {
            Err(E::custom("a JSON number must be finite"))
        }
    }
    fn visit_str<E>(self, v: &str) -> Result<Tree, E> {
        Ok(Tree::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Tree, E> {
        Ok(Tree::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Tree, A::Error> {
        let mut v = Vec::new();
        while let Some(t) = a.next_element::<Tree>()? {
            v.push(t);
        }
        Ok(Tree::Arr(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Tree, A::Error> {
        let mut v: Vec<(String, Tree)> = Vec::new();
        while let Some(k) = a.next_key::<String>()? {
            let t = a.next_value::<Tree>()?;
            v.push((k, t));
        }
        Ok(Tree::Obj(v))
    }
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tree, D::Error> {
        d.deserialize_any(TreeVisitor)
    }
}

struct TreeParser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl TreeParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }
    fn bad<T>(&self) -> Result<T, String> {
        Err(format!("invalid JSON at byte {}", self.i))
    }
    fn eat(&mut self, b: u8) -> Result<(), String> {
        self.ws();
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            Ok(())
        } else {
            self.bad()
        }
    }
    fn value(&mut self) -> Result<Tree, String> {
        self.ws();
        self.depth += 1;
        if self.depth > 128 {
            return self.bad();
        }
        let t = match self.s.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let k = self.string()?;
                        self.eat(b':')?;
                        v.push((k, self.value()?));
                        self.ws();
                        match self.s.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.bad(),
                        }
                    }
                }
                Tree::Obj(v)
            }
            Some(b'[') => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        v.push(self.value()?);
                        self.ws();
                        match self.s.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.bad(),
                        }
                    }
                }
                Tree::Arr(v)
            }
            Some(b'"') => Tree::Str(self.string()?),
            Some(b't') => self.word("true", Tree::Bool(true))?,
            Some(b'f') => self.word("false", Tree::Bool(false))?,
            Some(b'n') => self.word("null", Tree::Null)?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            _ => return self.bad(),
        };
        self.depth -= 1;
        Ok(t)
    }
    fn word(&mut self, w: &str, t: Tree) -> Result<Tree, String> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(t)
        } else {
            self.bad()
        }
    }
    fn digits(&mut self) -> Result<(), String> {
        let start = self.i;
        while matches!(self.s.get(self.i), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        if self.i == start {
            self.bad()
        } else {
            Ok(())
        }
    }
    fn number(&mut self) -> Result<Tree, String> {
        let start = self.i;
        let mut integral = true;
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        if self.s.get(self.i) == Some(&b'0') {
            self.i += 1;
        } else {
            self.digits()?;
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            self.digits()?;
            integral = false;
        }
        if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.digits()?;
            integral = false;
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
        if integral {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Tree::Int(n));
            }
            if let Ok(n) = text.parse::<u64>() {
                return Ok(Tree::Uint(n));
            }
        }
        match text.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Tree::Float(x)),
            _ => Err(format!("number out of range at byte {start}")),
        }
    }
    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.s.get(self.i..self.i + 4).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u32::from_str_radix(h, 16).ok());
        match h {
            Some(v) => {
                self.i += 4;
                Ok(v)
            }
            None => self.bad(),
        }
    }
    fn string(&mut self) -> Result<String, String> {
        if self.s.get(self.i) != Some(&b'"') {
            return self.bad();
        }
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.s.get(self.i).copied() {
                None => return self.bad(),
                Some(b'"') => {
                    self.i += 1;
                    return String::from_utf8(out).map_err(|e| e.to_string());
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = self.s.get(self.i).copied();
                    self.i += 1;
                    let ch = match c {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let hi = self.hex4()?;
                            let code = if (0xd800..0xdc00).contains(&hi) && self.s[self.i..].starts_with(b"\\u") {
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return self.bad();
                                }
                                0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                            } else {
                                hi
                            };
                            match char::from_u32(code) {
                                Some(c) => c,
                                None => return self.bad(), // a lone surrogate
                            }
                        }
                        _ => return self.bad(),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                Some(b) if b < 0x20 => return self.bad(),
                Some(b) => {
                    out.push(b);
                    self.i += 1;
                }
            }
        }
    }
}

// ---------------------------------------------------------------- requests

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(t) => s.serialize_str(t),
            Content::Json(j) => Tree::parse(j.trim()).map_err(S::Error::custom)?.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Content, D::Error> {
        Ok(match Tree::deserialize(d)? {
            Tree::Str(s) => Content::Text(s),
            other => {
                let mut text = String::new();
                other.write(&mut text);
                Content::Json(text)
            }
        })
    }
}

/// `{label: description | null}` of a choice.
struct ChoiceCriteria<'a>(&'a [(String, Option<Content>)]);

impl Serialize for ChoiceCriteria<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// `{"true"?, "false"?}` of a noul.
struct NoulCriteria<'a>(&'a Noul);

impl Serialize for NoulCriteria<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0.when_true.is_some() as usize + self.0.when_false.is_some() as usize;
        let mut m = s.serialize_map(Some(n))?;
        if let Some(c) = &self.0.when_true {
            m.serialize_entry("true", c)?;
        }
        if let Some(c) = &self.0.when_false {
            m.serialize_entry("false", c)?;
        }
        m.end()
    }
}

impl Serialize for Question {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (kind, instructions) = match self {
            Question::Choice(c) => ("choice", &c.instructions),
            Question::Score(q) => ("score", &q.instructions),
            Question::Noul(n) => ("noul", &n.instructions),
        };
        let described_noul = matches!(self, Question::Noul(n) if n.when_true.is_some() || n.when_false.is_some());
        let len = 1 + instructions.is_some() as usize + (!matches!(self, Question::Noul(_)) || described_noul) as usize;
        let mut m = s.serialize_map(Some(len))?;
        m.serialize_entry("type", kind)?;
        if let Some(i) = instructions {
            m.serialize_entry("instructions", i)?;
        }
        match self {
            Question::Choice(c) => m.serialize_entry("criteria", &ChoiceCriteria(&c.criteria))?,
            Question::Score(q) => m.serialize_entry("criteria", &q.criteria)?,
            Question::Noul(n) if described_noul => m.serialize_entry("criteria", &NoulCriteria(n))?,
            Question::Noul(_) => {}
        }
        m.end()
    }
}

impl Serialize for Choice {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Question::Choice(self.clone()).serialize(s)
    }
}

impl Serialize for Score {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Question::Score(self.clone()).serialize(s)
    }
}

impl Serialize for Noul {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Question::Noul(self.clone()).serialize(s)
    }
}

struct Questions<'a>(&'a [(String, Question)]);

impl Serialize for Questions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, q) in self.0 {
            m.serialize_entry(k, q)?;
        }
        m.end()
    }
}

/// The body [`Request::to_json`] writes ("model" when set, "state", "questions").
impl Serialize for Request {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2 + self.model.is_some() as usize))?;
        m.serialize_entry("state", &self.state)?;
        if let Some(model) = &self.model {
            m.serialize_entry("model", model)?;
        }
        m.serialize_entry("questions", &Questions(&self.questions))?;
        m.end()
    }
}

/// A question's criteria before its type is known (the keys may come in any order).
fn content_of<E: de::Error>(t: Tree, what: &str) -> Result<Content, E> {
    match t {
        Tree::Str(s) => Ok(Content::Text(s)),
        Tree::Null => Err(E::custom(format!("{what} must not be null"))),
        other => {
            let mut text = String::new();
            other.write(&mut text);
            Ok(Content::Json(text))
        }
    }
}

fn question_from<E: de::Error>(kind: &str, instructions: Option<Content>, criteria: Option<Tree>) -> Result<Question, E> {
    match kind {
        "choice" => {
            let entries = match criteria {
                Some(Tree::Obj(v)) => v,
                _ => return Err(E::custom("a choice's \"criteria\" must be an object {label: description | null}")),
            };
            let mut criteria = Vec::with_capacity(entries.len());
            for (label, d) in entries {
                let d = match d {
                    Tree::Null => None,
                    t => Some(content_of::<E>(t, "a description")?),
                };
                criteria.push((label, d));
            }
            Ok(Question::Choice(Choice { instructions, criteria }))
        }
        "score" => {
            let levels = match criteria {
                Some(Tree::Arr(v)) => v,
                _ => return Err(E::custom("a score's \"criteria\" must be an array of level descriptions")),
            };
            let criteria = levels.into_iter().map(|t| content_of::<E>(t, "a level")).collect::<Result<Vec<_>, E>>()?;
            Ok(Question::Score(Score { instructions, criteria }))
        }
        "noul" => {
            let mut n = Noul { instructions, when_true: None, when_false: None };
            match criteria {
                None => {}
                Some(Tree::Obj(v)) => {
                    for (k, t) in v {
                        let c = match t {
                            Tree::Null => None,
                            t => Some(content_of::<E>(t, "an outcome")?),
                        };
                        match k.as_str() {
                            "true" => n.when_true = c,
                            "false" => n.when_false = c,
                            other => return Err(E::custom(format!("a noul's criteria has \"true\" and \"false\", not {other:?}"))),
                        }
                    }
                }
                Some(_) => return Err(E::custom("a noul's \"criteria\" must be an object {\"true\"?, \"false\"?}")),
            }
            Ok(Question::Noul(n))
        }
        other => Err(E::unknown_variant(other, &["choice", "score", "noul"])),
    }
}

struct QuestionVisitor;

impl<'de> Visitor<'de> for QuestionVisitor {
    type Value = Question;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a question {\"type\", \"instructions\"?, \"criteria\"}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Question, A::Error> {
        let (mut kind, mut instructions, mut criteria) = (None::<String>, None::<Content>, None::<Tree>);
        while let Some(k) = a.next_key::<String>()? {
            match k.as_str() {
                "type" => kind = Some(a.next_value()?),
                "instructions" => instructions = Some(a.next_value()?),
                "criteria" => criteria = Some(a.next_value()?),
                other => return Err(de::Error::unknown_field(other, &["type", "instructions", "criteria"])),
            }
        }
        let kind = kind.ok_or_else(|| de::Error::missing_field("type"))?;
        question_from(&kind, instructions, criteria)
    }
}

impl<'de> Deserialize<'de> for Question {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Question, D::Error> {
        d.deserialize_map(QuestionVisitor)
    }
}

macro_rules! question_kind {
    ($t:ident, $name:literal) => {
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                match Question::deserialize(d)? {
                    Question::$t(q) => Ok(q),
                    _ => Err(de::Error::custom(concat!("not a ", $name, " question"))),
                }
            }
        }
    };
}
question_kind!(Choice, "choice");
question_kind!(Score, "score");
question_kind!(Noul, "noul");

/// `{name: question}` in order.
struct QuestionsSeed;

impl<'de> DeserializeSeed<'de> for QuestionsSeed {
    type Value = Vec<(String, Question)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for QuestionsSeed {
    type Value = Vec<(String, Question)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of questions {name: question}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut v = Vec::new();
        while let Some(k) = a.next_key::<String>()? {
            let q = a.next_value::<Question>()?;
            v.push((k, q));
        }
        Ok(v)
    }
}

struct RequestVisitor;

impl<'de> Visitor<'de> for RequestVisitor {
    type Value = Request;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a /v1/systemone request {\"model\"?, \"state\", \"questions\"}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Request, A::Error> {
        let (mut state, mut model, mut questions) = (None::<Content>, None::<Option<String>>, None);
        while let Some(k) = a.next_key::<String>()? {
            match k.as_str() {
                "state" => state = Some(a.next_value()?),
                "model" => model = Some(a.next_value()?),
                "questions" => questions = Some(a.next_value_seed(QuestionsSeed)?),
                // Anything else (the budgets max_len / head_max_len, ...) would be lost.
                other => return Err(de::Error::unknown_field(other, &["model", "state", "questions"])),
            }
        }
        let state = state.ok_or_else(|| de::Error::missing_field("state"))?;
        let questions = questions.ok_or_else(|| de::Error::missing_field("questions"))?;
        Ok(Request { state, model: model.flatten(), questions })
    }
}

/// A `/v1/systemone` body; [`Request::to_json`] then checks it as for a built request.
impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Request, D::Error> {
        d.deserialize_map(RequestVisitor)
    }
}
