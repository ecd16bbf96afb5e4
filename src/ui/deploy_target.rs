//! The deploy dialog's target choice (SPEC §12): Fireworks, Cloud Run or Kubernetes
//! (`←`/`→`), and the fields of the two container targets. Plain state and key
//! handling; the workbench runs the deploy the dialog asks for.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where the dialog deploys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Target {
    #[default]
    Fireworks,
    CloudRun,
    K8s,
    /// `rwb export nemo-gym` into a folder of the workspace (SPEC §21).
    NemoGym,
    /// `rwb export verifiers` into a folder of the workspace (SPEC §21).
    Verifiers,
}

impl Target {
    pub const ALL: [Target; 5] = [
        Target::Fireworks,
        Target::CloudRun,
        Target::K8s,
        Target::NemoGym,
        Target::Verifiers,
    ];

    /// A folder written for a trainer, not a service deployed: the id is the folder.
    pub fn is_export(self) -> bool {
        matches!(self, Target::NemoGym | Target::Verifiers)
    }

    pub fn label(self) -> &'static str {
        match self {
            Target::Fireworks => "Fireworks",
            Target::CloudRun => "Cloud Run",
            Target::K8s => "Kubernetes",
            Target::NemoGym => "NeMo Gym",
            Target::Verifiers => "verifiers",
        }
    }
}

/// The target and the fields Cloud Run and Kubernetes need (the id is the form's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetFields {
    pub target: Target,
    pub gcp_project: String,
    pub gcp_region: String,
    pub register: bool,
    pub namespace: String,
    pub image: String,
    pub apply: bool,
    /// Why Enter did not deploy (a missing field).
    pub problem: Option<String>,
}

impl Default for TargetFields {
    fn default() -> TargetFields {
        TargetFields {
            target: Target::Fireworks,
            gcp_project: String::new(),
            gcp_region: "us-central1".into(),
            register: false,
            namespace: "default".into(),
            image: String::new(),
            apply: false,
            problem: None,
        }
    }
}

/// A deploy to Cloud Run or Kubernetes, as the dialog asks for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetRequest {
    pub target: Target,
    pub id: String,
    pub gcp_project: String,
    pub gcp_region: String,
    pub register: bool,
    pub namespace: String,
    /// Kubernetes: an image built before; else rwb builds one with docker.
    pub image: Option<String>,
    pub apply: bool,
}

/// A row of the dialog after the id: label, value, whether it is a switch.
pub struct Row {
    pub label: &'static str,
    pub value: String,
    pub switch: bool,
}

impl TargetFields {
    /// The rows below the id for a container target (none for Fireworks).
    pub fn rows(&self) -> Vec<Row> {
        let text = |label, value: &String| Row {
            label,
            value: value.clone(),
            switch: false,
        };
        let switch = |label, on: bool| Row {
            label,
            value: if on { "[x]" } else { "[ ]" }.into(),
            switch: true,
        };
        match self.target {
            Target::Fireworks | Target::NemoGym | Target::Verifiers => Vec::new(),
            Target::CloudRun => vec![
                text("GCP project", &self.gcp_project),
                text("region", &self.gcp_region),
                switch("register on Fireworks", self.register),
            ],
            Target::K8s => vec![
                text("namespace", &self.namespace),
                text("image (empty: docker build)", &self.image),
                switch("kubectl apply", self.apply),
            ],
        }
    }

    /// The next (or previous) target.
    fn cycle(&mut self, forward: bool) {
        let at = Target::ALL
            .iter()
            .position(|t| *t == self.target)
            .unwrap_or(0);
        let n = Target::ALL.len();
        self.target = Target::ALL[if forward {
            (at + 1) % n
        } else {
            (at + n - 1) % n
        }];
        self.problem = None;
    }

    fn text_mut(&mut self, row: usize) -> Option<&mut String> {
        match (self.target, row) {
            (Target::CloudRun, 0) => Some(&mut self.gcp_project),
            (Target::CloudRun, 1) => Some(&mut self.gcp_region),
            (Target::K8s, 0) => Some(&mut self.namespace),
            (Target::K8s, 1) => Some(&mut self.image),
            _ => None,
        }
    }

    fn toggle(&mut self, row: usize) {
        match (self.target, row) {
            (Target::CloudRun, 2) => self.register = !self.register,
            (Target::K8s, 2) => self.apply = !self.apply,
            _ => {}
        }
    }

