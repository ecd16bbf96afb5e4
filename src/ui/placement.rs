//! Where each evaluator runs, as the status line shows it beside its state: `local ×2`,
//! `remote judge.example.com`, `fireworks ID`, `ray (3 nodes)` (SPEC §11).

use crate::model::Placement;

/// The status line's words for where an evaluator runs, given about `width` columns
/// for it: the whole label when it fits, else the URL cut to its host. `None` when
/// the workbench was not told.
pub fn where_label(placement: Option<&Placement>, width: usize) -> Option<String> {
    placement.map(|p| p.status(width))
}

/// Columns each evaluator's placement may take on a status line `width` wide shared
/// by `evaluators` evaluators (about 40 stay for the key hints and ship state).
pub fn width_each(width: u16, evaluators: usize) -> usize {
    (width as usize).saturating_sub(40) / evaluators.max(1)
}

/// What `e` says instead of opening an editor when the evaluator has no file here.
pub fn no_file_notice(name: &str, placement: &Placement) -> Option<String> {
    let at = match placement {
        Placement::Remote { url } => url.clone(),
        Placement::Fireworks { id } => format!("Fireworks (evaluator {id})"),
        _ => return None,
    };
    Some(format!(
        "{name} runs at {at}: there is no file to edit here (edit it where it is deployed)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_fits_its_share_of_the_status_line() {
        let remote = Placement::Remote {
            url: "https://judge.example.com/evaluate".into(),
        };
        assert_eq!(
            where_label(Some(&remote), width_each(200, 2)).as_deref(),
            Some("remote https://judge.example.com/evaluate")
        );
        assert_eq!(
            where_label(Some(&remote), width_each(80, 2)).as_deref(),
            Some("remote judge.example.com")
        );
        assert_eq!(where_label(None, 80), None);
        let local = Placement::Local {
            workers: 2,
            concurrency: 1,
            contained: None,
        };
        assert_eq!(no_file_notice("length", &local), None);
        assert_eq!(
            no_file_notice("prod", &remote).as_deref(),
            Some("prod runs at https://judge.example.com/evaluate: there is no file to edit here (edit it where it is deployed)")
        );
    }
}
