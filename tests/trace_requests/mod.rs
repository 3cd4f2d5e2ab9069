//! Shared by the selection tests: the requests of a trace of
//! one-question sessions.

/// `(message, called tool)` of a trace of one-question sessions.
pub fn requests(path: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut msg = None;
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        match v["event"].as_str() {
            Some("user_message") => msg = v["text"].as_str().map(String::from),
            Some("tool_call") => {
                out.push((msg.take().unwrap(), v["tool"].as_str().unwrap().to_string()))
            }
            _ => {}
        }
    }
    out
}
