//! Colour themes: a [`Palette`] of UI colours by role plus an optional syntax theme for
//! source code.
//!
//! A theme `NAME` is the file `NAME.toml`; its `syntax = "S"` key names `S.tmTheme` (a
//! TextMate theme). Both are looked up first in the user's themes folder, then among the
//! themes built into the binary (`themes/dark.*` and `themes/light.*` of this repository),
//! then (syntax themes only) among syntect's bundled themes. A user theme may set only some
//! roles; the others come from the built-in dark theme, field by field.
//!
//! With `NO_COLOR` set, [`Theme::from_env`] gives [`Theme::monochrome`]: every colour is
//! [`Color::Reset`] and the UI marks things with bold, reversed and underlined text instead.
//!
//! This module only reads files; it never writes them.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use toml::Spanned;

/// The theme used when none is chosen, and the base every other theme falls back to.
pub const DEFAULT_THEME: &str = "dark";

/// Scores below this are `bad`.
pub const SCORE_MID: f64 = 0.34;
/// Scores from this up are `good`; between [`SCORE_MID`] and this they are `mid`.
pub const SCORE_GOOD: f64 = 0.67;

/// UI themes built into the binary: (name, TOML text).
const BUILTIN_UI: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
];

/// Syntax themes built into the binary: (name, tmTheme text).
const BUILTIN_SYNTAX: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.tmTheme")),
    ("light", include_str!("../../themes/light.tmTheme")),
];

/// Declares the colour roles once; generates [`Palette`], its list of role names and the
/// raw (as written in TOML) form of a theme file.
macro_rules! roles {
    ($($role:ident => $doc:literal,)+) => {
        /// One colour per UI role.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Palette {
            $(#[doc = $doc] pub $role: Color,)+
        }

        impl Palette {
            /// The role names, as written in a theme's TOML file.
            pub const ROLES: &'static [&'static str] = &[$(stringify!($role)),+];

            /// A palette with every role set to `color`.
            pub fn uniform(color: Color) -> Palette {
                Palette { $($role: color,)+ }
            }
        }

        /// A theme file as written: every key optional, each value with its place in the
        /// file for error messages.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawTheme {
            syntax: Option<Spanned<String>>,
            $($role: Option<Spanned<String>>,)+
        }

        impl RawTheme {
            /// The palette this file describes; a role it leaves out comes from `base`, or
            /// is an error when there is no base.
            fn palette(&self, base: Option<&Palette>, file: &str, text: &str) -> Result<Palette, String> {
                Ok(Palette {
                    $($role: role_color(
                        stringify!($role),
                        self.$role.as_ref(),
                        base.map(|b| b.$role),
                        file,
                        text,
                    )?,)+
                })
            }

            #[cfg(test)]
            fn missing_roles(&self) -> Vec<&'static str> {
                let mut missing = Vec::new();
                $(if self.$role.is_none() { missing.push(stringify!($role)); })+
                missing
            }
        }
    };
}

roles! {
    fg => "Ordinary text.",
    bg => "Background; `Reset` keeps the terminal's own.",
    muted => "Secondary text: hints, line numbers, timestamps.",
    accent => "Highlights: key hints, traceback frames, the active item.",
    border => "Pane borders.",
    border_focus => "The focused pane's border.",
    selection_fg => "Text of the selected row.",
    selection_bg => "Background of the selected row.",
    good => "Scores at or above [`SCORE_GOOD`].",
    mid => "Scores from [`SCORE_MID`] up to [`SCORE_GOOD`].",
    bad => "Scores below [`SCORE_MID`].",
    error => "Errors: failed evaluations, exception lines, bad samples.",
    stale => "Scores not yet recomputed after a change.",
    role_user => "Conversation messages of role `user`.",
    role_assistant => "Conversation messages of role `assistant`.",
    role_system => "Conversation messages of role `system`.",
    role_tool => "Conversation messages of role `tool`.",
    bar_full => "The filled part of a score bar.",
    bar_empty => "The empty part of a score bar.",
    error_line_bg => "Background of the failing line in the evaluator source.",
    title => "Pane titles.",
}

/// A UI theme: its name, its colours and the syntax theme for source code.
#[derive(Debug, Clone)]
pub struct Theme {
    /// The name it was loaded by (`"monochrome"` for [`Theme::monochrome`]).
    pub name: String,
    pub palette: Palette,
    /// The syntax theme; `None` means source code is drawn in `palette.fg`.
    pub syntax: Option<syntect::highlighting::Theme>,
}

