//! The frame trace (`RWB_TRACE_FRAMES`) that the workbench benchmark reads.

use crate::ui::app::{App, SignalColumn};
use std::time::Duration;

/// With RWB_TRACE_FRAMES=FILE, appends one line per frame: the time, how many cells
/// are scored and not stale, the samples indexed, the draw time, resident memory,
/// the scored and not stale cells of the rows on screen out of theirs, and the first
/// row on screen, and (with `[training]`) a digest of the advantages the rows on
/// screen show (scripts/bench_workbench.py reads it).
pub(super) fn trace_frame(app: &App, took: Duration) {
    use std::io::Write;
    let Some(path) = std::env::var_os("RWB_TRACE_FRAMES") else {
        return;
    };
    let fresh = app.fresh;
    let end = (app.list_offset + app.list_height).min(app.view.len());
    let on_screen = app.view.get(app.list_offset.min(end)..end).unwrap_or(&[]);
    let cells = || on_screen.iter().flat_map(|&i| app.samples[i].cells.iter());
    let shown_fresh = cells().filter(|c| c.outcome.is_some() && !c.stale).count();
    let shown = cells().count();
    // FNV-1a over the advantages' bits: equal digests, equal columns
    let advantages = on_screen
        .iter()
        .map(|&i| app.signal_value(i, SignalColumn::Advantage));
    let adv = advantages.fold(0xcbf2_9ce4_8422_2325_u64, |h, a| {
        let bits = a.map_or(u64::MAX, f64::to_bits);
        (h ^ bits).wrapping_mul(0x0100_0000_01b3)
    });
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let rss_kb = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .unwrap_or(0);
        let _ = writeln!(
            f,
            "{now:.6} fresh={fresh} samples={} running={} draw_ms={:.3} rss_kb={rss_kb} shown={shown_fresh}/{shown} top={} adv={adv:016x}",
            app.samples.len(),
            app.running,
            took.as_secs_f64() * 1000.0,
            app.list_offset
        );
    }
}
