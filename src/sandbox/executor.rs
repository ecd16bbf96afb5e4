//! The sandbox's executor (SPEC §18): a fork server in Python, embedded with the
//! workers' code (`crate::engine::PYTHON_FILES`) and started by rwb in a box of its
//! own with no network:
//!
//! `rwb __contain '{"writable":[],"network":false}' -- python3 -X utf8 CODE/rwb_sandbox_server.py SLOTS`
//!
//! It prints `{"ready": true, "languages": [...], "slots": N, "isolation": {...}}`,
//! then reads one JSON request per line on stdin (SandboxFusion's `/run_code` request
//! with an `id`, and rwb's `nonce` and `output_cap`) and writes one JSON response per
//! line on stdout as runs end (SandboxFusion's response with the request's `id`). The
//! protocol is described at the top of the file itself.

use std::path::{Path, PathBuf};

/// The fork server's file, relative to the workers' code folder.
pub const SERVER_PY: &str = "rwb_sandbox_server.py";

/// The fork server's path in the code folder `code_dir` (where the embedded files
/// are written).
pub fn server_path(code_dir: &Path) -> PathBuf {
    code_dir.join(SERVER_PY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_one_of_the_embedded_files() {
        assert!(crate::engine::PYTHON_FILES
            .iter()
            .any(|(rel, text)| *rel == SERVER_PY && text.contains("def main(argv)")));
        assert_eq!(
            server_path(Path::new("/code")),
            PathBuf::from("/code/rwb_sandbox_server.py")
        );
    }
}
