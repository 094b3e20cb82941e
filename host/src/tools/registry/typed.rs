//! [`TypedNativeTool`]: a tool the host runs itself whose input is a type
//! of its own. The pipeline has checked the input against the tool's
//! schema; it is read into `Input` here, once, so the tool works on fields
//! rather than on JSON, and an input that does not fit is the model's
//! input error, never a default the tool runs on.

use super::{NativeTool, Presentation};
use crate::sandbox::{CallContext, ToolFailure, ToolOutput};
use futures::future::BoxFuture;
use serde::Deserialize as _;
use serde_json::Value;

pub trait TypedNativeTool: Send + Sync {
    type Input: serde::de::DeserializeOwned + Send;

    /// Whether several calls may run at once.
    const CONCURRENCY_SAFE: bool;

    /// How its calls are shown.
    const PRESENTATION: Presentation;

    fn run<'a>(
        &'a self,
        context: &'a CallContext,
        input: Self::Input,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>>;
}

impl<T: TypedNativeTool> NativeTool for T {
    fn concurrency_safe(&self) -> bool {
        T::CONCURRENCY_SAFE
    }

    fn presentation(&self) -> Presentation {
        T::PRESENTATION
    }

    fn call<'a>(
        &'a self,
        context: &'a CallContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        match T::Input::deserialize(input) {
            Ok(input) => self.run(context, input),
            Err(e) => Box::pin(std::future::ready(Err(ToolFailure::InvalidInput(format!(
                "the input does not fit the tool: {e}"
            ))))),
        }
    }
}
