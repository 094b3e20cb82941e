//! The model's event stream: SSE decoding, each event parsed, the
//! response assembled. Checks: cutting the byte stream anywhere gives the
//! same events (or fails alike); an assembled response survives a JSON
//! round trip unchanged.

use carapace::model::{ContentBlock, ResponseAssembler, SseDecoder, SseEvent, StreamEvent};

/// Small enough that the fuzzer reaches it.
const LIMIT: usize = 4096;

pub fn run(data: &[u8]) {
    let Some((&seed, stream)) = data.split_first() else {
        return;
    };
    let whole = decode(&[stream]);
    let pieces = decode(&cut(stream, seed));
    match (&whole, &pieces) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "cutting the stream changed its events"),
        (Err(_), Err(_)) => {}
        _ => panic!("cutting the stream changed whether it decodes: {whole:?} / {pieces:?}"),
    }
    if let Ok(events) = whole {
        assemble(&events);
    }
}

fn decode(chunks: &[&[u8]]) -> Result<Vec<SseEvent>, String> {
    let mut decoder = SseDecoder::new(LIMIT);
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(decoder.feed(chunk).map_err(|e| e.to_string())?);
    }
    Ok(events)
}

/// `stream` in pieces of 1 to 8 bytes, their lengths drawn from `seed`.
fn cut(stream: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 1;
    let mut pieces = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let len = (state % 8 + 1) as usize;
        let (piece, tail) = rest.split_at(len.min(rest.len()));
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

fn assemble(events: &[SseEvent]) {
    let mut assembler = ResponseAssembler::new();
    for event in events {
        match StreamEvent::parse(&event.event, &event.data) {
            Ok(Some(parsed)) => {
                if assembler.push(parsed).is_err() {
                    return;
                }
            }
            Ok(None) => {}
            Err(_) => return,
        }
    }
    let content = assembler.content();
    let text = match serde_json::to_string(&content) {
        Ok(text) => text,
        Err(e) => panic!("an assembled response does not serialise: {e}"),
    };
    match serde_json::from_str::<Vec<ContentBlock>>(&text) {
        Ok(back) => assert_eq!(back, content, "the response changed in a round trip"),
        Err(e) => panic!("an assembled response does not read back: {e}: {text}"),
    }
}
