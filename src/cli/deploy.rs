//! `rwb deploy`: create (or replace) the evaluator on Fireworks.

use super::{DeployArgs, Fail};
use std::process::ExitCode;

pub(super) async fn deploy(_args: DeployArgs) -> Result<ExitCode, Fail> {
    Err(Fail::Usage("rwb deploy is not built yet".into()))
}
