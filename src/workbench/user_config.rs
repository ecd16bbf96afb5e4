//! The user's own settings: keybindings and theme from `config.toml` in the user
//! config dir.

use std::path::PathBuf;

/// Keybindings and theme from the user's config dir (`config.toml`).
#[derive(Default)]
pub(super) struct UserConfig {
    pub(super) path: PathBuf,
    pub(super) theme: Option<String>,
    pub(super) keys: Option<toml::Table>,
    pub(super) themes_dir: Option<PathBuf>,
    pub(super) error: Option<String>,
}

impl UserConfig {
    pub(super) fn load() -> UserConfig {
        let Some(dirs) = directories::ProjectDirs::from("", "", "rwb") else {
            return UserConfig::default();
        };
        let dir = dirs.config_dir().to_path_buf();
        let path = dir.join("config.toml");
        let mut config = UserConfig {
            themes_dir: Some(dir.join("themes")),
            path: path.clone(),
            ..Default::default()
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            return config;
        };
        match text.parse::<toml::Table>() {
            Ok(table) => {
                config.theme = table
                    .get("theme")
                    .and_then(|t| t.as_str())
                    .map(String::from);
                config.keys = table.get("keys").and_then(|k| k.as_table()).cloned();
            }
            Err(e) => config.error = Some(format!("{}: {}", path.display(), e.message())),
        }
        config
    }
}
