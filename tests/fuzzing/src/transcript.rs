//! Transcripts on disk. Checks: a history written step by step (messages
//! appended, the last one growing as its blocks stream, file checkpoints
//! recorded between them) reads back equal, checkpoints included;
//! the same file cut at any byte reads back as a prefix of it, its torn
//! tail said, never an error or a panic; any bytes at all load or fail
//! with a clear error.

use arbitrary::{Arbitrary, Unstructured};
use carapace::agent::HistoryLog;
use carapace::checkpoints::{Before, CheckpointLog, CheckpointRecord};
use carapace::model::{ContentBlock, Message, Role};
use carapace::transcript::{Opening, Transcript, TranscriptPlace, load};

#[derive(Debug, Arbitrary)]
enum Step {
    /// A new message of the other role.
    Message(Vec<Text>),
    /// More blocks on the last message (as a response streams).
    Grow(Vec<Text>),
    /// A turn begins, or a file is kept in it.
    Checkpoint(String, Option<(String, FileBefore)>),
}

#[derive(Debug, Arbitrary)]
enum FileBefore {
    Missing,
    Content(Vec<u8>),
    Unkept(String),
}

#[derive(Debug, Arbitrary)]
enum Text {
    Text(String),
    Thinking(String, String),
}

pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let path = carapace::transcript::transcript_path(dir.path(), "fuzz");
    if mode % 2 == 0 {
        // Foreign bytes: loaded or refused, nothing else.
        if std::fs::write(&path, rest).is_ok() {
            let _ = load(&path);
        }
        return;
    }
    let mut input = Unstructured::new(rest);
    let Ok(steps) = Vec::<Step>::arbitrary(&mut input) else {
        return;
    };
    let cut_at = input.arbitrary::<u32>().unwrap_or(0);
    let Ok(transcript) = Transcript::open(
        TranscriptPlace::File(path.clone()),
        "fuzz",
        dir.path(),
        Opening::New {
            forked_from: None,
            history: &[],
            name: None,
        },
    ) else {
        return;
    };
    let (history, checkpoints) = write(&transcript, steps);
    transcript.flush();
    drop(transcript);
    match load(&path) {
        Ok(loaded) => {
            assert_eq!(loaded.messages, history, "the history read back otherwise");
            assert_eq!(
                loaded.checkpoints, checkpoints,
                "the checkpoints read back otherwise"
            );
        }
        Err(e) => panic!("a transcript carapace wrote does not load: {e}"),
    }
    let Ok(bytes) = std::fs::read(&path) else {
        return;
    };
    let cut = cut_at as usize % (bytes.len() + 1);
    if std::fs::write(&path, &bytes[..cut]).is_err() {
        return;
    }
    if let Ok(loaded) = load(&path) {
        let prefix = loaded.messages.len() <= history.len()
            && loaded
                .messages
                .iter()
                .zip(&history)
                .all(|(a, b)| a.role == b.role && b.content.starts_with(&a.content));
        assert!(
            prefix,
            "a cut transcript is not a prefix of what was written"
        );
    }
}

/// Applies `steps` as the loop would, syncing after each; the history
/// and the checkpoints recorded.
fn write(transcript: &Transcript, steps: Vec<Step>) -> (Vec<Message>, Vec<CheckpointRecord>) {
    let mut history: Vec<Message> = Vec::new();
    let mut checkpoints = Vec::new();
    for step in steps {
        match step {
            Step::Message(texts) => {
                let role = match history.last().map(|m| m.role) {
                    Some(Role::User) => Role::Assistant,
                    _ => Role::User,
                };
                history.push(Message {
                    role,
                    content: blocks(texts),
                });
            }
            Step::Grow(texts) => match history.last_mut() {
                Some(last) => last.content.extend(blocks(texts)),
                None => continue,
            },
            Step::Checkpoint(turn, file) => {
                let record = CheckpointRecord {
                    turn,
                    file: file.map(|(path, kept)| {
                        let before = match kept {
                            FileBefore::Missing => Before::Missing,
                            FileBefore::Content(bytes) => Before::Content(bytes),
                            FileBefore::Unkept(why) => Before::NotKept(why),
                        };
                        (path.into(), before)
                    }),
                    written: None,
                };
                transcript.record(&record);
                checkpoints.push(record);
                continue;
            }
        }
        transcript.sync(&history);
    }
    (history, checkpoints)
}

fn blocks(texts: Vec<Text>) -> Vec<ContentBlock> {
    texts
        .into_iter()
        .map(|text| match text {
            Text::Text(text) => ContentBlock::Text { text },
            Text::Thinking(thinking, signature) => ContentBlock::Thinking {
                thinking,
                signature,
            },
        })
        .collect()
}