    /// The request for `id`, or what is missing.
    pub fn request(&self, id: &str) -> Result<TargetRequest, String> {
        let id = id.trim();
        if id.is_empty() && self.target.is_export() {
            return Err("give the folder to write".into());
        }
        if id.is_empty() {
            return Err("give an id".into());
        }
        if self.target == Target::CloudRun {
            if self.gcp_project.trim().is_empty() {
                return Err("give the GCP project".into());
            }
            if self.gcp_region.trim().is_empty() {
                return Err("give the region".into());
            }
        }
        let namespace = self.namespace.trim();
        Ok(TargetRequest {
            target: self.target,
            id: id.to_string(),
            gcp_project: self.gcp_project.trim().to_string(),
            gcp_region: self.gcp_region.trim().to_string(),
            register: self.register,
            namespace: if namespace.is_empty() {
                "default".into()
            } else {
                namespace.into()
            },
            image: Some(self.image.trim().to_string()).filter(|i| !i.is_empty()),
            apply: self.apply,
        })
    }
}

/// What a key in the deploy dialog does here: `None` leaves it to the Fireworks form;
/// `Some(Ok(request))` deploys; `Some(Err(true))` closes; `Some(Err(false))` stays.
/// `←`/`→` switch the target; for a container target this handles every key (`field`
/// 0 is the id, then the target's rows).
pub fn form_key(
    id: &mut String,
    field: &mut usize,
    fields: &mut TargetFields,
    key: KeyEvent,
) -> Option<Result<TargetRequest, bool>> {
    match key.code {
        KeyCode::Left | KeyCode::Right => {
            fields.cycle(key.code == KeyCode::Right);
            *field = 0;
            return Some(Err(false));
        }
        _ if fields.target == Target::Fireworks => return None,
        _ => {}
    }
    let count = 1 + fields.rows().len();
    match key.code {
        KeyCode::Esc => return Some(Err(true)),
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
            return Some(Err(true))
        }
        KeyCode::Enter => match fields.request(id) {
            Ok(request) => return Some(Ok(request)),
            Err(problem) => fields.problem = Some(problem),
        },
        KeyCode::Tab | KeyCode::Down => *field = (*field + 1) % count,
        KeyCode::BackTab | KeyCode::Up => *field = (*field + count - 1) % count,
        KeyCode::Char(' ') if *field > 0 && fields.text_mut(*field - 1).is_none() => {
            fields.toggle(*field - 1)
        }
        KeyCode::Backspace => {
            match *field {
                0 => id.pop(),
                row => fields.text_mut(row - 1).and_then(String::pop),
            };
        }
        KeyCode::Char(c) => match *field {
            0 => id.push(c),
            row => {
                if let Some(text) = fields.text_mut(row - 1) {
                    text.push(c);
                }
            }
        },
        _ => {}
    }
    Some(Err(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(
        id: &mut String,
        field: &mut usize,
        f: &mut TargetFields,
        code: KeyCode,
    ) -> Option<Result<TargetRequest, bool>> {
        form_key(id, field, f, KeyEvent::new(code, KeyModifiers::NONE))
    }

    #[test]
    fn arrows_cycle_the_targets_and_fireworks_keys_are_left_to_its_form() {
        let (mut id, mut field, mut f) = ("svc".to_string(), 2, TargetFields::default());
        assert_eq!(press(&mut id, &mut field, &mut f, KeyCode::Char('x')), None);
        assert_eq!(
            press(&mut id, &mut field, &mut f, KeyCode::Right),
            Some(Err(false))
        );
        assert_eq!((f.target, field), (Target::CloudRun, 0));
        press(&mut id, &mut field, &mut f, KeyCode::Right);
        assert_eq!(f.target, Target::K8s);
        press(&mut id, &mut field, &mut f, KeyCode::Right);
        assert_eq!(f.target, Target::NemoGym);
        press(&mut id, &mut field, &mut f, KeyCode::Right);
        assert_eq!(f.target, Target::Verifiers);
        press(&mut id, &mut field, &mut f, KeyCode::Right);
        assert_eq!(f.target, Target::Fireworks);
        press(&mut id, &mut field, &mut f, KeyCode::Left);
        assert_eq!(f.target, Target::Verifiers);
    }

    #[test]
    fn an_export_target_asks_only_for_its_folder() {
        let (mut id, mut field, mut f) = (String::new(), 0, TargetFields::default());
        for _ in 0..3 {
            press(&mut id, &mut field, &mut f, KeyCode::Right);
        }
        assert_eq!(f.target, Target::NemoGym);
        assert!(f.rows().is_empty());
        assert_eq!(
            press(&mut id, &mut field, &mut f, KeyCode::Enter),
            Some(Err(false))
        );
        assert_eq!(f.problem.as_deref(), Some("give the folder to write"));
        for c in "gym/exact".chars() {
            press(&mut id, &mut field, &mut f, KeyCode::Char(c));
        }
        let Some(Ok(request)) = press(&mut id, &mut field, &mut f, KeyCode::Enter) else {
            panic!("Enter exports");
        };
        assert_eq!(
            (request.target, request.id.as_str()),
            (Target::NemoGym, "gym/exact")
        );
    }
}
