//! Keys to actions. Bindings are data: defaults here, the user's config merged over
//! them one action at a time, and `?` lists whatever is live.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;
use std::fmt;

/// Everything a key can do in the workbench.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Down,
    Up,
    PageDown,
    PageUp,
    Top,
    Bottom,
    NextPane,
    PrevPane,
    NextEvaluator,
    PrevEvaluator,
    ColumnsRight,
    ColumnsLeft,
    Detail,
    Filter,
    Sort,
    Rerun,
    RerunAll,
    Baseline,
    ChangedOnly,
    Stats,
    Edit,
    Export,
    History,
    Probes,
    Check,
    Serve,
    Tunnel,
    Deploy,
    CompareRemote,
    DropColumn,
    CopyUrl,
    Generate,
    LabelPass,
    LabelFail,
    LabelClear,
    Help,
    Back,
    Quit,
}

impl Action {
    pub const ALL: &'static [Action] = &[
        Action::Down,
        Action::Up,
        Action::PageDown,
        Action::PageUp,
        Action::Top,
        Action::Bottom,
        Action::NextPane,
        Action::PrevPane,
        Action::NextEvaluator,
        Action::PrevEvaluator,
        Action::ColumnsRight,
        Action::ColumnsLeft,
        Action::Detail,
        Action::Filter,
        Action::Sort,
        Action::Rerun,
        Action::RerunAll,
        Action::Baseline,
        Action::ChangedOnly,
        Action::Stats,
        Action::Edit,
        Action::Export,
        Action::History,
        Action::Probes,
        Action::Check,
        Action::Serve,
        Action::Tunnel,
        Action::Deploy,
        Action::CompareRemote,
        Action::DropColumn,
        Action::CopyUrl,
        Action::Generate,
        Action::LabelPass,
        Action::LabelFail,
        Action::LabelClear,
        Action::Help,
        Action::Back,
        Action::Quit,
    ];

    /// The name used in the user config (`[keys] rerun = ["F5"]`).
    pub fn name(self) -> &'static str {
        match self {
            Action::Down => "down",
            Action::Up => "up",
            Action::PageDown => "page_down",
            Action::PageUp => "page_up",
            Action::Top => "top",
            Action::Bottom => "bottom",
            Action::NextPane => "next_pane",
            Action::PrevPane => "prev_pane",
            Action::NextEvaluator => "next_evaluator",
            Action::PrevEvaluator => "prev_evaluator",
            Action::ColumnsRight => "columns_right",
            Action::ColumnsLeft => "columns_left",
            Action::Detail => "detail",
            Action::Filter => "filter",
            Action::Sort => "sort",
            Action::Rerun => "rerun",
            Action::RerunAll => "rerun_all",
            Action::Baseline => "baseline",
            Action::ChangedOnly => "changed_only",
            Action::Stats => "stats",
            Action::Edit => "edit",
            Action::Export => "export",
            Action::History => "history",
            Action::Probes => "probes",
            Action::Check => "check",
            Action::Serve => "serve",
            Action::Tunnel => "tunnel",
            Action::Deploy => "deploy",
            Action::CompareRemote => "compare_remote",
            Action::DropColumn => "drop_column",
            Action::CopyUrl => "copy_url",
            Action::Generate => "generate",
            Action::LabelPass => "label_pass",
            Action::LabelFail => "label_fail",
            Action::LabelClear => "label_clear",
            Action::Help => "help",
            Action::Back => "back",
            Action::Quit => "quit",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Action::Down => "move down / scroll",
            Action::Up => "move up / scroll",
            Action::PageDown => "page down",
            Action::PageUp => "page up",
            Action::Top => "first sample",
            Action::Bottom => "last sample",
            Action::NextPane => "next pane",
            Action::PrevPane => "previous pane",
            Action::NextEvaluator => "next evaluator",
            Action::PrevEvaluator => "previous evaluator",
            Action::ColumnsRight => "scroll the list's columns right (+N ▸ counts those off screen)",
            Action::ColumnsLeft => "scroll the list's columns back left (◂N counts those)",
            Action::Detail => "detail view of the sample",
            Action::Filter => {
                "filter: text, score<0.5, name>=0.8, error, changed, remote, adv<0, logged, disagree, hacked, false-negative, false-positive"
            }
            Action::Sort => "sort: the evaluator (desc, asc), its |Δ| vs the log, adv, reward, time, off",
            Action::Rerun => "rerun the evaluator (ignores the cache; a repeated judge is asked again)",
            Action::RerunAll => {
                "rerun every evaluator (ignores the cache), watching for swallowed exceptions (v)"
            }
            Action::Baseline => "pin the current scores as baseline (Δ column)",
            Action::ChangedOnly => "show only samples that changed vs the baseline",
            Action::Stats => "statistics per evaluator",
            Action::Edit => "open the evaluator in $EDITOR at the failing line",
            Action::Export => "export results (jsonl) to .rwb/",
            Action::History => "past versions of the evaluator: mean score and source diff",
            Action::Probes => "run the reward-hacking probes on the samples",
            Action::Check => "check each evaluator's contract the way its trainer calls it",
            Action::Serve => "serve the evaluators over HTTP (on/off)",
            Action::Tunnel => "open a public tunnel to the server (on/off)",
            Action::Deploy => "deploy: ←/→ picks Fireworks, Cloud Run or Kubernetes; asks to confirm",
            Action::CompareRemote => "replay samples on the tunnel or deployment, mark differences",
            Action::DropColumn => "drop the selected column a deploy added (NAME@cloud-run)",
            Action::CopyUrl => "copy the tunnel (or server) URL to the clipboard",
            Action::Generate => "generate N more completions of the selected prompt ([generate] in rwb.toml) and score them",
            Action::LabelPass => "label the sample pass (kept in labels.jsonl)",
            Action::LabelFail => "label the sample fail (kept in labels.jsonl)",
            Action::LabelClear => "clear the sample's label",
            Action::Help => "this help",
            Action::Back => "close / clear",
            Action::Quit => "quit",
        }
    }

    fn from_name(name: &str) -> Option<Action> {
        Action::ALL.iter().copied().find(|a| a.name() == name)
    }
}

