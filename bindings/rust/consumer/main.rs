// The consumer program of consumer-test.sh (copied into each new Cargo project there):
// answers a request the way a user of the crate would and writes the typed answers in the
// cross-check's dump format (bindings/run-consumers.sh).
//
// usage: consumer MODEL.gguf REQUEST.json [DUMP]
use std::fmt::Write;

fn dump(r: &skycmd::Response) -> String {
    let mut s = format!("input_tokens {}\n", r.input_tokens);
    for a in r.answers.values() {
        let kind = match a.kind {
            skycmd::AnswerType::Choice => "choice",
            skycmd::AnswerType::Score => "score",
            skycmd::AnswerType::Noul => "noul",
        };
        // Every double as the 16 hex digits of its bits; an absent confidence as "none".
        let confidence = a.confidence.map_or("none".to_string(), |c| format!("{:016x}", c.to_bits()));
        let choice = a.choice.as_deref().unwrap_or("");
        writeln!(s, "answer {} {kind} choice={choice} value={:016x} confidence={confidence}", a.id, a.value.to_bits()).unwrap();
        for p in &a.probabilities {
            writeln!(s, "option {} {:016x}", p.key, p.p.to_bits()).unwrap();
        }
    }
    s
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: consumer MODEL.gguf REQUEST.json [DUMP]".into());
    }
    println!("libskycmd {} ({})", skycmd::version(), skycmd::build_id());
    let model = skycmd::Model::open(&args[1], &skycmd::Options::new())?;
    let response = model.decide(&std::fs::read_to_string(&args[2])?)?;
    println!("model {}, {} input tokens", response.model, response.input_tokens);
    for (id, a) in &response.answers {
        let probabilities: Vec<String> = a.probabilities.iter().map(|p| format!("{}={:.4}", p.key, p.p)).collect();
        println!("  {} ({:?}): choice {:?} value {:.4} confidence {:?} [{}]", id, a.kind, a.choice, a.value, a.confidence, probabilities.join(" "));
    }
    if let Some(path) = args.get(3) {
        std::fs::write(path, dump(&response))?;
    }
    // The streaming batch: one result per request, in order; a bad one does not stop it.
    let request = std::fs::read_to_string(&args[2])?;
    let mut stream = Vec::new();
    for r in model.decide_each([request.as_str(), "{\"state\": 1", request.as_str()])? {
        match r {
            Ok(resp) if resp == response => stream.push("same".to_string()),
            Ok(_) => return Err("decide_each answered differently from decide".into()),
            Err(e) => stream.push(e.code().to_string()),
        }
    }
    println!("stream: {}", stream.join(" "));
    model.close()?;
    // The built-in model, where the library finds it (beside an installed libskycmd.so; a
    // `bundled` program has the library inside itself: its configured data directory).
    match skycmd::default_model_path() {
        Ok(p) => println!("built-in model {}: {}", skycmd::Model::open_default(&skycmd::Options::new())?.name(), p.display()),
        Err(e) if e.is_not_found() => println!("built-in model: not found ({})", e.message),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
