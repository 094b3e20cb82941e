//! An MCP server's question for the person at the screen (elicitation):
//! a form of flat fields asked one by one, each checked against its type
//! as it is entered, or a page to visit (URL mode). Enter answers the
//! field (the last one sends the form), Esc cancels, Ctrl-D declines.

use super::text::wrap;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use serde_json::{Map, Value};

/// What the server asks.
#[derive(Debug, Clone, PartialEq)]
pub struct FormRequest {
    pub server: String,
    pub message: String,
    /// URL mode: the page the person is sent to.
    pub url: Option<String>,
    /// Form mode: the schema (an object of flat properties).
    pub schema: Option<Value>,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum FormAnswer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

#[derive(Debug, Clone, PartialEq)]
enum FieldKind {
    Text,
    Number,
    Integer,
    Boolean,
    Choice(Vec<String>),
}

#[derive(Debug, Clone)]
struct Field {
    name: String,
    /// Its title, or its name.
    label: String,
    description: Option<String>,
    kind: FieldKind,
    required: bool,
}

impl Field {
    fn of(name: &str, property: &Value, required: bool) -> Self {
        let choices = property["enum"].as_array().map(|values| {
            values
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        });
        let kind = match (choices, property["type"].as_str()) {
            (Some(choices), _) => FieldKind::Choice(choices),
            (None, Some("number")) => FieldKind::Number,
            (None, Some("integer")) => FieldKind::Integer,
            (None, Some("boolean")) => FieldKind::Boolean,
            _ => FieldKind::Text,
        };
        Self {
            name: name.to_string(),
            label: property["title"].as_str().unwrap_or(name).to_string(),
            description: property["description"].as_str().map(str::to_string),
            kind,
            required,
        }
    }

    /// What was typed, as the field's type reads it.
    fn read(&self, typed: &str) -> Result<Value, String> {
        let typed = typed.trim();
        match &self.kind {
            FieldKind::Text => Ok(Value::String(typed.to_string())),
            FieldKind::Number => typed
                .parse::<f64>()
                .map(Value::from)
                .map_err(|_| format!("{} is a number", self.label)),
            FieldKind::Integer => typed
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{} is a whole number", self.label)),
            FieldKind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Value::Bool(true)),
                "n" | "no" | "false" => Ok(Value::Bool(false)),
                _ => Err(format!("{}: yes or no", self.label)),
            },
            FieldKind::Choice(choices) => {
                let by_number = typed
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| choices.get(n.wrapping_sub(1)));
                by_number
                    .or_else(|| choices.iter().find(|c| c.as_str() == typed))
                    .map(|c| Value::String(c.clone()))
                    .ok_or_else(|| format!("{}: one of {}", self.label, choices.join(", ")))
            }
        }
    }

    fn hint(&self) -> String {
        match &self.kind {
            FieldKind::Text => String::new(),
            FieldKind::Number => " (a number)".into(),
            FieldKind::Integer => " (a whole number)".into(),
            FieldKind::Boolean => " (yes/no)".into(),
            FieldKind::Choice(choices) => {
                let listed: Vec<String> = choices
                    .iter()
                    .enumerate()
                    .map(|(i, c)| format!("{}. {c}", i + 1))
                    .collect();
                format!(" ({})", listed.join(", "))
            }
        }
    }
}

#[derive(Debug)]
pub struct ElicitForm {
    pub request: FormRequest,
    fields: Vec<Field>,
    at: usize,
    typed: String,
    values: Map<String, Value>,
    error: Option<String>,
}

