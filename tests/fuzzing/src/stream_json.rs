//! stream-json user lines (`--input-format stream-json`, the SDKs).
//! Check: a line that parses, written again as the SDK writes a user
//! message, parses to the same message.

use carapace::conversation::stream_input::parse_input_line;
use serde_json::json;

pub fn run(data: &[u8]) {
    let Some(line) = crate::text(data) else {
        return;
    };
    let Ok(Some(input)) = parse_input_line(line) else {
        return;
    };
    let mut blocks: Vec<serde_json::Value> = input
        .images
        .iter()
        .map(|image| json!({"type": "image", "source": image}))
        .collect();
    blocks.push(json!({"type": "text", "text": input.text}));
    let again = json!({
        "type": "user",
        "message": {"role": "user", "content": blocks},
        "uuid": input.uuid,
    });
    assert_eq!(
        parse_input_line(&again.to_string()),
        Ok(Some(input)),
        "a user line changed when written again: {again}"
    );
}