/// One key with its modifiers, as written in the config: `j`, `G`, `Ctrl-c`, `F5`,
/// `Enter`, `Shift-Tab`, `PageDown`, `?`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Key {
    pub fn from_event(event: &KeyEvent) -> Key {
        // Shift is part of the character itself ('G'), and BackTab is Shift-Tab
        Key {
            code: event.code,
            ctrl: event.modifiers.contains(KeyModifiers::CONTROL),
            alt: event.modifiers.contains(KeyModifiers::ALT),
        }
    }

    pub fn parse(text: &str) -> Result<Key, String> {
        let mut ctrl = false;
        let mut alt = false;
        let mut rest = text.trim();
        loop {
            let lower = rest.to_ascii_lowercase();
            if let Some(r) = lower
                .strip_prefix("ctrl-")
                .or_else(|| lower.strip_prefix("c-"))
            {
                ctrl = true;
                rest = &rest[rest.len() - r.len()..];
            } else if let Some(r) = lower
                .strip_prefix("alt-")
                .or_else(|| lower.strip_prefix("a-"))
            {
                alt = true;
                rest = &rest[rest.len() - r.len()..];
            } else {
                break;
            }
        }
        let code = match rest.to_ascii_lowercase().as_str() {
            "enter" | "return" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "shift-tab" | "backtab" => KeyCode::BackTab,
            "backspace" => KeyCode::Backspace,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "pageup" | "pgup" => KeyCode::PageUp,
            "pagedown" | "pgdn" => KeyCode::PageDown,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "space" => KeyCode::Char(' '),
            f if f.len() >= 2 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => {
                KeyCode::F(f[1..].parse().expect("checked"))
            }
            _ if rest.chars().count() == 1 => {
                let c = rest.chars().next().expect("one char");
                KeyCode::Char(if ctrl { c.to_ascii_lowercase() } else { c })
            }
            _ => return Err(format!("unknown key '{text}'")),
        };
        Ok(Key { code, ctrl, alt })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("Ctrl-")?;
        }
        if self.alt {
            f.write_str("Alt-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::F(n) => write!(f, "F{n}"),
            KeyCode::Enter => f.write_str("Enter"),
            KeyCode::Esc => f.write_str("Esc"),
            KeyCode::Tab => f.write_str("Tab"),
            KeyCode::BackTab => f.write_str("Shift-Tab"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::PageUp => f.write_str("PgUp"),
            KeyCode::PageDown => f.write_str("PgDn"),
            KeyCode::Home => f.write_str("Home"),
            KeyCode::End => f.write_str("End"),
            KeyCode::Backspace => f.write_str("Backspace"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// The live bindings.
#[derive(Clone, Debug)]
pub struct Keymap {
    bindings: BTreeMap<Action, Vec<Key>>,
}

impl Default for Keymap {
    fn default() -> Keymap {
        let defaults: &[(Action, &[&str])] = &[
            (Action::Down, &["j", "Down"]),
            (Action::Up, &["k", "Up"]),
            (Action::PageDown, &["PageDown", "Ctrl-d"]),
            (Action::PageUp, &["PageUp", "Ctrl-u"]),
            (Action::Top, &["Home"]),
            (Action::Bottom, &["G", "End"]),
            (Action::NextPane, &["Tab"]),
            (Action::PrevPane, &["Shift-Tab"]),
            (Action::NextEvaluator, &["l", "Right"]),
            (Action::PrevEvaluator, &["h", "Left"]),
            (Action::ColumnsRight, &[">"]),
            (Action::ColumnsLeft, &["<"]),
            (Action::Detail, &["Enter"]),
            (Action::Filter, &["/"]),
            (Action::Sort, &["s"]),
            (Action::Rerun, &["r"]),
            (Action::RerunAll, &["R"]),
            (Action::Baseline, &["b"]),
            (Action::ChangedOnly, &["c"]),
            (Action::Stats, &["v"]),
            (Action::Edit, &["e"]),
            (Action::Export, &["x"]),
            (Action::History, &["H"]),
            (Action::Probes, &["P"]),
            (Action::Check, &["C"]),
            (Action::Serve, &["S"]),
            (Action::Tunnel, &["t"]),
            (Action::Deploy, &["d"]),
            (Action::CompareRemote, &["p"]),
            (Action::DropColumn, &["D"]),
            (Action::CopyUrl, &["y"]),
            (Action::Generate, &["g"]),
            (Action::LabelPass, &["+"]),
            (Action::LabelFail, &["-"]),
            (Action::LabelClear, &["0"]),
            (Action::Help, &["?"]),
            (Action::Back, &["Esc"]),
            (Action::Quit, &["q", "Ctrl-c"]),
        ];
        let bindings = defaults
            .iter()
            .map(|(a, keys)| {
                (
                    *a,
                    keys.iter()
                        .map(|k| Key::parse(k).expect("default keys parse"))
                        .collect(),
                )
            })
            .collect();
        Keymap { bindings }
    }
}

impl Keymap {
    /// Merges the user's `[keys]` table over the defaults: each named action gets
    /// exactly the keys given (a string or a list of strings).
    pub fn with_overrides(overrides: &toml::Table) -> Result<Keymap, String> {
        let mut map = Keymap::default();
        for (name, value) in overrides {
            let action = Action::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Action::ALL.iter().map(|a| a.name()).collect();
                format!(
                    "[keys] {name}: no such action (actions: {})",
                    names.join(", ")
                )
            })?;
            let texts: Vec<&str> = match value {
                toml::Value::String(s) => vec![s.as_str()],
                toml::Value::Array(items) => items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .ok_or_else(|| format!("[keys] {name}: keys must be strings"))
                    })
                    .collect::<Result<_, _>>()?,
                _ => {
                    return Err(format!(
                        "[keys] {name}: give a key (\"F5\") or a list of keys"
                    ))
                }
            };
            let keys = texts
                .iter()
                .map(|t| Key::parse(t).map_err(|e| format!("[keys] {name}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            // a key rebound here leaves the action it had before
            for other in map.bindings.values_mut() {
                other.retain(|k| !keys.contains(k));
            }
            map.bindings.insert(action, keys);
        }
        Ok(map)
    }

    pub fn action(&self, event: &KeyEvent) -> Option<Action> {
        let key = Key::from_event(event);
        self.bindings
            .iter()
            .find(|(_, keys)| keys.contains(&key))
            .map(|(a, _)| *a)
    }

    pub fn keys(&self, action: Action) -> &[Key] {
        self.bindings
            .get(&action)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }

    /// "r" or "r/F5": the keys of an action as the help and hints show them.
    pub fn label(&self, action: Action) -> String {
        let keys: Vec<String> = self.keys(action).iter().map(|k| k.to_string()).collect();
        if keys.is_empty() {
            "unbound".into()
        } else {
            keys.join("/")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn defaults_map_keys_to_actions() {
        let map = Keymap::default();
        assert_eq!(
            map.action(&press(KeyCode::Char('j'), KeyModifiers::NONE)),
            Some(Action::Down)
        );
        assert_eq!(
            map.action(&press(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Action::Bottom)
        );
        assert_eq!(
            map.action(&press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            map.action(&press(KeyCode::Char('c'), KeyModifiers::NONE)),
            Some(Action::ChangedOnly)
        );
        assert_eq!(
            map.action(&press(KeyCode::BackTab, KeyModifiers::SHIFT)),
            Some(Action::PrevPane)
        );
    }

    #[test]
    fn user_bindings_merge_over_the_defaults() {
        let table: toml::Table =
            toml::from_str("rerun = \"F5\"\nquit = [\"q\", \"Ctrl-q\"]\ndown = \"r\"").unwrap();
        let map = Keymap::with_overrides(&table).unwrap();
        assert_eq!(
            map.action(&press(KeyCode::F(5), KeyModifiers::NONE)),
            Some(Action::Rerun)
        );
        assert_eq!(
            map.action(&press(KeyCode::Char('r'), KeyModifiers::NONE)),
            Some(Action::Down)
        );
        assert_eq!(
            map.action(&press(KeyCode::Char('q'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            map.action(&press(KeyCode::Char('k'), KeyModifiers::NONE)),
            Some(Action::Up),
            "untouched"
        );
        assert_eq!(map.label(Action::Rerun), "F5");
    }

    #[test]
    fn bad_bindings_are_named() {
        let table: toml::Table = toml::from_str("rerunn = \"F5\"").unwrap();
        assert!(Keymap::with_overrides(&table)
            .unwrap_err()
            .contains("rerunn: no such action"));
        let table: toml::Table = toml::from_str("rerun = \"Hyper-x\"").unwrap();
        assert!(Keymap::with_overrides(&table)
            .unwrap_err()
            .contains("unknown key"));
    }
}