impl ElicitForm {
    pub fn new(request: FormRequest) -> Self {
        let schema = request.schema.clone().unwrap_or(Value::Null);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields = schema["properties"]
            .as_object()
            .map(|properties| {
                properties
                    .iter()
                    .map(|(name, property)| {
                        Field::of(name, property, required.contains(&name.as_str()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            request,
            fields,
            at: 0,
            typed: String::new(),
            values: Map::new(),
            error: None,
        }
    }

    /// A key; `Some` once the form is answered.
    pub fn key(&mut self, key: KeyEvent) -> Option<FormAnswer> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return Some(FormAnswer::Cancel),
            KeyCode::Char('d') if ctrl => return Some(FormAnswer::Decline),
            KeyCode::Enter => return self.enter(),
            KeyCode::Backspace => {
                self.typed.pop();
            }
            KeyCode::Char(c) if !ctrl => self.typed.push(c),
            _ => {}
        }
        None
    }

    pub fn paste(&mut self, text: &str) {
        self.typed.push_str(&text.replace(['\r', '\n'], " "));
    }

    /// Enter: the page visited (URL mode), or the field answered and the
    /// next one asked; the last sends the form.
    fn enter(&mut self) -> Option<FormAnswer> {
        let Some(field) = self.fields.get(self.at) else {
            return Some(FormAnswer::Accept(std::mem::take(&mut self.values)));
        };
        if self.typed.trim().is_empty() && field.required {
            self.error = Some(format!("{} is needed", field.label));
            return None;
        }
        if self.typed.trim().is_empty() {
            self.error = None;
        } else {
            match field.read(&self.typed) {
                Ok(value) => {
                    self.values.insert(field.name.clone(), value);
                    self.error = None;
                }
                Err(error) => {
                    self.error = Some(error);
                    return None;
                }
            }
        }
        self.typed.clear();
        self.at += 1;
        (self.at >= self.fields.len()).then(|| FormAnswer::Accept(std::mem::take(&mut self.values)))
    }

    pub fn render(&self, width: usize) -> Vec<Line<'static>> {
        let accent = Style::new().fg(Color::Cyan);
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let dim = Style::new().add_modifier(Modifier::DIM);
        let mut rows = vec![Line::styled("─".repeat(width), accent)];
        let title = format!("{} asks: {}", self.request.server, self.request.message);
        rows.extend(wrap(&Line::styled(title, bold), width, "  "));
        if let Some(url) = &self.request.url {
            rows.extend(wrap(&Line::raw(format!("  Open {url}")), width, "  "));
            rows.push(Line::styled(
                "  Enter: done · Ctrl-D: decline · Esc: cancel",
                dim,
            ));
            return rows;
        }
        for (i, field) in self.fields.iter().enumerate() {
            let mark = if field.required { "*" } else { "" };
            let line = match i.cmp(&self.at) {
                std::cmp::Ordering::Less => {
                    let value = self
                        .values
                        .get(&field.name)
                        .map_or("—".into(), Value::to_string);
                    Line::styled(format!("  {}{mark}: {value}", field.label), dim)
                }
                std::cmp::Ordering::Equal => Line::raw(format!(
                    "› {}{mark}{}: {}▌",
                    field.label,
                    field.hint(),
                    self.typed
                )),
                std::cmp::Ordering::Greater => {
                    Line::styled(format!("  {}{mark}", field.label), dim)
                }
            };
            rows.extend(wrap(&line, width, "    "));
            if i == self.at
                && let Some(description) = &field.description
            {
                rows.extend(wrap(
                    &Line::styled(format!("    {description}"), dim),
                    width,
                    "    ",
                ));
            }
        }
        if let Some(error) = &self.error {
            rows.push(Line::styled(
                format!("  {error}"),
                Style::new().fg(Color::Red),
            ));
        }
        rows.push(Line::styled(
            "  Enter: next · Ctrl-D: decline · Esc: cancel",
            dim,
        ));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::text::plain;
    use serde_json::json;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(form: &mut ElicitForm, text: &str) -> Option<FormAnswer> {
        for c in text.chars() {
            form.key(key(KeyCode::Char(c)));
        }
        form.key(key(KeyCode::Enter))
    }

    fn shelf_form() -> ElicitForm {
        ElicitForm::new(FormRequest {
            server: "library".into(),
            message: "Which shelf for Dune?".into(),
            url: None,
            schema: Some(json!({"type": "object", "properties": {
                "shelf": {"type": "string", "title": "Shelf"},
                "copies": {"type": "integer"},
                "signed": {"type": "boolean"},
                "room": {"type": "string", "enum": ["north", "south"]}
            }, "required": ["shelf"]})),
        })
    }

    #[test]
    fn each_field_is_read_as_its_type_and_the_last_sends_the_form() {
        let mut form = shelf_form();
        // A required field is not skipped; a wrong number is said, not sent.
        assert_eq!(form.key(key(KeyCode::Enter)), None);
        assert_eq!(typed(&mut form, "SCI"), None);
        assert_eq!(typed(&mut form, "many"), None);
        assert!(plain(&form.render(60)).contains("copies is a whole number"));
        form.typed.clear();
        assert_eq!(typed(&mut form, "3"), None);
        assert_eq!(typed(&mut form, "yes"), None);
        let answer = typed(&mut form, "2");
        let mut expected = Map::new();
        expected.insert("shelf".into(), json!("SCI"));
        expected.insert("copies".into(), json!(3));
        expected.insert("signed".into(), json!(true));
        expected.insert("room".into(), json!("south"));
        assert_eq!(answer, Some(FormAnswer::Accept(expected)));
    }

    #[test]
    fn escape_cancels_and_ctrl_d_declines() {
        let mut form = shelf_form();
        assert_eq!(form.key(key(KeyCode::Esc)), Some(FormAnswer::Cancel));
        let mut form = shelf_form();
        let ctrl_d = KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL);
        assert_eq!(form.key(ctrl_d), Some(FormAnswer::Decline));
        let shown = plain(&form.render(60));
        assert!(
            shown.contains("library asks: Which shelf for Dune?"),
            "{shown}"
        );
    }
}