impl Default for Theme {
    /// The built-in dark theme.
    fn default() -> Theme {
        Theme::builtin_dark()
    }
}

impl Theme {
    /// Loads theme `name`: `NAME.toml` from `user_dir` (the user's config `themes/`
    /// folder) if there, else the built-in one; then the syntax theme it names, looked up
    /// the same way. Roles a theme leaves out come from the built-in dark theme.
    ///
    /// Errors are one line, meant for the status line: an unknown name lists the
    /// available ones; a bad file names the file and line.
    pub fn load(name: &str, user_dir: Option<&Path>) -> Result<Theme, String> {
        check_name(name, "theme")?;
        let (file, text) = match find_ui_file(name, user_dir)? {
            Some(found) => found,
            None => {
                return Err(format!(
                    "unknown theme '{name}' (available: {})",
                    Theme::available(user_dir).join(", ")
                ))
            }
        };
        let raw = parse_raw(&file, &text)?;

        let is_base = name == DEFAULT_THEME && file == builtin_label(DEFAULT_THEME, "toml");
        let (palette, default_syntax) = if is_base {
            (raw.palette(None, &file, &text)?, None)
        } else {
            let (base_palette, base_syntax) = builtin_base()?;
            (raw.palette(Some(&base_palette), &file, &text)?, base_syntax)
        };

        let syntax = match (&raw.syntax, default_syntax) {
            (Some(spanned), _) => {
                let at = format!("{file}:{}", line_of(&text, spanned.span().start));
                load_syntax(spanned.get_ref().trim(), user_dir, &at)?
            }
            (None, Some(base_name)) => load_syntax(&base_name, user_dir, &file)?,
            (None, None) => None,
        };

        Ok(Theme {
            name: name.to_string(),
            palette,
            syntax,
        })
    }

    /// The colourless theme for `NO_COLOR`: every colour [`Color::Reset`], no syntax
    /// theme. The UI should then rely on modifiers (see [`Theme::is_monochrome`]).
    pub fn monochrome() -> Theme {
        Theme {
            name: "monochrome".to_string(),
            palette: Palette::uniform(Color::Reset),
            syntax: None,
        }
    }

    /// The theme to start with: monochrome when the environment variable `NO_COLOR` is set
    /// and non-empty, else theme `name` (default [`DEFAULT_THEME`]). If that fails, the
    /// built-in dark theme and the error message, so the UI can show it and keep going.
    pub fn from_env(name: Option<&str>, user_dir: Option<&Path>) -> (Theme, Option<String>) {
        let no_color = std::env::var_os("NO_COLOR");
        let no_color = no_color.as_ref().map(|value| value.to_string_lossy());
        Theme::from_env_value(no_color.as_deref(), name, user_dir)
    }

    /// [`Theme::from_env`] with the value of `NO_COLOR` passed in.
    pub fn from_env_value(
        no_color: Option<&str>,
        name: Option<&str>,
        user_dir: Option<&Path>,
    ) -> (Theme, Option<String>) {
        if no_color.is_some_and(|value| !value.is_empty()) {
            return (Theme::monochrome(), None);
        }
        match Theme::load(name.unwrap_or(DEFAULT_THEME), user_dir) {
            Ok(theme) => (theme, None),
            Err(message) => (Theme::builtin_dark(), Some(message)),
        }
    }

    /// The theme names that [`Theme::load`] finds: the built-in ones plus every `*.toml`
    /// in `user_dir`, sorted.
    pub fn available(user_dir: Option<&Path>) -> Vec<String> {
        let mut names: Vec<String> = BUILTIN_UI.iter().map(|(n, _)| n.to_string()).collect();
        if let Some(entries) = user_dir.and_then(|dir| std::fs::read_dir(dir).ok()) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|ext| ext == "toml") && path.is_file() {
                    if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                        names.push(stem.to_string());
                    }
                }
            }
        }
        names.sort();
        names.dedup();
        names
    }

    /// True when every colour is `Reset` and there is no syntax theme (`NO_COLOR`, or a
    /// user theme saying so): the UI should then mark selection, errors and focus with
    /// modifiers, since colours will not show.
    pub fn is_monochrome(&self) -> bool {
        self.syntax.is_none() && self.palette == Palette::uniform(Color::Reset)
    }

    /// The colour of a score: `bad` below [`SCORE_MID`], `mid` below [`SCORE_GOOD`],
    /// `good` from there up. NaN gets `error`.
    pub fn score_color(&self, score: f64) -> Color {
        if score.is_nan() {
            self.palette.error
        } else if score < SCORE_MID {
            self.palette.bad
        } else if score < SCORE_GOOD {
            self.palette.mid
        } else {
            self.palette.good
        }
    }

    /// Ordinary text on the theme's background.
    pub fn base_style(&self) -> Style {
        Style::new().fg(self.palette.fg).bg(self.palette.bg)
    }

    /// The selected row: its colours, or reversed video when monochrome.
    pub fn selection_style(&self) -> Style {
        if self.is_monochrome() {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
                .fg(self.palette.selection_fg)
                .bg(self.palette.selection_bg)
        }
    }

    /// The built-in dark theme, never failing (the tests check that it loads; should it
    /// not, monochrome).
    fn builtin_dark() -> Theme {
        Theme::load(DEFAULT_THEME, None).unwrap_or_else(|_| Theme::monochrome())
    }
}

