//! What one script may use, and what it printed.

use std::time::Duration;

/// A script's bounds; the README's "Code mode" lists them.
#[derive(Debug, Clone)]
pub struct ScriptLimits {
    /// The script's own running time (its engine's work). Time spent
    /// waiting on its tool calls does not count: each call has its own
    /// deadline, and the number of calls is bounded.
    pub deadline: Duration,
    /// The same, for a script run in the background.
    pub background_deadline: Duration,
    /// The engine's memory, in bytes.
    pub memory_bytes: usize,
    /// Tool calls one script may make.
    pub max_calls: u32,
    /// What the result keeps of printed lines and the returned value
    /// together, in bytes; the rest is cut with a note.
    pub output_bytes: usize,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        Self {
            deadline: Duration::from_secs(30),
            background_deadline: Duration::from_secs(600),
            memory_bytes: 256 << 20,
            max_calls: 200,
            output_bytes: 100 << 10,
        }
    }
}

/// The lines a script printed, kept up to the output cap.
#[derive(Debug, Default)]
pub struct ScriptOutput {
    text: String,
    cap: usize,
    /// Bytes printed past the cap.
    dropped: usize,
}

impl ScriptOutput {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    pub fn log(&mut self, line: &str) {
        self.keep(line);
        self.keep("\n");
    }

    fn keep(&mut self, text: &str) {
        let room = self.cap.saturating_sub(self.text.len());
        if text.len() <= room {
            self.text.push_str(text);
            return;
        }
        let mut at = room;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        self.text.push_str(&text[..at]);
        self.dropped += text.len() - at;
    }

    /// The printed lines, then what the script returned, within the cap.
    pub fn finish(mut self, returned: Option<&str>) -> String {
        if let Some(value) = returned {
            self.keep(value);
        }
        let mut text = self.text.trim_end_matches('\n').to_string();
        if self.dropped > 0 {
            text.push_str(&format!(
                "\n[{} more bytes of output were cut: the script's output is capped at {} bytes]",
                self.dropped, self.cap
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_kept_to_its_cap_and_says_what_was_cut() {
        let mut output = ScriptOutput::new(10);
        output.log("héllo");
        output.log("world, and more");
        assert_eq!(
            output.finish(Some("42")),
            "héllo\nwor\n[15 more bytes of output were cut: the script's output is capped at 10 bytes]"
        );
        let mut output = ScriptOutput::new(100);
        output.log("a");
        assert_eq!(output.finish(Some("{\"n\":1}")), "a\n{\"n\":1}");
        assert_eq!(ScriptOutput::new(100).finish(None), "");
    }
}
