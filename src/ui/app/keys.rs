//! Keys: what each action does to the app, per focus and overlay.

use super::*;

impl App {
    /// A key: first the open text inputs and dialogs take it, then the keymap's action.
    pub(super) fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if self.overlay == Overlay::History && key.code == KeyCode::Char(' ') {
            self.mark_version();
            return Vec::new();
        }
        if self.filter_input.is_some() {
            self.filter_key(key);
            return Vec::new();
        }
        if matches!(self.overlay, Overlay::Deploy(_)) {
            return self.deploy_key(key);
        }
        let Some(action) = self.keymap.action(&key) else {
            return Vec::new();
        };
        if self.overlay_takes(action) {
            return Vec::new();
        }
        if action != Action::Help {
            // a key clears the notice, except the one that shows it whole
            self.notice = None;
        }
        self.act(action)
    }

    /// Space in the history: marks the selected version to compare with (or unmarks it).
    fn mark_version(&mut self) {
        if let Some(h) = self.history.as_mut() {
            h.marked = if h.marked == Some(h.cursor) {
                None
            } else {
                Some(h.cursor)
            };
        }
    }

    /// A key while the filter is typed: the list follows each keystroke.
    fn filter_key(&mut self, key: KeyEvent) {
        let Some(input) = self.filter_input.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Enter => {
                self.filter_input = None;
            }
            KeyCode::Esc => {
                self.filter_input = None;
                self.set_filter(String::new());
            }
            KeyCode::Backspace => {
                input.pop();
                let text = input.clone();
                self.set_filter(text);
            }
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.filter_input = None;
                self.set_filter(String::new());
            }
            KeyCode::Char(c) => {
                input.push(c);
                let text = input.clone();
                self.set_filter(text);
            }
            _ => {}
        }
    }

    /// A key in the deploy dialog: Enter deploys (and shows the ship panel).
    fn deploy_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Overlay::Deploy(form) = &mut self.overlay else {
            return Vec::new();
        };
        match deploy_form_key(form, key) {
            Ok(effect) => {
                self.overlay = Overlay::Ship;
                vec![effect]
            }
            Err(close) => {
                if close {
                    self.overlay = Overlay::None;
                }
                Vec::new()
            }
        }
    }

    /// Whether an open overlay takes the action: the history moves its cursor, any
    /// other action closes an overlay (the ship panel stays for its own actions).
    fn overlay_takes(&mut self, action: Action) -> bool {
        let ship_action = matches!(
            action,
            Action::Serve
                | Action::Tunnel
                | Action::Deploy
                | Action::CompareRemote
                | Action::DropColumn
                | Action::CopyUrl
        );
        let reading = matches!(
            self.overlay,
            Overlay::Help | Overlay::Stats | Overlay::Report
        );
        let moves = matches!(
            action,
            Action::Down
                | Action::Up
                | Action::PageDown
                | Action::PageUp
                | Action::Top
                | Action::Bottom
        );
        if reading && moves {
            // the help, statistics and reports scroll (the view stops at their end)
            let page = self.size.map_or(10, |(_, h)| h.saturating_sub(4).max(1));
            self.overlay_scroll = match action {
                Action::Down => self.overlay_scroll.saturating_add(1),
                Action::Up => self.overlay_scroll.saturating_sub(1),
                Action::PageDown => self.overlay_scroll.saturating_add(page),
                Action::PageUp => self.overlay_scroll.saturating_sub(page),
                Action::Top => 0,
                _ => u16::MAX,
            };
            return true;
        }
        let keep_open = (self.overlay == Overlay::Ship && ship_action)
            || (self.overlay == Overlay::History && matches!(action, Action::Down | Action::Up));
        if self.overlay == Overlay::History && keep_open {
            if let Some(h) = self.history.as_mut() {
                let last = h.versions.len().saturating_sub(1);
                h.cursor = if action == Action::Down {
                    (h.cursor + 1).min(last)
                } else {
                    h.cursor.saturating_sub(1)
                };
            }
            return true;
        }
        if self.overlay != Overlay::None && !matches!(action, Action::Quit) && !keep_open {
            self.overlay = Overlay::None;
            return true;
        }
        false
    }

    /// What an action does on the main screen.
    fn act(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Quit => return vec![Effect::Quit],
            Action::Down => self.scroll(1),
            Action::Up => self.scroll(-1),
            Action::PageDown => self.scroll(self.list_height.max(1) as isize),
            Action::PageUp => self.scroll(-(self.list_height.max(1) as isize)),
            Action::Top => self.jump(0),
            Action::Bottom => self.jump(usize::MAX),
            Action::NextPane => self.cycle_focus(1),
            Action::PrevPane => self.cycle_focus(-1),
            Action::ColumnsRight => {
                if self.list_more_right {
                    self.list_hscroll += 1;
                }
            }
            Action::ColumnsLeft => self.list_hscroll = self.list_hscroll.saturating_sub(1),
            Action::NextEvaluator => self.pick_evaluator(1),
            Action::PrevEvaluator => self.pick_evaluator(-1),
            Action::Detail => self.detail = !self.detail,
            Action::Filter => self.filter_input = Some(self.filter_text.clone()),
            Action::Sort => self.cycle_sort(),
            Action::Rerun => {
                if !self.evaluators.is_empty() {
                    return vec![Effect::Rerun {
                        evaluator: Some(self.evaluator),
                    }];
                }
            }
            Action::RerunAll => return vec![Effect::Rerun { evaluator: None }],
            Action::Baseline => self.pin_baseline(),
            Action::ChangedOnly => {
                self.changed_only = !self.changed_only;
                self.refresh_view();
            }
            Action::Stats => {
                self.compute_groups();
                self.overlay = Overlay::Stats;
                self.overlay_scroll = 0;
            }
            Action::Help => {
                self.overlay = Overlay::Help;
                self.overlay_scroll = 0;
            }
            Action::Edit => return self.edit_target().into_iter().collect(),
            Action::Export => return vec![Effect::Export],
            Action::History => {
                if let Some(info) = self.evaluators.get(self.evaluator) {
                    return vec![Effect::History {
                        evaluator: info.name.clone(),
                    }];
                }
            }
            Action::Probes => {
                return self.open_report("Probes", "scoring the probes…", Effect::Probes)
            }
            Action::Check => return self.open_report("Contract check", "checking…", Effect::Check),
            Action::Serve
            | Action::Tunnel
            | Action::Deploy
            | Action::CompareRemote
            | Action::DropColumn
            | Action::CopyUrl => return self.ship_action(action),
            Action::Generate => return self.generate(),
            Action::LabelPass => return self.label_selected(Some(true)),
            Action::LabelFail => return self.label_selected(Some(false)),
            Action::LabelClear => return self.label_selected(None),
            Action::Back => self.back(),
        }
        Vec::new()
    }

    /// `s`: sorts by the selected evaluator, descending, then ascending; when it has a
    /// logged counterpart, then by its |Δ| against the log, largest first; with
    /// `[training]`, then by the advantage and by the reward, descending and
    /// ascending; then by its evaluation time, slowest first; then not.
    fn cycle_sort(&mut self) {
        let mut order = vec![(self.evaluator, true), (self.evaluator, false)];
        if self.logged_pair(self.evaluator).is_some() {
            order.push((logged_sort_index(self.evaluator), true));
        }
        if self.training.is_some() {
            for column in [SignalColumn::Advantage, SignalColumn::Reward] {
                order.push((column.sort_index(), true));
                order.push((column.sort_index(), false));
            }
        }
        // slowest first: the input that hangs the reward (SPEC §16)
        order.push((super::time_sort_index(self.evaluator), true));
        self.sort = match self
            .sort
            .and_then(|now| order.iter().position(|o| *o == now))
        {
            Some(at) => order.get(at + 1).copied(),
            None => order.first().copied(),
        };
        self.refresh_view();
    }

    /// Opens the report overlay with a placeholder until the report arrives.
    fn open_report(&mut self, title: &str, waiting: &str, effect: Effect) -> Vec<Effect> {
        self.report = Some((title.into(), vec![waiting.into()]));
        self.overlay = Overlay::Report;
        self.overlay_scroll = 0;
        vec![effect]
    }

    /// Serve, tunnel, deploy, remote comparison and copying the URL.
    fn ship_action(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Serve => vec![Effect::ToggleServe],
            Action::Tunnel => {
                self.overlay = Overlay::Ship;
                vec![Effect::ToggleTunnel]
            }
            Action::Deploy => {
                self.overlay = Overlay::Deploy(DeployForm {
                    id: self.ship.default_id.clone(),
                    display_name: String::new(),
                    force: false,
                    field: 0,
                    targets: Default::default(),
                });
                Vec::new()
            }
            Action::CompareRemote => {
                self.overlay = Overlay::Ship;
                vec![Effect::CompareRemote]
            }
            Action::CopyUrl => self.copy_url(),
            Action::DropColumn => match self.evaluators.get(self.evaluator) {
                Some(info) => vec![Effect::DropColumn {
                    name: info.name.clone(),
                }],
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// Copies the tunnel's URL (with its generated key) or the server's.
    fn copy_url(&mut self) -> Vec<Effect> {
        let url = self
            .ship
            .tunnel
            .clone()
            .or_else(|| self.ship.serving.clone());
        let Some(url) = url else {
            self.notice = Some("nothing to copy: start the server (S) or a tunnel (t)".into());
            return Vec::new();
        };
        match (&self.ship.tunnel, &self.ship.tunnel_key) {
            (Some(_), Some(TunnelKey::Generated(key))) => {
                self.notice = Some(format!("copied {url} and its key"));
                vec![Effect::Copy(format!("{url}\nX-Api-Key: {key}"))]
            }
            _ => {
                self.notice = Some(format!("copied {url}"));
                vec![Effect::Copy(url)]
            }
        }
    }

    /// Esc: leaves the detail view, else clears the filter, else goes back to the list.
    fn back(&mut self) {
        if self.detail {
            self.detail = false;
        } else if !self.filter_text.is_empty() {
            self.set_filter(String::new());
        } else {
            self.focus = Focus::List;
        }
    }

    pub(super) fn scroll(&mut self, by: isize) {
        match self.focus {
            Focus::List => {
                let target = (self.cursor as isize + by)
                    .clamp(0, self.view.len().saturating_sub(1) as isize);
                self.select_position(target as usize);
            }
            Focus::Conversation => {
                self.conversation_scroll =
                    (self.conversation_scroll as isize + by).clamp(0, u16::MAX as isize) as u16
            }
            Focus::Breakdown => {
                self.breakdown_scroll =
                    (self.breakdown_scroll as isize + by).clamp(0, u16::MAX as isize) as u16
            }
        }
    }

    pub(super) fn jump(&mut self, to: usize) {
        match self.focus {
            Focus::List => self.select_position(to.min(self.view.len().saturating_sub(1))),
            Focus::Conversation => {
                self.conversation_scroll = if to == 0 { 0 } else { u16::MAX / 2 }
            }
            Focus::Breakdown => self.breakdown_scroll = if to == 0 { 0 } else { u16::MAX / 2 },
        }
    }

    pub(super) fn select_position(&mut self, position: usize) {
        if position != self.cursor {
            self.conversation_scroll = 0;
            self.breakdown_scroll = 0;
        }
        self.cursor = position;
    }

    pub(super) fn cycle_focus(&mut self, by: i32) {
        let order = [Focus::List, Focus::Conversation, Focus::Breakdown];
        let at = order.iter().position(|f| *f == self.focus).unwrap_or(0) as i32;
        self.focus = order[((at + by).rem_euclid(3)) as usize];
    }

    pub(super) fn pick_evaluator(&mut self, by: i32) {
        let n = self.evaluators.len() as i32;
        if n > 0 {
            self.evaluator = ((self.evaluator as i32 + by).rem_euclid(n)) as usize;
            self.breakdown_scroll = 0;
        }
    }

    pub(super) fn edit_target(&mut self) -> Option<Effect> {
        let info = self.evaluators.get(self.evaluator)?;
        if let Some(p) = &info.placement {
            if let Some(notice) = crate::ui::placement::no_file_notice(&info.name, p) {
                self.notice = Some(notice);
                return None;
            }
        }
        let from_error = |e: &EvalError| {
            e.file.as_ref().map(|f| {
                let path = PathBuf::from(f);
                let path = if path.is_relative() {
                    self.root.join(path)
                } else {
                    path
                };
                (path, e.line)
            })
        };
        let target = self
            .selected_cell()
            .and_then(|c| c.error())
            .and_then(from_error)
            .or_else(|| info.import_error.as_ref().and_then(from_error))
            .unwrap_or((info.source.clone(), None));
        Some(Effect::Edit {
            file: target.0,
            line: target.1,
        })
    }
}