/// How a built-in file is named in messages.
fn builtin_label(name: &str, ext: &str) -> String {
    format!("(built-in) themes/{name}.{ext}")
}

/// Theme names are file stems: no separators, no leading dot.
fn check_name(name: &str, what: &str) -> Result<(), String> {
    let bad = name.is_empty()
        || name.starts_with('.')
        || name.contains(['/', '\\', '\0'])
        || Path::new(name).components().count() != 1;
    if bad {
        Err(format!("invalid {what} name '{name}'"))
    } else {
        Ok(())
    }
}

/// Reads `dir/file` if it exists; `Ok(None)` if it does not.
fn read_user_file(dir: Option<&Path>, file: &str) -> Result<Option<(PathBuf, String)>, String> {
    let Some(dir) = dir else { return Ok(None) };
    let path = dir.join(file);
    if !path.is_file() {
        return Ok(None);
    }
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some((path, text))),
        Err(err) => Err(format!("{}: {err}", path.display())),
    }
}

/// The UI theme file for `name`: (label for messages, text).
fn find_ui_file(name: &str, user_dir: Option<&Path>) -> Result<Option<(String, String)>, String> {
    if let Some((path, text)) = read_user_file(user_dir, &format!("{name}.toml"))? {
        return Ok(Some((path.display().to_string(), text)));
    }
    Ok(BUILTIN_UI
        .iter()
        .find(|(builtin, _)| *builtin == name)
        .map(|(_, text)| (builtin_label(name, "toml"), text.to_string())))
}

fn parse_raw(file: &str, text: &str) -> Result<RawTheme, String> {
    toml::from_str(text).map_err(|err| {
        let message = one_line(err.message());
        match err.span() {
            Some(span) => format!("{file}:{}: {message}", line_of(text, span.start)),
            None => format!("{file}: {message}"),
        }
    })
}

/// The built-in dark theme's palette and syntax name: the base of every other theme.
fn builtin_base() -> Result<(Palette, Option<String>), String> {
    let file = builtin_label(DEFAULT_THEME, "toml");
    let text = BUILTIN_UI
        .iter()
        .find(|(name, _)| *name == DEFAULT_THEME)
        .map(|(_, text)| *text)
        .ok_or_else(|| format!("{file}: not built in"))?;
    let raw = parse_raw(&file, text)?;
    let palette = raw.palette(None, &file, text)?;
    Ok((
        palette,
        raw.syntax.map(|s| s.into_inner().trim().to_string()),
    ))
}

/// One role's colour: the file's value, else the base's.
fn role_color(
    role: &str,
    value: Option<&Spanned<String>>,
    base: Option<Color>,
    file: &str,
    text: &str,
) -> Result<Color, String> {
    match value {
        Some(spanned) => parse_color(spanned.get_ref()).ok_or_else(|| {
            format!(
                "{file}:{}: {role} = \"{}\" is not a colour \
                 (use \"#rrggbb\", an ANSI name like \"light-blue\", 0-255, or \"reset\")",
                line_of(text, spanned.span().start),
                spanned.get_ref()
            )
        }),
        None => base.ok_or_else(|| format!("{file}: role '{role}' is missing")),
    }
}

/// `"#rrggbb"`, an ANSI colour name (`"red"`, `"light-blue"`, `"dark gray"`), an xterm
/// palette index, or `"reset"`.
fn parse_color(value: &str) -> Option<Color> {
    value.trim().parse::<Color>().ok()
}

