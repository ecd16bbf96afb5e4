//! `chat_template` in `rwb.toml`: which chat template the trainer applied, read from
//! the workspace (SPEC §3). `chatml` and `raw` are built in; anything else is a path
//! relative to the workspace: a `.json` file is a Hugging Face `tokenizer_config.json`
//! (its `chat_template` and special tokens), any other file is the template's text.
//! A template that does not compile is an error here, naming its file and line.

use super::WorkspaceError;
use crate::model::TemplateSource;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The special tokens a tokenizer's `special_tokens_map` holds, which
/// `apply_chat_template` passes to the template by these names.
const SPECIAL_TOKENS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// Reads each named template file once, however many evaluators name it.
pub struct Templates {
    root: PathBuf,
    read: std::cell::RefCell<HashMap<PathBuf, TemplateSource>>,
}

impl Templates {
    pub fn new(root: &Path) -> Templates {
        Templates {
            root: root.to_path_buf(),
            read: Default::default(),
        }
    }

    /// The template `value` names; `field` is the `rwb.toml` key that named it, for
    /// the error messages.
    pub fn load(&self, value: &str, field: &str) -> Result<TemplateSource, WorkspaceError> {
        match value.trim() {
            "chatml" => return Ok(TemplateSource::ChatMl),
            "raw" => return Ok(TemplateSource::Raw),
            "" => {
                return Err(WorkspaceError(format!(
                    "rwb.toml: {field} is empty: write \"chatml\", \"raw\", or the path of a Jinja template or tokenizer_config.json"
                )))
            }
            _ => {}
        }
        let path = self.root.join(value);
        if let Some(known) = self.read.borrow().get(&path) {
            return Ok(known.clone());
        }
        let text = std::fs::read_to_string(&path).map_err(|e| {
            WorkspaceError(format!(
                "rwb.toml: {field} = \"{value}\": cannot read {}: {e} (accepted: \"chatml\", \"raw\", or the path of a Jinja template or tokenizer_config.json, relative to the workspace)",
                path.display()
            ))
        })?;
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let source = if is_json {
            from_tokenizer_config(value, &text)
                .map_err(|why| WorkspaceError(format!("rwb.toml: {field} = \"{value}\": {why}")))?
        } else {
            TemplateSource::Jinja {
                origin: value.to_string(),
                text,
                special_tokens: Vec::new(),
            }
        };
        // a template that does not compile stops the run before it starts
        crate::engine::chat_template::ChatTemplate::compile(&source)
            .map_err(|e| WorkspaceError(format!("rwb.toml: {field} = \"{value}\": {e}")))?;
        self.read.borrow_mut().insert(path, source.clone());
        Ok(source)
    }
}

/// A `tokenizer_config.json`'s chat template and special tokens. Its `chat_template`
/// is a string, or a list of `{name, template}` of which `default` is the one
/// `apply_chat_template` uses without a name.
fn from_tokenizer_config(origin: &str, text: &str) -> Result<TemplateSource, String> {
    let config: Value =
        serde_json::from_str(text).map_err(|e| format!("{origin} is not JSON: {e}"))?;
    let template = match config.get("chat_template") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(named)) => named
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some("default"))
            .and_then(|t| t.get("template").and_then(Value::as_str))
            .map(str::to_string)
            .ok_or_else(|| {
                format!("{origin}: chat_template lists named templates but none named \"default\"")
            })?,
        _ => {
            return Err(format!(
                "{origin} has no chat_template (a tokenizer_config.json of a chat model has one)"
            ))
        }
    };
    let special_tokens = SPECIAL_TOKENS
        .iter()
        .filter_map(|name| {
            let token = match config.get(*name)? {
                Value::String(s) => s.clone(),
                // an AddedToken written out: its content
                Value::Object(o) => o.get("content")?.as_str()?.to_string(),
                _ => return None,
            };
            Some((name.to_string(), token))
        })
        .collect();
    Ok(TemplateSource::Jinja {
        origin: origin.to_string(),
        text: template,
        special_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_files_and_tokenizer_configs_are_read_as_hugging_face_has_them() {
        let dir = tempfile::tempdir().unwrap();
        let t = Templates::new(dir.path());
        assert_eq!(
            t.load("chatml", "chat_template").unwrap(),
            TemplateSource::ChatMl
        );
        assert_eq!(t.load("raw", "chat_template").unwrap(), TemplateSource::Raw);
        std::fs::write(dir.path().join("t.jinja"), "{{ messages[0].content }}").unwrap();
        assert_eq!(
            t.load("t.jinja", "chat_template").unwrap(),
            TemplateSource::Jinja {
                origin: "t.jinja".into(),
                text: "{{ messages[0].content }}".into(),
                special_tokens: vec![],
            }
        );
        std::fs::write(
            dir.path().join("tokenizer_config.json"),
            r#"{"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null,
                "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}"#,
        )
        .unwrap();
        assert_eq!(
            t.load("tokenizer_config.json", "chat_template").unwrap(),
            TemplateSource::Jinja {
                origin: "tokenizer_config.json".into(),
                text: "D".into(),
                special_tokens: vec![
                    ("bos_token".into(), "<s>".into()),
                    ("eos_token".into(), "</s>".into())
                ],
            }
        );
    }

    #[test]
    fn a_missing_or_unusable_template_names_the_key_the_file_and_what_to_write() {
        let dir = tempfile::tempdir().unwrap();
        let t = Templates::new(dir.path());
        let e = t
            .load("qwen.jinja", "[evaluators.math] chat_template")
            .unwrap_err()
            .0;
        assert!(
            e.starts_with(
                "rwb.toml: [evaluators.math] chat_template = \"qwen.jinja\": cannot read "
            ),
            "{e}"
        );
        assert!(e.contains("\"chatml\", \"raw\""), "{e}");
        std::fs::write(dir.path().join("tc.json"), r#"{"eos_token": "</s>"}"#).unwrap();
        let e = t.load("tc.json", "chat_template").unwrap_err().0;
        assert_eq!(e, "rwb.toml: chat_template = \"tc.json\": tc.json has no chat_template (a tokenizer_config.json of a chat model has one)");
        let e = t.load(" ", "chat_template").unwrap_err().0;
        assert!(e.contains("is empty"), "{e}");
        std::fs::write(
            dir.path().join("broken.jinja"),
            "{% for m in messages %}\n{{ m.content }\n",
        )
        .unwrap();
        let e = t.load("broken.jinja", "chat_template").unwrap_err().0;
        assert!(
            e.starts_with("rwb.toml: chat_template = \"broken.jinja\": broken.jinja: template line 2: syntax error"),
            "{e}"
        );
    }
}
