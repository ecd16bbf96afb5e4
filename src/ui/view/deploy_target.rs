//! The deploy dialog's target line and the Cloud Run / Kubernetes form
//! (`ui/deploy_target.rs` holds their state).

use super::{popup, Ctx};
use crate::ui::app::DeployForm;
use crate::ui::deploy_target::Target;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::Frame;

/// `target  Fireworks  Cloud Run  Kubernetes  (←/→)`, the chosen one highlighted.
pub(super) fn target_line(chosen: Target, ctx: &Ctx) -> Line<'static> {
    let p = &ctx.theme.palette;
    let mut spans = vec![Span::styled(
        format!("{:>14}  ", "target"),
        Style::default().fg(p.muted),
    )];
    for target in Target::ALL {
        let style = if target == chosen {
            ctx.theme.selection_style().add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(p.fg)
        };
        spans.push(Span::styled(format!(" {} ", target.label()), style));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled("(←/→)", Style::default().fg(p.muted)));
    Line::from(spans)
}

/// The dialog for Cloud Run and Kubernetes: the id, then the target's rows.
pub(super) fn draw(frame: &mut Frame, form: &DeployForm, ctx: &Ctx, area: Rect) {
    let p = &ctx.theme.palette;
    let fields = &form.targets;
    let row = |i: usize, label: &str, value: &str, switch: bool| {
        let focused = form.field == i;
        let style = if focused {
            ctx.theme.selection_style().add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(p.fg)
        };
        let caret = if focused && !switch { "▏" } else { "" };
        Line::from(vec![
            Span::styled(format!("{label:>14}  "), Style::default().fg(p.muted)),
            Span::styled(format!(" {value}{caret} "), style),
        ])
    };
    let what = match fields.target {
        Target::CloudRun => {
            "Build this workspace into a container (rwb serve) and run it on Cloud Run."
        }
        Target::NemoGym => "Write a NeMo Gym resources-server folder (app.py starts rwb serve) into the workspace.",
        Target::Verifiers => "Write an installable verifiers taskset package (pip install -e FOLDER) into the workspace.",
        _ => "Write deploy/k8s/ID.yaml (Deployment, Service, autoscaler) for this workspace.",
    };
    let id_label = if fields.target.is_export() {
        "folder"
    } else {
        "service id"
    };
    let mut lines = vec![
        Line::raw(what),
        Line::raw(""),
        target_line(fields.target, ctx),
        row(0, id_label, &form.id, false),
    ];
    for (i, r) in fields.rows().iter().enumerate() {
        lines.push(row(i + 1, r.label, &r.value, r.switch));
    }
    lines.push(Line::raw(""));
    if let Some(problem) = &fields.problem {
        lines.push(Line::styled(problem.clone(), Style::default().fg(p.error)));
    }
    lines.push(Line::styled(
        "Enter deploys · Tab next field · Space toggles · ←/→ target · Esc cancels",
        Style::default().fg(p.muted),
    ));
    let title = if fields.target.is_export() {
        format!(" Export for {} ", fields.target.label())
    } else {
        format!(" Deploy to {} ", fields.target.label())
    };
    popup(frame, ctx, area, &title, lines, 86);
}