/// Loads syntax theme `name` (`"none"` or empty: no syntax theme). `at` places the
/// reference in messages.
fn load_syntax(
    name: &str,
    user_dir: Option<&Path>,
    at: &str,
) -> Result<Option<syntect::highlighting::Theme>, String> {
    if name.is_empty() || name.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    check_name(name, "syntax theme").map_err(|err| format!("{at}: {err}"))?;
    if let Some((path, text)) = read_user_file(user_dir, &format!("{name}.tmTheme"))? {
        return parse_tm_theme(&path.display().to_string(), &text).map(Some);
    }
    if let Some((_, text)) = BUILTIN_SYNTAX.iter().find(|(builtin, _)| *builtin == name) {
        return parse_tm_theme(&builtin_label(name, "tmTheme"), text).map(Some);
    }
    let mut bundled = syntect::highlighting::ThemeSet::load_defaults();
    if let Some(theme) = bundled.themes.remove(name) {
        return Ok(Some(theme));
    }
    let mut names: Vec<String> = BUILTIN_SYNTAX.iter().map(|(n, _)| n.to_string()).collect();
    names.extend(bundled.themes.into_keys());
    if let Some(entries) = user_dir.and_then(|dir| std::fs::read_dir(dir).ok()) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|ext| ext == "tmTheme") {
                if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                    names.push(stem.to_string());
                }
            }
        }
    }
    names.sort();
    names.dedup();
    Err(format!(
        "{at}: unknown syntax theme '{name}' (available: none, {})",
        names.join(", ")
    ))
}

fn parse_tm_theme(file: &str, text: &str) -> Result<syntect::highlighting::Theme, String> {
    syntect::highlighting::ThemeSet::load_from_reader(&mut Cursor::new(text.as_bytes())).map_err(
        |err| {
            // syntect's top-level messages are vague; the causes say what is wrong.
            let mut message = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                message.push_str(": ");
                message.push_str(&cause.to_string());
                source = cause.source();
            }
            format!("{file}: {}", one_line(&message))
        },
    )
}

