//! `rwb tunnel`: serve, open a public tunnel, show its URL.

use super::{Fail, TunnelArgs};
use std::process::ExitCode;

pub(super) async fn tunnel(_args: TunnelArgs) -> Result<ExitCode, Fail> {
    Err(Fail::Usage("rwb tunnel is not built yet".into()))
}
