//! `rwb serve`: serve until Ctrl-C, then finish the requests in flight (for up to
//! a few seconds: a stalled client cannot keep the server up).

use super::{Fail, ServeArgs, Session};
use crate::ship::serve::Options;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

pub(super) async fn serve(args: ServeArgs) -> Result<ExitCode, Fail> {
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let session = Session::open(dir, &args.shared.open_options())?;
    let host = args.host.clone().unwrap_or_else(|| "127.0.0.1".into());
    let port = args
        .port
        .unwrap_or_else(|| crate::ship::serve::configured_port(&session.workspace));
    let mut options = Options::new(&host, port);
    options.notes = Some(Arc::new(|note: String| eprintln!("rwb: {note}")));
    let server = crate::ship::serve::start(&session, options)
        .await
        .map_err(Fail::Usage)?;
    eprintln!("rwb: serving on {} (Ctrl-C stops)", server.url());
    let _ = tokio::signal::ctrl_c().await;
    server.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