/// The 1-based line holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin_raw(name: &str) -> RawTheme {
        let (_, text) = BUILTIN_UI.iter().find(|(n, _)| *n == name).unwrap();
        parse_raw(name, text).unwrap()
    }

    #[test]
    fn builtin_themes_load_with_every_role_and_a_syntax_theme() {
        for name in ["dark", "light"] {
            let raw = builtin_raw(name);
            assert!(
                raw.missing_roles().is_empty(),
                "{name}: {:?}",
                raw.missing_roles()
            );
            let theme = Theme::load(name, None).unwrap();
            assert_eq!(theme.name, name);
            assert!(theme.syntax.is_some(), "{name} has no syntax theme");
            assert!(!theme.is_monochrome());
        }
        let dark = Theme::load("dark", None).unwrap();
        let light = Theme::load("light", None).unwrap();
        assert_eq!(dark.palette.bg, Color::Reset);
        assert_ne!(dark.palette.fg, light.palette.fg);
        assert_ne!(
            dark.syntax.unwrap().settings.background,
            light.syntax.unwrap().settings.background
        );
    }

    #[test]
    fn every_role_is_listed_once() {
        assert_eq!(Palette::ROLES.len(), 21);
        assert!(Palette::ROLES.contains(&"error_line_bg"));
    }

    #[test]
    fn user_theme_overrides_one_role_and_inherits_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.toml"), "accent = \"#010203\"\n").unwrap();
        let theme = Theme::load("mine", Some(dir.path())).unwrap();
        let dark = Theme::load("dark", None).unwrap();
        assert_eq!(theme.name, "mine");
        assert_eq!(theme.palette.accent, Color::Rgb(1, 2, 3));
        let expected = Palette {
            accent: Color::Rgb(1, 2, 3),
            ..dark.palette
        };
        assert_eq!(theme.palette, expected);
        assert_eq!(theme.syntax, dark.syntax, "syntax name inherited from dark");
    }

    #[test]
    fn user_folder_wins_over_builtin_for_themes_and_syntax() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("dark.toml"),
            "syntax = \"mine\"\nfg = \"light-red\"\nbg = \"236\"\n",
        )
        .unwrap();
        let (_, tm) = BUILTIN_SYNTAX.iter().find(|(n, _)| *n == "light").unwrap();
        let tm = tm.replace("<string>rwb light</string>", "<string>mine</string>");
        std::fs::write(dir.path().join("mine.tmTheme"), tm).unwrap();

        let theme = Theme::load("dark", Some(dir.path())).unwrap();
        assert_eq!(theme.palette.fg, Color::LightRed);
        assert_eq!(theme.palette.bg, Color::Indexed(236));
        assert_eq!(theme.syntax.unwrap().name.as_deref(), Some("mine"));
        // The built-in dark is still there for everything else.
        assert_eq!(
            theme.palette.accent,
            Theme::load("dark", None).unwrap().palette.accent
        );
    }

    #[test]
    fn syntax_none_and_bundled_syntect_themes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plain.toml"), "syntax = \"none\"\n").unwrap();
        std::fs::write(
            dir.path().join("ocean.toml"),
            "syntax = \"base16-ocean.dark\"\n",
        )
        .unwrap();
        assert!(Theme::load("plain", Some(dir.path()))
            .unwrap()
            .syntax
            .is_none());
        assert!(Theme::load("ocean", Some(dir.path()))
            .unwrap()
            .syntax
            .is_some());
    }

    #[test]
    fn unknown_theme_lists_the_available_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("solar.toml"), "").unwrap();
        let err = Theme::load("nope", Some(dir.path())).unwrap_err();
        assert_eq!(err, "unknown theme 'nope' (available: dark, light, solar)");
        let err = Theme::load("nope", None).unwrap_err();
        assert_eq!(err, "unknown theme 'nope' (available: dark, light)");
        assert!(Theme::load("../etc/x", None)
            .unwrap_err()
            .contains("invalid theme name"));
    }

    #[test]
    fn bad_files_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.toml");
        std::fs::write(&path, "fg = \"#ffffff\"\naccent = \"#12\n").unwrap();
        let err = Theme::load("broken", Some(dir.path())).unwrap_err();
        assert!(err.starts_with(&format!("{}:2: ", path.display())), "{err}");

        std::fs::write(
            &path,
            "# colours\nfg = \"#ffffff\"\n\naccent = \"purple-ish\"\n",
        )
        .unwrap();
        let err = Theme::load("broken", Some(dir.path())).unwrap_err();
        assert!(
            err.starts_with(&format!("{}:4: accent", path.display())),
            "{err}"
        );
        assert!(err.contains("purple-ish"), "{err}");

        std::fs::write(&path, "fg = \"red\"\nacent = \"red\"\n").unwrap();
        let err = Theme::load("broken", Some(dir.path())).unwrap_err();
        assert!(err.starts_with(&format!("{}:2: ", path.display())), "{err}");
        assert!(err.contains("acent"), "{err}");

        std::fs::write(&path, "\nsyntax = \"nosuch\"\n").unwrap();
        let err = Theme::load("broken", Some(dir.path())).unwrap_err();
        assert!(
            err.starts_with(&format!(
                "{}:2: unknown syntax theme 'nosuch'",
                path.display()
            )),
            "{err}"
        );

        std::fs::write(&path, "syntax = \"bad\"\n").unwrap();
        let tm_path = dir.path().join("bad.tmTheme");
        std::fs::write(&tm_path, "<plist><dict>").unwrap();
        let err = Theme::load("broken", Some(dir.path())).unwrap_err();
        assert!(err.starts_with(&tm_path.display().to_string()), "{err}");
    }

    #[test]
    fn no_color_gives_monochrome() {
        let (theme, err) = Theme::from_env_value(Some("1"), Some("light"), None);
        assert!(err.is_none());
        assert!(theme.is_monochrome());
        assert_eq!(theme.palette, Palette::uniform(Color::Reset));
        assert!(theme.syntax.is_none());
        assert_eq!(
            theme.selection_style(),
            Style::new().add_modifier(Modifier::REVERSED)
        );

        // Empty NO_COLOR counts as unset.
        let (theme, err) = Theme::from_env_value(Some(""), Some("light"), None);
        assert!(err.is_none());
        assert_eq!(theme.name, "light");
        let (theme, _) = Theme::from_env_value(None, None, None);
        assert_eq!(theme.name, "dark");
    }

    #[test]
    fn a_failing_theme_falls_back_to_dark_with_the_message() {
        let (theme, err) = Theme::from_env_value(None, Some("nope"), None);
        assert_eq!(theme.name, "dark");
        assert!(theme.syntax.is_some());
        assert!(err.unwrap().starts_with("unknown theme 'nope'"));
    }

    #[test]
    fn score_colors_follow_the_thresholds() {
        let theme = Theme::load("dark", None).unwrap();
        let p = theme.palette;
        assert_eq!(theme.score_color(0.0), p.bad);
        assert_eq!(theme.score_color(0.3399), p.bad);
        assert_eq!(theme.score_color(0.34), p.mid);
        assert_eq!(theme.score_color(0.6699), p.mid);
        assert_eq!(theme.score_color(0.67), p.good);
        assert_eq!(theme.score_color(1.0), p.good);
        assert_eq!(theme.score_color(-2.0), p.bad);
        assert_eq!(theme.score_color(f64::NAN), p.error);
    }
}
