//! Standard output that keeps the first write that fails.

use std::io::Write;

/// Standard output (or a test's file) that keeps the first error a write meets (a
/// closed pipe, a full disk) and takes nothing after it: every write site stays
/// simple, and the run stops and says why once ([`super::Printer::unwritten`]).
pub(super) struct Latched {
    pub(super) inner: Box<dyn Write + Send>,
    pub(super) failed: Option<std::io::Error>,
}

impl Latched {
    /// Keeps `e` (one to retry goes back to the caller); what comes after is taken
    /// and dropped.
    fn fail(&mut self, e: std::io::Error) -> std::io::Result<()> {
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Err(e);
        }
        self.failed = Some(e);
        Ok(())
    }
}

impl Write for Latched {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.failed.is_some() {
            return Ok(buf.len());
        }
        self.inner
            .write(buf)
            .or_else(|e| self.fail(e).map(|()| buf.len()))
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        self.inner.write_all(buf).or_else(|e| self.fail(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        self.inner.flush().or_else(|e| self.fail(e))
    }
}
