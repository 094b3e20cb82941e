//! Skill: the model starts one of the session's skills or custom commands
//! (Claude Code's name and input). The call is run by the pipeline itself
//! (`pipeline/skill.rs`), because a skill's `` !`command` `` spans are Bash
//! calls that go through the pipeline like the model's own.

use crate::policy::CallApproval;
use crate::sandbox::{CallContext, ToolDefinition, ToolFailure, ToolOutput};
use crate::tools::NativeTool;
use futures::future::BoxFuture;
use serde_json::{Value, json};

pub const SKILL_TOOL: &str = "Skill";

const DESCRIPTION: &str = "Starts a skill: a prepared set of instructions (and sometimes files) for a kind of task, written by the user or the project.

- The skills you may start are listed in a system reminder in the conversation. Start only a listed skill, or one the user typed as `/name`; never guess a name.
- Set `skill` to the skill's exact name, without a leading slash, and `args` to what the skill should work on, if anything.
- When a listed skill fits the task, start it before doing the task another way, and then follow the instructions it returns.
- A message holding a <command-name> block means the skill is already loaded: follow it instead of starting it again.
- Built-in commands such as /compact are not skills.";

pub fn definition() -> ToolDefinition {
    ToolDefinition {
        name: SKILL_TOOL.into(),
        description: DESCRIPTION.into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "skill": {"type": "string", "description": "The name of a skill from the available-skills list. Do not guess names."},
                "args": {"type": "string", "description": "Optional arguments for the skill"}
            },
            "required": ["skill"],
            "additionalProperties": false
        })
        .to_string(),
        annotations: Default::default(),
    }
}

/// A skill that pre-approves tools, or says more than what it is, asks
/// before it starts; the pipeline lets a plain one through with
/// [`Ceiling::none`].
pub fn approval() -> CallApproval {
    CallApproval::Asks
}

/// The registry's entry for the tool. Its calls never reach it: the
/// pipeline runs them. Anything that calls it directly gets an error.
pub struct SkillTool;

impl NativeTool for SkillTool {
    fn concurrency_safe(&self) -> bool {
        false
    }

    fn starts_skills(&self) -> bool {
        true
    }

    fn presentation(&self) -> crate::tools::Presentation {
        crate::tools::Presentation {
            action: Some("start a skill"),
            subject: crate::tools::Subject::Field("skill"),
            ..crate::tools::Presentation::UNKNOWN
        }
    }

    fn call<'a>(
        &'a self,
        _context: &'a CallContext,
        _input: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        crate::tools::run_by_the_pipeline("the Skill tool")
    }
}
