//! A response read to its end in one call: for the requests that are not
//! the conversation — auto mode's classifier, a prompt hook's judge, a web
//! search, a compaction summary — none of which shows text as it streams.

use super::{ContentBlock, MessagesRequest, Model, ModelError, ResponseAssembler};
use futures::StreamExt;

/// The whole of one response, assembled; an error when the stream breaks
/// or ends before `message_stop`.
pub async fn whole_response(
    model: &dyn Model,
    request: &MessagesRequest,
) -> Result<ResponseAssembler, ModelError> {
    let mut events = model.stream(request).await?;
    let mut assembler = ResponseAssembler::new();
    while let Some(event) = events.next().await {
        assembler.push(event?)?;
    }
    if !assembler.is_stopped() {
        return Err(ModelError::Stream(
            "the stream ended before message_stop".into(),
        ));
    }
    Ok(assembler)
}

impl ResponseAssembler {
    /// The text blocks, joined.
    pub fn text(&self) -> String {
        self.content()
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}
